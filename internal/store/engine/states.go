package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// A push subscription is deactivated by a Record outcome (its failure
// policy queues a failed push: Outcome.Deactivate; that deactivation is
// still the drivers' own, inside their group commits) or by hand
// (DeactivateSubscription), and made active again by
// ReactivateSubscription (by hand, or when its endpoint passes its
// validation handshake). Each is a subscription write: it takes the catalog
// lock before it reads the state it changes, and a new catalog version
// (with the catalog's notification on a shared store), so every catalog
// learns of it and publishes matched before are refused and matched again
// (a deactivated subscription's deliveries are written queued). Each
// writes the state's reason and moves updated_at to the change's time, or
// a millisecond after the one stored if that is not earlier, so that every
// change moves it.
var (
	// qDeactivateSubscription deactivates subscription $4 for reason $1,
	// changed at $2 (updated_at moved), at catalog version $3.
	qDeactivateSubscription = query("DeactivateSubscription")
	// qQueuePending queues subscription $2's pending deliveries, leased
	// ones included (their holders' outcomes then only log their
	// attempts), receivable at $1.
	qQueuePending = query("QueuePendingDeliveries")
	// qReactivateSubscription makes subscription $4 active for reason $1,
	// changed at $2 (updated_at moved), at catalog version $3.
	qReactivateSubscription = query("ReactivateSubscription")
	// qUnqueue makes every queued delivery of subscription $4 pending on
	// its endpoint $2 (those of dead letters on its dead-letter URL's, $3),
	// due at $1 with a fresh attempt budget, as redeliver does (Attempts
	// and the last_* fields stay), unlocked, and returns the endpoint of
	// each. A subscription naming no dead-letter URL has no dead letters
	// queued: UpdateSubscription dropped them when it stopped naming one.
	qUnqueue = query("UnqueueSubscriptionDeliveries")
)

// DeactivateSubscription implements store.QueueStore in one write
// transaction: it takes the catalog lock first (as a deactivating Record
// batch does), so the state it reads stays until it commits, then
// deactivates the subscription and queues its pending deliveries (one
// write, holding SQLite's writer in proportion to them), and announces the
// subscription's queue to the consumers waiting on it (on every node of a
// shared store).
func (s *Store) DeactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (bool, error) {
	at := sqlrow.UnixMS(now)
	var changed bool
	err := s.write(ctx, func(x driver.Executor) error {
		changed = false
		if err := lockCatalog(ctx, x); err != nil {
			return err
		}
		st, err := subscriptionState(ctx, x, id)
		if err != nil {
			return err
		}
		if err := store.DeactivateRefused(id, st.mode, st.state); err != nil || st.state == subscription.StateDeactivated {
			return err
		}
		v, err := s.bumpCatalog(ctx, x)
		if err != nil {
			return err
		}
		if _, err := x.Exec(ctx, qDeactivateSubscription, reason, at, v, id); err != nil {
			return fmt.Errorf("deactivate subscription %s: %w", id, err)
		}
		if _, err := x.Exec(ctx, qQueuePending, at, id); err != nil {
			return fmt.Errorf("queue the pending deliveries of subscription %s: %w", id, err)
		}
		changed = true
		return s.notifyQueued(ctx, x, []string{id})
	})
	if err != nil {
		return false, err
	}
	if changed {
		s.queuedHere([]string{id})
	}
	return changed, nil
}

// ReactivateSubscription implements store.QueueStore in one write
// transaction (holding SQLite's writer in proportion to the subscription's
// queued deliveries). A deactivated push subscription, or one awaiting
// validation, becomes active at a new catalog version, and its queued
// deliveries, locked or not, pending on its endpoint, or its dead-letter
// URL's for those of dead letters (see qUnqueue): Endpoints names those any
// moved to, the URL's first; a consumer's lock on one of them is lost. An
// active one is left as it is (no new version). ErrNotFound; ErrConflict
// for a pull subscription.
func (s *Store) ReactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (store.RedriveResult, error) {
	at := sqlrow.UnixMS(now)
	var res store.RedriveResult
	err := s.write(ctx, func(x driver.Executor) error {
		res = store.RedriveResult{}
		if err := lockCatalog(ctx, x); err != nil {
			return err
		}
		st, err := subscriptionState(ctx, x, id)
		switch {
		case err != nil:
			return err
		case st.mode == subscription.ModePull:
			return fmt.Errorf("subscription %s is a pull subscription: %w", id, store.ErrConflict)
		case st.state != subscription.StateDeactivated && st.state != subscription.StateAwaitingValidation:
			return nil
		}
		v, err := s.bumpCatalog(ctx, x)
		if err != nil {
			return err
		}
		if _, err := x.Exec(ctx, qReactivateSubscription, reason, at, v, id); err != nil {
			return fmt.Errorf("reactivate subscription %s: %w", id, err)
		}
		moved := map[string]bool{}
		err = x.Query(ctx, qUnqueue, func(r driver.Row) error {
			var ep string
			err := r.Scan(&ep)
			res.Count++
			moved[ep] = true
			return err
		}, at, st.endpoint, st.deadLetterEndpoint, id)
		if err != nil {
			return fmt.Errorf("reactivate subscription %s: move the queued deliveries: %w", id, err)
		}
		for _, ep := range []string{st.endpoint, st.deadLetterEndpoint} {
			if moved[ep] && !slices.Contains(res.Endpoints, ep) {
				res.Endpoints = append(res.Endpoints, ep)
			}
		}
		return nil
	})
	if err != nil {
		return store.RedriveResult{}, err
	}
	return res, nil
}
