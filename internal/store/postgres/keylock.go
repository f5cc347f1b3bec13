package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// A claim's statement (claimSQL) judges keyHead on the snapshot taken at its
// start, which cannot see what other transactions have not yet committed:
// another node's lease, not yet committed, on a key's head, while a
// redeliver (or a publish committed out of sequence order) of an earlier
// delivery of the key commits, lets the later claim take that earlier one
// too: two deliveries of one key in flight. keepKeyHeads closes that window
// for the claims that leased keyed deliveries, in the claim's transaction
// (READ COMMITTED, the server's default, which the store's transactions run
// at: each statement reads its own snapshot):
//
//  1. keyLockSQL tries, without waiting, the transaction-level advisory lock
//     of each leased delivery's (subscription, key), held until the claim
//     commits or rolls back;
//  2. keyRecheckSQL, a later statement and so a snapshot taken after those
//     locks were granted, gives back the lease of each one that is no longer
//     its key's head or whose key another delivery holds a live lease on;
//  3. the leases whose lock another transaction held are given back too
//     (releaseSQL, only then: a third statement).
//
// Any two claims that keep a lease in one key held its lock in turn, and the
// second's re-check (after its lock, so after the first's commit) sees the
// first's lease: at most one delivery of a key is leased at a time, on every
// node, whatever a redeliver or a publish commits meanwhile. Only claims
// make leases (ExtendLeases moves a lease its owner still holds), so
// Redeliver, Redrive, RecoverBatch and Publish take no key lock. A lease
// given back is simply not claimed this round: the node's NextDue still sees
// the delivery due and claims again. The locks are tried, never waited for,
// so claims on different nodes never wait on each other, in any order of
// keys; a key's lock is the pair (hashtext(subscription), hashtext(key)),
// in the two-int4 advisory key space (migrateLockSQL uses the bigint one),
// so two keys whose hashes are equal share a lock, which at worst gives
// back one of them for one round. Statements 1 and 2 go in one pipeline:
// a claim that leased keyed deliveries costs one round trip more (two when
// a lock was busy); a claim that leased none costs nothing more.
const (
	// keyLockSQL ($1 ids, $2 subscriptions, $3 keys) returns the IDs whose
	// key's lock another transaction holds. Every row is read (no LIMIT), so
	// every lock is tried; a lock this transaction already holds is granted
	// again.
	keyLockSQL = `SELECT u.id FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, sub, key)
WHERE NOT pg_try_advisory_xact_lock(hashtext(u.sub), hashtext(u.key))`

	// keyRecheckSQL ($1 ids, $2 now) clears the leases this transaction
	// just took on deliveries that no longer pass keyHead, and returns
	// their IDs. The rows are this transaction's (locked by the claim), so
	// it waits for no one.
	keyRecheckSQL = `UPDATE deliveries AS d SET lease_owner = '', lease_until = 0
WHERE d.id = ANY($1) AND NOT ` + keyHead + `
RETURNING d.id`
)

// Steps of a claim that a test may hold (Store.claimStep).
const (
	claimLeasedKeys = "leased keyed deliveries" // after claimSQL, before the locks
	claimKeysHeld   = "kept keyed deliveries"   // after the re-check, before commit
)

// keepKeyHeads applies the key locks and re-check above to the deliveries
// claimSQL leased in tx and returns those it keeps, in their order. Without
// a keyed delivery among them it runs nothing.
func (s *backend) keepKeyHeads(ctx context.Context, tx pgx.Tx, out []store.Claimed, now time.Time, lease store.Lease) ([]store.Claimed, error) {
	var ids, subs, keys []string
	for _, c := range out {
		if c.OrderingKey != "" {
			ids, subs, keys = append(ids, c.ID), append(subs, c.SubscriptionID), append(keys, c.OrderingKey)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	s.pause(claimLeasedKeys)
	b := &pgx.Batch{}
	b.Queue(keyLockSQL, ids, subs, keys)
	b.Queue(keyRecheckSQL, ids, sqlrow.UnixMS(now))
	res := tx.SendBatch(ctx, b)
	busy, err := collectIDs(res)
	var dropped []string
	if err == nil {
		dropped, err = collectIDs(res)
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	busy = slices.DeleteFunc(busy, func(id string) bool { return slices.Contains(dropped, id) })
	if len(busy) > 0 {
		if _, err := tx.Exec(ctx, releaseSQL, busy, lease.Owner); err != nil {
			return nil, err
		}
		dropped = append(dropped, busy...)
	}
	s.pause(claimKeysHeld)
	return slices.DeleteFunc(out, func(c store.Claimed) bool { return slices.Contains(dropped, c.ID) }), nil
}

// collectIDs reads the next result of a batch: one ID per row.
func collectIDs(res pgx.BatchResults) ([]string, error) {
	rows, err := res.Query()
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// pause calls the test's claimStep hook, if any, at step.
func (s *backend) pause(step string) {
	if s.claimStep != nil {
		s.claimStep(step)
	}
}
