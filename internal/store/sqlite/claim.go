package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// The two lanes of the due loader. Each condition repeats the WHERE clause of
// its partial index in 0001_init.sql word for word: SQLite uses a partial
// index only when the query implies its condition, and INDEXED BY makes a
// query that stops doing so fail instead of silently scanning the table.
const (
	freshLane = `d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0`
	retryLane = `d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0`

	// keyHead holds for an unordered delivery d, and for a keyed one
	// (ordering_key set) that is its key's head: no pending delivery of
	// its subscription and key has an earlier event (a smaller event_seq:
	// publish order, as the single writer commits) (deliveries_ordering: one
	// seek to the key's first entry), and none holds a lease
	// (deliveries_ordering_leased: one seek), so a key has at most one
	// delivery out at a time, whatever redelivers an older one or commits
	// out of seq order (docs/ordering.md). Only one delivery of a key passes
	// it in one query: a claim, and so a batch, takes at most one per key.
	keyHead = `(d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM deliveries AS h INDEXED BY deliveries_ordering
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM deliveries AS l INDEXED BY deliveries_ordering_leased
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.lease_until > 0 AND l.ordering_key IS NOT NULL)))`

	// The claims walk a lane in due order past the keyed deliveries that
	// wait behind their key's head (keyHead): a claim reads, beyond what
	// it takes, the waiting deliveries due before its last one.
	claimFreshSQL = `SELECT ` + deliveryCols + `, e.payload, COALESCE(e.trace_context, '')
FROM deliveries AS d INDEXED BY deliveries_fresh CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.endpoint_id = ? AND ` + freshLane + ` AND d.next_attempt_at <= ? AND ` + keyHead + `
ORDER BY d.next_attempt_at LIMIT ?`

	claimRetrySQL = `SELECT ` + deliveryCols + `, e.payload, COALESCE(e.trace_context, '')
FROM deliveries AS d INDEXED BY deliveries_retry CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.endpoint_id = ? AND ` + retryLane + ` AND d.next_attempt_at <= ? AND ` + keyHead + `
ORDER BY d.next_attempt_at LIMIT ?`

	leaseSQL = `UPDATE deliveries SET lease_owner = ?, lease_until = ? WHERE id = ?`

	// releaseSQL clears a lease only while owner holds it.
	releaseSQL = `UPDATE deliveries SET lease_owner = '', lease_until = 0
WHERE id = ? AND lease_owner = ? AND lease_until <> 0`

	// extendSQL moves the lease of a pending delivery the owner holds.
	extendSQL = `UPDATE deliveries SET lease_until = ?
WHERE id = ? AND status = 'pending' AND lease_owner = ? AND lease_until <> 0`

	// nextDueSQL: the first claimable entry of each lane, a walk on
	// (endpoint_id, next_attempt_at) that stops at the first delivery
	// passing keyHead (the first entry when no key waits), so a key's
	// waiting deliveries, due but not claimable, never make the loader
	// look again before their head ends.
	nextDueSQL = `SELECT MIN(at) FROM (
SELECT * FROM (SELECT d.next_attempt_at AS at FROM deliveries AS d INDEXED BY deliveries_fresh
	WHERE d.endpoint_id = ?1 AND ` + freshLane + ` AND ` + keyHead + ` ORDER BY d.next_attempt_at LIMIT 1)
UNION ALL
SELECT * FROM (SELECT d.next_attempt_at FROM deliveries AS d INDEXED BY deliveries_retry
	WHERE d.endpoint_id = ?1 AND ` + retryLane + ` AND ` + keyHead + ` ORDER BY d.next_attempt_at LIMIT 1))`

	// dueEndpointsSQL walks each lane's index from one endpoint to the next
	// (a skip scan: one seek per endpoint, however many deliveries each has)
	// and takes each endpoint's first, hence earliest, entry.
	dueEndpointsSQL = `WITH RECURSIVE
fresh(ep) AS (
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_fresh WHERE ` + freshLane + `)
	UNION ALL
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_fresh
		WHERE ` + freshLane + ` AND d.endpoint_id > fresh.ep)
	FROM fresh WHERE fresh.ep IS NOT NULL
),
retry(ep) AS (
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_retry WHERE ` + retryLane + `)
	UNION ALL
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_retry
		WHERE ` + retryLane + ` AND d.endpoint_id > retry.ep)
	FROM retry WHERE retry.ep IS NOT NULL
)
SELECT ep, MIN(at) FROM (
	SELECT fresh.ep AS ep, (SELECT MIN(d.next_attempt_at) FROM deliveries AS d INDEXED BY deliveries_fresh
		WHERE d.endpoint_id = fresh.ep AND ` + freshLane + `) AS at
	FROM fresh WHERE fresh.ep IS NOT NULL
	UNION ALL
	SELECT retry.ep, (SELECT MIN(d.next_attempt_at) FROM deliveries AS d INDEXED BY deliveries_retry
		WHERE d.endpoint_id = retry.ep AND ` + retryLane + `)
	FROM retry WHERE retry.ep IS NOT NULL
) GROUP BY ep ORDER BY ep`

	// countPendingSQL counts each lane's unleased deliveries in its partial
	// index and adds the leased ones (few) from deliveries_leased.
	countPendingSQL = `SELECT
	(SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_fresh WHERE ` + freshLane + `)
	+ (SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_leased
		WHERE d.status = 'pending' AND d.attempts = 0 AND d.lease_until > 0),
	(SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_retry WHERE ` + retryLane + `)
	+ (SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_leased
		WHERE d.status = 'pending' AND d.attempts > 0 AND d.lease_until > 0)`

	// countBacklogSQL counts what countPendingSQL and CountQueued count,
	// up to ?1 entries each: each count reads its partial indexes (a
	// lane's unleased entries, then its leased ones) through a compound
	// SELECT whose LIMIT ends the scan at ?1 rows.
	countBacklogSQL = `SELECT
	(SELECT COUNT(*) FROM (
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_fresh WHERE ` + freshLane + `
		UNION ALL
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_leased WHERE d.status = 'pending' AND d.attempts = 0 AND d.lease_until > 0
		LIMIT ?1)),
	(SELECT COUNT(*) FROM (
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_retry WHERE ` + retryLane + `
		UNION ALL
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_leased WHERE d.status = 'pending' AND d.attempts > 0 AND d.lease_until > 0
		LIMIT ?1)),
	(SELECT COUNT(*) FROM (` + countQueuedRows + ` LIMIT ?1))`
)

