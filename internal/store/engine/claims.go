package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Claims and leases of the due loader (store.DeliveryStore: ClaimDue,
// DueEndpoints, NextDue, Release, ExtendLeases) and the counts of the
// backlog (CountPending, CountBacklog).
//
// A pending delivery is in one of two lanes, each with its partial index
// by (endpoint_id, next_attempt_at): fresh (deliveries_fresh: no attempt
// yet) and retry (deliveries_retry: at least one). A claim takes fresh
// deliveries first, then retries, each lane in next_attempt_at order
// (SQLite's lanes hold the deliveries not leased, deliveries_leased the
// others; PostgreSQL's hold both, the leased skipped by a filter). The
// index names here are SQLite's: PostgreSQL keeps the indexes of the
// deliveries' states on open_deliveries (open_deliveries_fresh and so
// on), a narrow row for each delivery not delivered that triggers keep,
// so that no update of a delivery changes an indexed column of its row
// (0021_open_deliveries.sql; docs/architecture.md).
//
// A delivery with an ordering key is claimable only as its key's head
// (keyHead in the drivers' statements; docs/ordering.md): no pending
// delivery of its subscription and key has an earlier event (a smaller
// event_seq: publish order) (deliveries_ordering: one seek to the key's
// first entry), and none holds a lease (deliveries_ordering_leased: one
// seek), so a key has at most one delivery out at a time, whatever
// redelivers an older one or commits out of seq order. Only one delivery
// of a key passes it in one statement: a claim, and so a batch, takes at
// most one per key.
//
// Leases: on a store whose leases expire (Capabilities.LeasesExpire), a
// delivery whose lease ended before now is claimable again (its holder is
// presumed dead, or too late), and DueEndpoints and NextDue judge leases
// at Options.Clock's now; elsewhere a lease lasts until released, Record
// or Redeliver ends it, and no statement reads a time for it. On a shared
// store (Capabilities.Shared) the claim statement locks its candidates
// (FOR UPDATE SKIP LOCKED) and leases them itself, so that concurrent
// claimers, on this node or others, skip each other's rows instead of
// waiting or sharing them; and a claim that leased keyed deliveries takes
// their keys' locks and judges them again (keepKeyHeads). A store that is
// not shared has one writer, which runs one claim at a time: its claim
// statement reads, and qLeaseClaimed leases what it read.
var (
	// qClaimDue ($1 endpoint, $2 now, $3 limit, $4 owner, $5 lease_until)
	// returns up to $3 claimable deliveries of the endpoint due at $2
	// (sqlrow.ScanDelivery's columns, then the event's payload and trace
	// context, "" for none): the fresh lane's first, then the retry lane's
	// for what the fresh one leaves of $3, each in due order and each
	// unordered or its key's head. Each lane's walk reads, beyond what it takes, the keyed
	// deliveries waiting behind their head due before its last one. On a
	// shared store it leases them to $4 until $5, takes those whose lease
	// expired before $2 too, and returns them in no order; elsewhere it
	// reads them in claim order and leaves $4 and $5 unread.
	qClaimDue = query("ClaimDue")
	// qLeaseClaimed leases the deliveries $3 to $1 until $2 (a claim on a
	// store that is not shared, after qClaimDue).
	qLeaseClaimed = query("LeaseClaimed")
	// qClaimKeyLocks ($1 ids, $2 subscriptions, $3 keys) tries, without
	// waiting, the lock of each (subscription, key), held until the
	// transaction ends, and returns the IDs whose lock another transaction
	// holds. Every row is read, so every lock is tried; a lock the
	// transaction already holds is granted again. Two keys may share a
	// lock (PostgreSQL's are hashes), which at worst gives one back for a
	// round. Run on a shared store only.
	qClaimKeyLocks = query("ClaimKeyLocks")
	// qClaimKeyRecheck ($1 ids, $2 now) clears the leases the transaction
	// just took on those of $1 that no longer pass keyHead, judged on a
	// snapshot taken after qClaimKeyLocks, and returns their IDs. The rows
	// are the transaction's (locked by the claim): it waits for no one.
	// Run on a shared store only.
	qClaimKeyRecheck = query("ClaimKeyRecheck")
	// qClaimDeadLetters reads the deliveries $1 (sqlrow.ScanDelivery's
	// columns), by key, in
	// no order: the dead-lettered deliveries of the dead letters a claim
	// took.
	qClaimDeadLetters = query("ClaimDeadLetters")
	// qReleaseLeases clears the lease of each delivery of $1 that owner $2
	// holds (expired or not); a lease another owner took over stays.
	qReleaseLeases = query("ReleaseLeases")
	// qExtendLeases moves to $3 the lease of each delivery of $1 still
	// pending and leased to $2 (expired or not, as long as no other owner
	// took it over) and returns their IDs, each once, in no order.
	qExtendLeases = query("ExtendLeases")
	// qNextDue ($1 endpoint, $2 now) returns the earliest next_attempt_at
	// of the endpoint's claimable deliveries, NULL for none: each lane's
	// walk stops at its first delivery not leased (or, where leases
	// expire, leased until before $2) that passes keyHead, so a key's
	// waiting deliveries, due but not claimable, never make the loader
	// look again before their head ends. One index range scan per lane.
	qNextDue = query("NextDue")
	// qDueEndpoints ($1 now) returns each endpoint with pending deliveries
	// not leased (or leased until before $1, where leases expire) and the
	// earliest next_attempt_at among them, in endpoint order: each lane's
	// index walked from one endpoint to the next (a skip scan: a few
	// seeks per endpoint, however many deliveries each has).
	qDueEndpoints = query("DueEndpoints")
	// qCountPending counts the pending deliveries of each lane, leased or
	// not: an index entry per pending delivery.
	qCountPending = query("CountPending")
	// qCountBacklog counts what qCountPending counts and the queued
	// deliveries, each count stopping at $1 (at least 0): at most $1
	// entries of each partial index are read (the drivers' backlog plan
	// tests pin it).
	qCountBacklog = query("CountBacklog")
	// qCountPendingOf counts the pending deliveries of the endpoints $1
	// (a list), stopping at $2 (at least 0): each endpoint's entries of
	// the lanes' partial indexes, read from a seek to it, the walk ending
	// at $2 entries in all (the drivers' pending-of plan tests pin it).
	qCountPendingOf = query("CountPendingOf")
)

// ClaimDue implements store.DeliveryStore in one write transaction: it
// leases to lease up to limit pending deliveries of the endpoint that are
// due at now and claimable (see above): fresh ones first, then retries,
// each in next_attempt_at order (then ID on a shared store). Concurrent
// claimers never get the same delivery, and no two deliveries of a key
// are leased at once, on any node. When it claims deliveries of dead
// letters, one more statement reads their dead-lettered deliveries
// (qClaimDeadLetters) for Claimed.DeadLetter (nil if one is gone). A limit
// of zero or less claims nothing.
//
// Statements: qClaimDue; on a store that is not shared, qLeaseClaimed
// when it read any; on a shared one, when it leased keyed deliveries,
// qClaimKeyLocks and qClaimKeyRecheck in one round trip (Pipeliner) and
// qReleaseLeases when a key's lock was busy; qClaimDeadLetters when it
// claimed a dead letter's delivery.
func (s *Store) ClaimDue(ctx context.Context, endpointID string, now time.Time, limit int, lease store.Lease) ([]store.Claimed, error) {
	if limit <= 0 {
		return nil, s.idle(ctx)
	}
	at, until := sqlrow.UnixMS(now), sqlrow.LeaseUntilMS(lease)
	shared := s.opts.Capabilities.Shared
	var out []store.Claimed
	err := s.write(ctx, func(x driver.Executor) error {
		out = out[:0]
		err := x.Query(ctx, qClaimDue, func(r driver.Row) error {
			var c store.Claimed
			d, err := sqlrow.ScanDelivery(r, &c.Payload, &c.TraceContext)
			c.Delivery = d
			out = append(out, c)
			return err
		}, endpointID, at, limit, lease.Owner, until)
		switch {
		case err != nil || len(out) == 0:
			return err
		case shared:
			out, err = s.keepKeyHeads(ctx, x, out, at, lease.Owner)
		default:
			_, err = x.Exec(ctx, qLeaseClaimed, lease.Owner, until, claimedIDs(out))
		}
		if err != nil {
			return err
		}
		return readDeadLetters(ctx, x, out)
	})
	if err != nil {
		return nil, fmt.Errorf("claim due: %w", err)
	}
	if shared {
		slices.SortFunc(out, claimOrder)
	}
	return out, nil
}

// claimOrder is the order of a claim: fresh deliveries before retries,
// each lane by next_attempt_at, then by ID.
func claimOrder(a, b store.Claimed) int {
	return cmp.Or(
		cmp.Compare(min(a.Attempts, 1), min(b.Attempts, 1)),
		a.NextAttemptAt.Compare(b.NextAttemptAt),
		cmp.Compare(a.ID, b.ID))
}

// claimedIDs returns the IDs of cs.
func claimedIDs(cs []store.Claimed) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// readDeadLetters sets the DeadLetter of each of out that is a dead
// letter's delivery, in one statement (none when there is none).
func readDeadLetters(ctx context.Context, x driver.Executor, out []store.Claimed) error {
	var of []string
	for _, c := range out {
		if c.DeadLetterOf != "" {
			of = append(of, c.DeadLetterOf)
		}
	}
	if len(of) == 0 {
		return nil
	}
	dead := make(map[string]delivery.Delivery, len(of))
	err := x.Query(ctx, qClaimDeadLetters, func(r driver.Row) error {
		d, err := sqlrow.ScanDelivery(r)
		dead[d.ID] = d
		return err
	}, of)
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	for i := range out {
		if d, ok := dead[out[i].DeadLetterOf]; ok && out[i].DeadLetterOf != "" {
			out[i].DeadLetter = &d
		}
	}
	return nil
}

// Release implements store.DeliveryStore in one statement: it clears the
// lease of each of deliveryIDs that owner still holds, expired or not.
// Unknown IDs, deliveries that hold no lease and deliveries leased to
// another owner (taken over after their lease expired) are left alone.
func (s *Store) Release(ctx context.Context, deliveryIDs []string, owner string) error {
	if len(deliveryIDs) == 0 {
		return s.idle(ctx)
	}
	if err := s.exec(ctx, qReleaseLeases, deliveryIDs, owner); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// ExtendLeases implements store.DeliveryStore in one statement: it moves
// to lease.Until the lease of each of deliveryIDs that is still pending
// and leased to lease.Owner (expired or not, as long as no other owner
// took it over), and returns the IDs it extended, each once, in input
// order. A node holding deliveries longer than its lease (queued behind a
// slow endpoint) calls it periodically with the IDs it holds and drops,
// without attempting them, those missing from the answer: another node has
// them, or they were dropped, redelivered or finished meanwhile. Where
// leases never expire, only ownership matters.
func (s *Store) ExtendLeases(ctx context.Context, deliveryIDs []string, lease store.Lease) ([]string, error) {
	if len(deliveryIDs) == 0 {
		return nil, s.idle(ctx)
	}
	var kept []string
	err := s.write(ctx, func(x driver.Executor) error {
		got := make(map[string]bool, len(deliveryIDs))
		err := x.Query(ctx, qExtendLeases, func(r driver.Row) error {
			var id string
			err := r.Scan(&id)
			got[id] = true
			return err
		}, deliveryIDs, lease.Owner, sqlrow.LeaseUntilMS(lease))
		kept = kept[:0]
		for _, id := range deliveryIDs {
			if got[id] {
				kept = append(kept, id)
				delete(got, id)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	return kept, nil
}

// NextDue implements store.DeliveryStore with one index range scan per
// lane. Where leases expire, deliveries whose lease expired by
// Options.Clock count as due (at their next_attempt_at); unexpired leases
// do not.
func (s *Store) NextDue(ctx context.Context, endpointID string) (time.Time, bool, error) {
	var at *int64
	if err := s.drv.Reader().QueryRow(ctx, qNextDue, endpointID, s.leasesNow()).Scan(&at); err != nil {
		return time.Time{}, false, err
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return sqlrow.FromUnixMS(*at), true, nil
}

// DueEndpoints implements store.DeliveryStore, in endpoint ID order. It
// costs a few index seeks per endpoint that has pending deliveries,
// independent of how many deliveries each has. Leases are judged as in
// NextDue; an endpoint whose pending deliveries are all leased is left
// out.
func (s *Store) DueEndpoints(ctx context.Context) ([]store.EndpointDue, error) {
	var out []store.EndpointDue
	err := s.drv.Reader().Query(ctx, qDueEndpoints, func(r driver.Row) error {
		var e store.EndpointDue
		var at int64
		err := r.Scan(&e.EndpointID, &at)
		e.NextDue = sqlrow.FromUnixMS(at)
		out = append(out, e)
		return err
	}, s.leasesNow())
	if err != nil {
		return nil, err
	}
	return out, nil
}

// leasesNow is the time, in Unix milliseconds, DueEndpoints and NextDue
// judge leases at: Options.Clock's now where leases expire, else 0 (no
// statement reads it).
func (s *Store) leasesNow() int64 {
	if !s.opts.Capabilities.LeasesExpire {
		return 0
	}
	return sqlrow.UnixMS(s.opts.Clock.Now())
}

// CountPending implements store.DeliveryStore: pending deliveries, leased
// or not, by lane (fresh: no attempt yet; retry: at least one). It counts
// index entries, so it takes time proportional to the backlog.
func (s *Store) CountPending(ctx context.Context) (fresh, retry int64, err error) {
	if err := s.drv.Reader().QueryRow(ctx, qCountPending).Scan(&fresh, &retry); err != nil {
		return 0, 0, err
	}
	return fresh, retry, nil
}

// SeekReader is a driver whose planner may read the first entries of a
// partial index by other means than walking it (PostgreSQL, on stale
// statistics, prefers a bitmap scan and a sort of every entry): the
// Executor it returns runs each statement planned with index scans only,
// so that a LIMIT ends the walk. CountBacklog reads through it.
type SeekReader interface {
	SeekReader() driver.Executor
}

// CountBacklog implements store.DeliveryStore: it reads at most limit
// entries of each lane's partial indexes and of the queued deliveries',
// in one statement, through the driver's SeekReader when it has one.
func (s *Store) CountBacklog(ctx context.Context, limit int64) (store.Backlog, error) {
	r := s.drv.Reader()
	if sr, ok := s.drv.(SeekReader); ok {
		r = sr.SeekReader()
	}
	var b store.Backlog
	if err := r.QueryRow(ctx, qCountBacklog, max(limit, 0)).Scan(&b.Fresh, &b.Retry, &b.Queued); err != nil {
		return store.Backlog{}, fmt.Errorf("count backlog: %w", err)
	}
	return b, nil
}

// CountPendingOf implements store.DeliveryStore in one statement, through
// the driver's SeekReader when it has one (as CountBacklog).
func (s *Store) CountPendingOf(ctx context.Context, endpointIDs []string, limit int64) (int64, error) {
	if len(endpointIDs) == 0 || limit < 1 {
		return 0, s.Ping(ctx) // nothing to count, but a closed store says so
	}
	ids := slices.Compact(slices.Sorted(slices.Values(endpointIDs)))
	r := s.drv.Reader()
	if sr, ok := s.drv.(SeekReader); ok {
		r = sr.SeekReader()
	}
	var n int64
	if err := r.QueryRow(ctx, qCountPendingOf, ids, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending of %d endpoints: %w", len(ids), err)
	}
	return n, nil
}

// idle answers a call that has nothing to do as the store answers every
// call: store.ErrClosed once it is closed, else nil. It costs an empty
// read-only transaction (callers do not make such calls).
func (s *Store) idle(ctx context.Context) error {
	return s.drv.Snapshot(ctx, func(driver.Executor) error { return nil })
}
