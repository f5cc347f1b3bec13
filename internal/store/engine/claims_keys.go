package engine

import (
	"context"
	"slices"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
)

// A shared store's claim statement (qClaimDue) judges keyHead on the
// snapshot taken at its start, which cannot see what other transactions
// have not yet committed: another node's lease, not yet committed, on a
// key's head, while a redeliver (or a publish committed out of sequence
// order) of an earlier delivery of the key commits, lets the later claim
// take that earlier one too: two deliveries of one key in flight.
// keepKeyHeads closes that window for the claims that leased keyed
// deliveries, in the claim's transaction (READ COMMITTED: each statement
// reads its own snapshot):
//
//  1. qClaimKeyLocks tries, without waiting, the lock of each leased
//     delivery's (subscription, key), held until the claim commits or
//     rolls back;
//  2. qClaimKeyRecheck, a later statement and so a snapshot taken after
//     those locks were granted, gives back the lease of each one that is
//     no longer its key's head or whose key another delivery holds a live
//     lease on;
//  3. the leases whose lock another transaction held are given back too
//     (qReleaseLeases, only then: a third statement).
//
// Any two claims that keep a lease in one key held its lock in turn, and
// the second's re-check (after its lock, so after the first's commit) sees
// the first's lease: at most one delivery of a key is leased at a time, on
// every node, whatever a redeliver or a publish commits meanwhile. Only
// claims make leases (ExtendLeases moves a lease its owner still holds),
// so Redeliver, Redrive, RecoverBatch and Publish take no key lock. A
// lease given back is simply not claimed this round: the node's NextDue
// still sees the delivery due and claims again. The locks are tried, never
// waited for, so claims on different nodes never wait on each other, in
// any order of keys. Statements 1 and 2 go in one round trip (Pipeliner):
// a claim that leased keyed deliveries costs one round trip more (two when
// a lock was busy); a claim that leased none costs nothing more.

// Steps of a claim at which a test may hold it (ClaimHook).
const (
	// ClaimLeasedKeys: after qClaimDue leased keyed deliveries, before
	// their keys' locks.
	ClaimLeasedKeys = "leased keyed deliveries"
	// ClaimKeysHeld: after the re-check (and the release of those whose
	// lock was busy), before the claim commits.
	ClaimKeysHeld = "kept keyed deliveries"
)

// ClaimHook is the engine's test hook into a claim: a driver that
// implements it has ClaimStep called at each step above, inside the
// claim's transaction, so that its tests can hold a claim there while
// another node claims (postgres keylock_test.go). Drivers call nothing
// there in production.
type ClaimHook interface {
	ClaimStep(step string)
}

// Pipeliner is an Executor that sends several statements in one round
// trip (PostgreSQL's pipeline): each runs after the one before, as if run
// in turn, and its rows go to its Each. An Executor without it runs them
// one after the other.
type Pipeliner interface {
	Pipeline(ctx context.Context, stmts ...Statement) error
}

// Statement is one statement of a Pipeline: its query, its arguments and
// what reads each row it returns (nil: it returns none).
type Statement struct {
	Query driver.Query
	Args  []any
	Each  func(driver.Row) error
}

// keepKeyHeads applies the key locks and re-check above to the deliveries
// qClaimDue leased in x (at now, to owner) and returns those it keeps, in
// their order. Without a keyed delivery among them it runs nothing.
func (s *Store) keepKeyHeads(ctx context.Context, x driver.Executor, out []store.Claimed, now int64, owner string) ([]store.Claimed, error) {
	var ids, subs, keys []string
	for _, c := range out {
		if c.OrderingKey != "" {
			ids, subs, keys = append(ids, c.ID), append(subs, c.SubscriptionID), append(keys, c.OrderingKey)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	s.claimStep(ClaimLeasedKeys)
	var busy, dropped []string
	err := pipeline(ctx, x,
		Statement{Query: qClaimKeyLocks, Args: []any{ids, subs, keys}, Each: appendID(&busy)},
		Statement{Query: qClaimKeyRecheck, Args: []any{ids, now}, Each: appendID(&dropped)})
	if err != nil {
		return nil, err
	}
	busy = slices.DeleteFunc(busy, func(id string) bool { return slices.Contains(dropped, id) })
	if len(busy) > 0 {
		if _, err := x.Exec(ctx, qReleaseLeases, busy, owner); err != nil {
			return nil, err
		}
		dropped = append(dropped, busy...)
	}
	s.claimStep(ClaimKeysHeld)
	return slices.DeleteFunc(out, func(c store.Claimed) bool { return slices.Contains(dropped, c.ID) }), nil
}

// claimStep calls the driver's ClaimHook, if it has one, at step.
func (s *Store) claimStep(step string) {
	if h, ok := s.drv.(ClaimHook); ok {
		h.ClaimStep(step)
	}
}

// pipeline runs stmts in x, in one round trip when x is a Pipeliner.
func pipeline(ctx context.Context, x driver.Executor, stmts ...Statement) error {
	if len(stmts) == 0 {
		return nil // not even a round trip
	}
	if p, ok := x.(Pipeliner); ok {
		return p.Pipeline(ctx, stmts...)
	}
	for _, st := range stmts {
		var err error
		if st.Each == nil {
			_, err = x.Exec(ctx, st.Query, st.Args...)
		} else {
			err = x.Query(ctx, st.Query, st.Each, st.Args...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// appendID returns a row reader that appends each row's one column, an
// ID, to ids.
func appendID(ids *[]string) func(driver.Row) error {
	return func(r driver.Row) error {
		var id string
		if err := r.Scan(&id); err != nil {
			return err
		}
		*ids = append(*ids, id)
		return nil
	}
}