// ClaimDue implements store.DeliveryStore. It runs on the writer (it writes
// leases) and costs one index range scan per lane plus one update per
// claimed delivery, and one read by primary key (getDeliverySQL) per
// delivery of a dead letter, for its Claimed.DeadLetter (nil if the
// dead-lettered delivery is gone). A limit of zero or less claims nothing.
// See the package documentation for how long a lease lasts in this store.
func (s *backend) ClaimDue(ctx context.Context, endpointID string, now time.Time, limit int, lease store.Lease) ([]store.Claimed, error) {
	if limit <= 0 {
		if s.closed.Load() {
			return nil, store.ErrClosed
		}
		return nil, nil
	}
	until := sqlrow.LeaseUntilMS(lease)
	at := sqlrow.UnixMS(now)
	var out []store.Claimed
	err := s.write(ctx, func(w *writer) error {
		out = out[:0]
		for _, q := range []string{claimFreshSQL, claimRetrySQL} {
			if len(out) >= limit {
				break
			}
			rows, err := w.query(q, endpointID, at, limit-len(out))
			if err != nil {
				return fmt.Errorf("claim due: %w", err)
			}
			for rows.Next() {
				var c store.Claimed
				d, err := scanDelivery(rows, &c.Payload, &c.TraceContext)
				if err != nil {
					rows.Close()
					return fmt.Errorf("claim due: %w", err)
				}
				c.Delivery = d
				out = append(out, c)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("claim due: %w", err)
			}
		}
		for i, c := range out {
			if _, err := w.exec(leaseSQL, lease.Owner, until, c.ID); err != nil {
				return fmt.Errorf("lease %s: %w", c.ID, err)
			}
			if c.DeadLetterOf == "" {
				continue
			}
			switch d, err := scanDelivery(w.row(getDeliverySQL, c.DeadLetterOf)); {
			case err == nil:
				out[i].DeadLetter = &d
			case !isNoRows(err):
				return fmt.Errorf("claim due: dead letter %s of %s: %w", c.DeadLetterOf, c.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Release implements store.DeliveryStore: it clears the lease of each of
// deliveryIDs that owner still holds. Unknown IDs, deliveries that hold no
// lease and deliveries leased to another owner are left alone.
func (s *backend) Release(ctx context.Context, deliveryIDs []string, owner string) error {
	if len(deliveryIDs) == 0 {
		if s.closed.Load() {
			return store.ErrClosed
		}
		return nil
	}
	return s.write(ctx, func(w *writer) error {
		for _, id := range deliveryIDs {
			if _, err := w.exec(releaseSQL, id, owner); err != nil {
				return fmt.Errorf("release %s: %w", id, err)
			}
		}
		return nil
	})
}

// ExtendLeases implements store.DeliveryStore. A lease in this store never
// expires (see the package documentation), so only ownership matters: the
// answer holds the IDs (each once, in input order) of the deliveries still
// pending and leased to lease.Owner, whose lease_until becomes lease.Until;
// the others (unknown, finished, released, redelivered, leased to another
// owner) are left out and unchanged.
func (s *backend) ExtendLeases(ctx context.Context, deliveryIDs []string, lease store.Lease) ([]string, error) {
	if len(deliveryIDs) == 0 {
		if s.closed.Load() {
			return nil, store.ErrClosed
		}
		return nil, nil
	}
	until := sqlrow.LeaseUntilMS(lease)
	var kept []string
	err := s.write(ctx, func(w *writer) error {
		kept = kept[:0]
		seen := make(map[string]bool, len(deliveryIDs))
		for _, id := range deliveryIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			n, err := w.execN(extendSQL, until, id, lease.Owner)
			if err != nil {
				return fmt.Errorf("extend lease %s: %w", id, err)
			}
			if n > 0 {
				kept = append(kept, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return kept, nil
}

// NextDue implements store.DeliveryStore with two index seeks.
func (s *backend) NextDue(ctx context.Context, endpointID string) (time.Time, bool, error) {
	var at sql.NullInt64
	if err := s.readRow(ctx, nextDueSQL, endpointID).Scan(&at); err != nil {
		return time.Time{}, false, s.readErr(err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return sqlrow.FromUnixMS(at.Int64), true, nil
}

// DueEndpoints implements store.DeliveryStore, in endpoint ID order. It
// costs a few index seeks per endpoint that has pending unleased deliveries,
// independent of how many deliveries each has.
func (s *backend) DueEndpoints(ctx context.Context) ([]store.EndpointDue, error) {
	rows, err := s.readQuery(ctx, dueEndpointsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.EndpointDue
	for rows.Next() {
		var e store.EndpointDue
		var at int64
		if err := rows.Scan(&e.EndpointID, &at); err != nil {
			return nil, s.readErr(err)
		}
		e.NextDue = sqlrow.FromUnixMS(at)
		out = append(out, e)
	}
	return out, s.readErr(rows.Err())
}

// CountPending implements store.DeliveryStore: pending deliveries, leased or
// not, by lane (fresh: no attempt yet; retry: at least one). It counts index
// entries, so it takes time proportional to the backlog.
func (s *backend) CountPending(ctx context.Context) (fresh, retry int64, err error) {
	if err := s.readRow(ctx, countPendingSQL).Scan(&fresh, &retry); err != nil {
		return 0, 0, s.readErr(err)
	}
	return fresh, retry, nil
}

// CountBacklog implements store.DeliveryStore: it reads at most limit
// entries of each lane's partial indexes and of deliveries_queued.
func (s *backend) CountBacklog(ctx context.Context, limit int64) (store.Backlog, error) {
	var b store.Backlog
	if err := s.readRow(ctx, countBacklogSQL, max(limit, 0)).Scan(&b.Fresh, &b.Retry, &b.Queued); err != nil {
		return store.Backlog{}, s.readErr(err)
	}
	return b, nil
}
