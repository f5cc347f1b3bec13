package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/subscription"
)

// ErrLockLost is a lock token's result when it holds no lock: it names no
// queued delivery of the subscription, or its lock expired (the delivery
// may have been received again under another token) or was settled.
var ErrLockLost = errors.New("the lock token holds no lock: it expired, was settled, or is not this subscription's")

// QueueStore keeps queued deliveries and the locks consumers hold on them.
// A queued delivery is receivable when its NextAttemptAt is at or before
// now: receiving it locks it until now + the lock duration by moving its
// NextAttemptAt there, so an expired lock makes it receivable again with no
// other write. Locks are rows: they survive restarts and hold across
// processes (two receives never lock one delivery under two live tokens).
type QueueStore interface {
	// Receive locks up to r.Max receivable deliveries of one subscription,
	// oldest due first, and returns them with their events. Each gets a new
	// lock token and its Receives count goes up by one. It stops before
	// the delivery that would bring the bytes of what it returns over
	// r's bound (ReceiveRequest.Take: the answer's bytes, at most
	// MaxPageBytes by default), unless that one is the first, so one larger
	// than the bound comes alone; it locks only what it returns, reads no
	// payload it does not return, and the deliveries after the bound stay
	// receivable as they were, for the next call. A receivable
	// delivery already received r.MaxReceives times (0: no bound) is
	// dead-lettered with reason MaxDeliveryAttemptsExceeded instead, and
	// one whose round started at least r.TTL ago (0: no bound) with
	// TimeToLiveExceeded (dropped instead when r.DeadLetter is false);
	// neither is returned.
	Receive(ctx context.Context, r ReceiveRequest) (ReceiveResult, error)
	// Settle applies one action to the deliveries of lock tokens of one
	// subscription, in one transaction, and returns one result per token
	// in input order: nil, or ErrLockLost for a token that holds no live
	// lock (its lock_until is not after r.Now).
	Settle(ctx context.Context, r SettleRequest) ([]error, error)
	// ReactivateSubscription makes a deactivated push subscription, or one
	// awaiting validation, active (advancing the catalog version) with
	// reason as its StateReason and UpdatedAt moved to now (see
	// DeactivateSubscription), and every one of its queued deliveries
	// pending, due at now with a fresh attempt budget (locks cleared), and
	// returns how many moved and to which endpoint. An active push
	// subscription is left as it is (nothing moves: 0).
	// ErrNotFound; ErrConflict for a pull subscription.
	ReactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (RedriveResult, error)
	// DeactivateSubscription deactivates an active push subscription by
	// hand, as a Record outcome with Deactivate does: state
	// subscription.StateDeactivated at a new catalog version, with reason
	// as its StateReason and UpdatedAt moved to now (a millisecond after
	// the UpdatedAt it had, if now is not later), and every pending
	// delivery of it queued, receivable at now, leases cleared (an attempt
	// in flight then only logs its outcome). It reports whether it changed
	// anything: a deactivated subscription is left as it is (no new
	// catalog version). ErrNotFound; ErrConflict for a pull subscription
	// and for one awaiting validation.
	DeactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (bool, error)
	// CountQueued returns the number of queued deliveries.
	CountQueued(ctx context.Context) (int64, error)
}

// DeactivateRefused is the error DeactivateSubscription returns for
// subscription id in its delivery mode and state: ErrConflict for a pull
// subscription and for one awaiting validation; nil when it may be
// deactivated (or is already).
func DeactivateRefused(id, mode, state string) error {
	switch {
	case mode == subscription.ModePull:
		return fmt.Errorf("subscription %s is a pull subscription: %w", id, ErrConflict)
	case state == subscription.StateAwaitingValidation:
		return fmt.Errorf("subscription %s awaits validation: %w", id, ErrConflict)
	}
	return nil
}

// ReceiveRequest is one Receive call.
type ReceiveRequest struct {
	SubscriptionID string
	Now            time.Time
	Max            int           // 1..1000
	LockFor        time.Duration // how long the locks last
	MaxReceives    int           // 0: no bound
	TTL            time.Duration // 0: no bound
	DeadLetter     bool          // the subscription's dead_letter: false drops
	// MaxBytes bounds the bytes of what Receive returns (0: MaxPageBytes),
	// each delivery counting ItemBytes of its ID and its payload's bytes
	// (nil: its payload's bytes alone): the answer it will make, so the
	// caller gives the bytes its answer spends on a delivery besides its
	// payload, and the bound less its envelope (see Take).
	MaxBytes  int64
	ItemBytes func(deliveryID string, payloadBytes int64) int64
}

// Take reports whether Receive takes a delivery of deliveryID, whose
// payload has payloadBytes, after n deliveries of total bytes, and
// returns the total with it: the first delivery always, any other while
// the total stays within r.MaxBytes (MaxPageBytes when not set). Both
// stores decide by it.
func (r ReceiveRequest) Take(n int, total int64, deliveryID string, payloadBytes int64) (int64, bool) {
	b := payloadBytes
	if r.ItemBytes != nil {
		b = r.ItemBytes(deliveryID, payloadBytes)
	}
	limit := r.MaxBytes
	if limit <= 0 {
		limit = MaxPageBytes
	}
	if n > 0 && total+b > limit {
		return total, false
	}
	return total + b, true
}

// ReceiveResult is what Receive did.
type ReceiveResult struct {
	Received []Received
	// Ended are the deliveries Receive dead-lettered or dropped instead of
	// returning them (their new state set).
	Ended []delivery.Delivery
	// ExpiredLocks counts the received deliveries whose previous lock had
	// expired unsettled.
	ExpiredLocks int
	// NextAt is the earliest NextAttemptAt among the subscription's queued
	// deliveries after the call, those it just locked included (a lock's
	// expiry, a release's delay), or zero when there are none: when a
	// waiting consumer should look again.
	NextAt time.Time
}

// Received is a delivery locked by Receive.
type Received struct {
	delivery.Delivery // Receives counts this receive; LockedUntil is the lock's end
	LockToken         string
	Payload           []byte
}

// LockAction is what Settle does to a locked delivery.
type LockAction int

const (
	// Acknowledge: delivered (DeliveredAt now); the lock is cleared.
	Acknowledge LockAction = iota + 1
	// Release: queued again, receivable at now + Delay; the lock is cleared.
	Release
	// Reject: dead-lettered with delivery.ReasonRejected (dropped when DeadLetter is
	// false); the lock is cleared.
	Reject
	// Renew: the lock lasts until now + LockFor (so does NextAttemptAt).
	Renew
)

// SettleRequest is one Settle call.
type SettleRequest struct {
	SubscriptionID string
	Action         LockAction
	Tokens         []string // at most 1000
	Now            time.Time
	Delay          time.Duration // Release
	LockFor        time.Duration // Renew
	DeadLetter     bool          // Reject
}

// LockToken returns a lock token for a delivery: its ID, a dot, and secret
// (random text). The store finds the delivery by the part before the dot.
func LockToken(deliveryID, secret string) string { return deliveryID + "." + secret }

// LockTokenDelivery returns the delivery ID a lock token names ("" when it
// is not a token).
func LockTokenDelivery(token string) string {
	for i := 0; i < len(token); i++ {
		if token[i] == '.' {
			return token[:i]
		}
	}
	return ""
}
