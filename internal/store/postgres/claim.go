package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// The two lanes of the due loader. Each condition repeats the WHERE clause
// of its partial index in 0001_init.sql (deliveries_fresh, deliveries_retry)
// so the planner can use it; a delivery is available when it holds no lease
// or its lease expired before now. Leased deliveries stay in the lane
// indexes (so that leasing and releasing change no index) and are skipped by
// a filter on lease_until: there are few of them, the nodes' in-memory windows.
const (
	freshLane = `d.status = 'pending' AND d.attempts = 0`
	retryLane = `d.status = 'pending' AND d.attempts > 0`

	// keyHead (now is $2) holds for an unordered delivery d, and for a
	// keyed one (ordering_key set) that is its key's head: no pending
	// delivery of its subscription and key has an earlier event (a smaller
	// event_seq: publish order, one sequence for every node)
	// (deliveries_ordering: one seek to the key's first entry), and no
	// other one holds a lease still running at now (deliveries_ordering_leased:
	// one seek), so a key has at most one delivery out at a time, on every
	// node, whatever redelivers an older one or commits out of seq order
	// (docs/ordering.md), once a claim's re-check under its keys' locks
	// (keepKeyHeads, keylock.go) has judged it again on a snapshot that
	// sees every other claim of the key. Only one delivery of a key passes it in one
	// statement: a claim, and so a batch, takes at most one per key. A
	// claim's snapshot that still sees the previous head pending leaves
	// the next one for a later claim, never two.
	keyHead = `(d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM deliveries AS h
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM deliveries AS l
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.status = 'pending' AND l.ordering_key IS NOT NULL AND l.lease_until > 0
			AND l.lease_until >= $2 AND l.id <> d.id)))`

	// claimSQL: each lane's candidates in due order, locked with FOR UPDATE
	// SKIP LOCKED so that concurrent claimers (any node) skip each other's
	// rows instead of waiting or sharing them. The CTEs are evaluated lazily
	// under the LIMIT of pick: the retry lane is read (and its rows locked)
	// only for what the fresh lane leaves of the limit. A row whose lease
	// another claimer took in the meantime fails the re-check of the WHERE
	// clause after locking and is left out.
	claimSQL = `WITH fresh AS (
	SELECT d.id FROM deliveries AS d
	WHERE d.endpoint_id = $1 AND ` + freshLane + ` AND d.next_attempt_at <= $2 AND (d.lease_until = 0 OR d.lease_until < $2)
		AND ` + keyHead + `
	ORDER BY d.next_attempt_at, d.id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), retry AS (
	SELECT d.id FROM deliveries AS d
	WHERE d.endpoint_id = $1 AND ` + retryLane + ` AND d.next_attempt_at <= $2 AND (d.lease_until = 0 OR d.lease_until < $2)
		AND ` + keyHead + `
	ORDER BY d.next_attempt_at, d.id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), pick AS (
	(SELECT id FROM fresh) UNION ALL (SELECT id FROM retry) LIMIT $3
)
UPDATE deliveries AS d SET lease_owner = $4, lease_until = $5
FROM pick, events AS e
WHERE d.id = pick.id AND e.seq = d.event_seq
RETURNING ` + deliveryCols + `, e.payload, COALESCE(e.trace_context, '')`

	// deadLettersSQL reads the dead-lettered deliveries of the deliveries
	// of dead letters ClaimDue claimed (Claimed.DeadLetter), by key.
	deadLettersSQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = ANY($1)`

	// releaseSQL clears the leases owner still holds; it is a HOT update (no
	// index changes).
	releaseSQL = `UPDATE deliveries SET lease_owner = '', lease_until = 0
WHERE id = ANY($1) AND lease_owner = $2 AND lease_until <> 0`

	// extendSQL moves the lease of deliveries the owner still holds.
	extendSQL = `UPDATE deliveries SET lease_until = $3
WHERE id = ANY($1) AND status = 'pending' AND lease_owner = $2 AND lease_until <> 0
RETURNING id`

	// nextDueSQL: the first available entry of each lane: an index range
	// scan from the endpoint's earliest entry that stops at the first one
	// not leased and passing keyHead, so a key's waiting deliveries, due
	// but not claimable, never make the loader look again before their
	// head ends.
	nextDueSQL = `SELECT LEAST(
	(SELECT d.next_attempt_at FROM deliveries AS d
		WHERE d.endpoint_id = $1 AND ` + freshLane + ` AND (d.lease_until = 0 OR d.lease_until < $2) AND ` + keyHead + `
		ORDER BY d.next_attempt_at LIMIT 1),
	(SELECT d.next_attempt_at FROM deliveries AS d
		WHERE d.endpoint_id = $1 AND ` + retryLane + ` AND (d.lease_until = 0 OR d.lease_until < $2) AND ` + keyHead + `
		ORDER BY d.next_attempt_at LIMIT 1))`

	// dueEndpointsSQL walks each lane's index from one endpoint to the next
	// (a skip scan written as a recursive CTE: one seek per endpoint,
	// however many deliveries each has), then takes each endpoint's earliest
	// available entry as in nextDueSQL. An endpoint whose pending
	// deliveries are all leased is left out.
	dueEndpointsSQL = `WITH RECURSIVE
fresh(ep) AS (
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d WHERE ` + freshLane + `)
	UNION ALL
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d WHERE ` + freshLane + ` AND d.endpoint_id > fresh.ep)
	FROM fresh WHERE fresh.ep IS NOT NULL
),
retry(ep) AS (
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d WHERE ` + retryLane + `)
	UNION ALL
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d WHERE ` + retryLane + ` AND d.endpoint_id > retry.ep)
	FROM retry WHERE retry.ep IS NOT NULL
),
eps(ep) AS (
	SELECT ep FROM fresh WHERE ep IS NOT NULL
	UNION
	SELECT ep FROM retry WHERE ep IS NOT NULL
)
SELECT ep, at FROM (
	SELECT eps.ep, LEAST(
		(SELECT d.next_attempt_at FROM deliveries AS d
			WHERE d.endpoint_id = eps.ep AND ` + freshLane + ` AND (d.lease_until = 0 OR d.lease_until < $1)
			ORDER BY d.next_attempt_at LIMIT 1),
		(SELECT d.next_attempt_at FROM deliveries AS d
			WHERE d.endpoint_id = eps.ep AND ` + retryLane + ` AND (d.lease_until = 0 OR d.lease_until < $1)
			ORDER BY d.next_attempt_at LIMIT 1)) AS at
	FROM eps
) AS x WHERE at IS NOT NULL ORDER BY ep`

	// countPendingSQL counts each lane's partial index (leased or not).
	countPendingSQL = `SELECT
	(SELECT COUNT(*) FROM deliveries AS d WHERE ` + freshLane + `),
	(SELECT COUNT(*) FROM deliveries AS d WHERE ` + retryLane + `)`

	// countBacklogSQL counts each lane's partial index and the queued
	// deliveries' (deliveries_queued) up to $1 entries each. Each count
	// reads its rows in its index's order, so that under indexSeeksOnly
	// the one plan left is that index's scan, which stops after $1 entries
	// (TestBacklogPlans).
	countBacklogSQL = `SELECT
	(SELECT COUNT(*) FROM (SELECT FROM deliveries AS d WHERE ` + freshLane + `
		ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT $1) AS f),
	(SELECT COUNT(*) FROM (SELECT FROM deliveries AS d WHERE ` + retryLane + `
		ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT $1) AS r),
	(SELECT COUNT(*) FROM (SELECT FROM deliveries AS d WHERE ` + queuedRows + `
		ORDER BY d.subscription_id, d.next_attempt_at, d.id LIMIT $1) AS q)`
)

// ClaimDue implements store.DeliveryStore in one statement (its own
// transaction): it leases to lease up to limit pending deliveries of the
// endpoint that are due at now and hold no lease, or hold one that expired
// before now (lease_until < now: the holder is presumed dead, or too late),
// fresh ones first, then retries, each in next_attempt_at order (then ID).
// Concurrent claimers, on this node or others, never get the same delivery:
// candidates are locked with FOR UPDATE SKIP LOCKED. When it leased keyed
// deliveries, it takes their keys' locks and re-checks them in its
// transaction (keepKeyHeads, keylock.go: one round trip more), so that no
// two deliveries of a key are ever leased at once. A limit of zero or less
// claims nothing. When it claims deliveries of dead letters, a second
// statement in its transaction reads their dead-lettered deliveries by key
// (deadLettersSQL) for Claimed.DeadLetter (nil if one is gone).
func (s *backend) ClaimDue(ctx context.Context, endpointID string, now time.Time, limit int, lease store.Lease) ([]store.Claimed, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	var out []store.Claimed
	err := s.retrying(ctx, func() error {
		return s.tx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, claimSQL, endpointID, sqlrow.UnixMS(now), limit, lease.Owner, sqlrow.LeaseUntilMS(lease))
			if err != nil {
				return err
			}
			out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Claimed, error) {
				var c store.Claimed
				d, err := scanDelivery(r, &c.Payload, &c.TraceContext)
				c.Delivery = d
				return c, err
			})
			if err != nil {
				return err
			}
			if out, err = s.keepKeyHeads(ctx, tx, out, now, lease); err != nil {
				return err
			}
			var of []string
			for _, c := range out {
				if c.DeadLetterOf != "" {
					of = append(of, c.DeadLetterOf)
				}
			}
			if len(of) == 0 {
				return nil
			}
			rows, err = tx.Query(ctx, deadLettersSQL, of)
			if err != nil {
				return err
			}
			dead, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (delivery.Delivery, error) { return scanDelivery(r) })
			if err != nil {
				return err
			}
			for i := range out {
				for j := range dead {
					if dead[j].ID == out[i].DeadLetterOf {
						out[i].DeadLetter = &dead[j]
						break
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("claim due: %w", s.err(err))
	}
	// UPDATE ... RETURNING has no order: put them in claim order.
	slices.SortFunc(out, func(a, b store.Claimed) int {
		return cmp.Or(
			cmp.Compare(min(a.Attempts, 1), min(b.Attempts, 1)),
			a.NextAttemptAt.Compare(b.NextAttemptAt),
			cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// retrying runs fn again after a deadlock or serialization failure.
func (s *backend) retrying(ctx context.Context, fn func() error) error {
	for try := 0; ; try++ {
		err := fn()
		if err == nil || try >= maxRetries || !retryable(err) || ctx.Err() != nil {
			return err
		}
		s.retried.Add(1)
		backoff(try)
	}
}

// Release implements store.DeliveryStore in one statement: it clears the
// lease of each of deliveryIDs that owner still holds, expired or not.
// Unknown IDs, deliveries that hold no lease and deliveries whose lease
// expired and was taken over by another node (which keeps it) are left
// alone.
func (s *backend) Release(ctx context.Context, deliveryIDs []string, owner string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(deliveryIDs) == 0 {
		return nil
	}
	err := s.retrying(ctx, func() error {
		_, err := s.exec(ctx, releaseSQL, deliveryIDs, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("release: %w", s.err(err))
	}
	return nil
}

// ExtendLeases implements store.DeliveryStore in one statement: it moves to
// lease.Until the lease of each of deliveryIDs that is still pending and
// leased to lease.Owner (expired or not, as long as no other node took it
// over), and returns the IDs it extended, each once, in no particular
// order. A node holding deliveries longer than its lease (queued behind a
// slow endpoint) calls it periodically with the IDs it holds and drops,
// without attempting them, those missing from the answer: another node has
// them, or they were dropped, redelivered or finished meanwhile.
func (s *backend) ExtendLeases(ctx context.Context, deliveryIDs []string, lease store.Lease) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if len(deliveryIDs) == 0 {
		return nil, nil
	}
	var kept []string
	err := s.retrying(ctx, func() error {
		var err error
		kept, err = queryAll(ctx, s, func(sc scanner) (string, error) {
			var id string
			err := sc.Scan(&id)
			return id, err
		}, extendSQL, deliveryIDs, lease.Owner, sqlrow.LeaseUntilMS(lease))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	return kept, nil
}

// NextDue implements store.DeliveryStore with one index range scan per lane.
// Deliveries whose lease expired by Options.Clock count as due (at their
// next_attempt_at); unexpired leases do not.
func (s *backend) NextDue(ctx context.Context, endpointID string) (time.Time, bool, error) {
	if err := s.checkOpen(); err != nil {
		return time.Time{}, false, err
	}
	at, err := queryRow(ctx, s, func(sc scanner) (at *int64, err error) {
		err = sc.Scan(&at)
		return
	}, nextDueSQL, endpointID, sqlrow.UnixMS(s.clock.Now()))
	if err != nil {
		return time.Time{}, false, s.err(err)
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return sqlrow.FromUnixMS(*at), true, nil
}

// DueEndpoints implements store.DeliveryStore, in endpoint ID order. It
// costs a few index seeks per endpoint that has pending deliveries,
// independent of how many deliveries each has. Leases are judged as in
// NextDue.
func (s *backend) DueEndpoints(ctx context.Context) ([]store.EndpointDue, error) {
	return queryAll(ctx, s, func(sc scanner) (store.EndpointDue, error) {
		var e store.EndpointDue
		var at int64
		err := sc.Scan(&e.EndpointID, &at)
		e.NextDue = sqlrow.FromUnixMS(at)
		return e, err
	}, dueEndpointsSQL, sqlrow.UnixMS(s.clock.Now()))
}

// CountPending implements store.DeliveryStore: pending deliveries, leased or
// not, by lane (fresh: no attempt yet; retry: at least one). It counts the
// lane indexes' entries, so it takes time proportional to the backlog.
func (s *backend) CountPending(ctx context.Context) (fresh, retry int64, err error) {
	if err := s.checkOpen(); err != nil {
		return 0, 0, err
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, countPendingSQL).Scan(&fresh, &retry)
	})
	if err != nil {
		return 0, 0, s.err(err)
	}
	return fresh, retry, nil
}

// indexSeeksOnly, run at the start of a transaction, makes its queries
// planned without table scans, bitmap scans or sorts, whatever the
// planner's statistics say (stale ones, on a cluster without autovacuum,
// estimate a few rows and prefer a bitmap scan and a sort of all of
// them): a query that orders its rows as an index does is then that
// index's scan, and its LIMIT ends the scan.
const indexSeeksOnly = `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off`

// CountBacklog implements store.DeliveryStore: it reads at most limit
// entries of each of the three partial indexes (deliveries_fresh,
// deliveries_retry, deliveries_queued), one statement in a transaction
// begun with indexSeeksOnly (no extra round trip).
func (s *backend) CountBacklog(ctx context.Context, limit int64) (store.Backlog, error) {
	var b store.Backlog
	err := s.readTx(ctx, s.seekOpts, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, countBacklogSQL, max(limit, 0)).Scan(&b.Fresh, &b.Retry, &b.Queued)
	})
	if err != nil {
		return store.Backlog{}, fmt.Errorf("count backlog: %w", err)
	}
	return b, nil
}
