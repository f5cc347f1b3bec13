package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// testReactivate: reactivating a deactivated subscription makes it active
// at a new catalog version, with its reason and UpdatedAt moved to the
// time given, and its queued deliveries pending on its
// endpoint with a fresh attempt budget, unlocked; an active one is left
// alone; a pull subscription cannot be.
func testReactivate(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev1, _ := b.claimOne(a, b.now)
	d1 := ev1.Deliveries[0].ID
	d2 := b.deliver(a, b.now)
	o := queuedOutcome(d1, 1, b.at(time.Second))
	o.LeaseOwner = b.lease.Owner
	b.record(o)
	end := o.NextAttemptAt
	tok := receive(b, a, end, 1).Received[0].LockToken // a consumer holds a lock
	v1 := changes(b, 0).Version

	at := end.Add(time.Second)
	res, err := b.s.ReactivateSubscription(b.ctx, a.ID, at, subscription.ReasonReactivatedByHand)
	if err != nil || res.Count != 2 {
		t.Fatalf("ReactivateSubscription = %+v, %v; want 2 moved", res, err)
	}
	equal(t, "endpoints", res.Endpoints, []string{a.EndpointID})
	got := readSubscription(b, a.ID)
	if got.State != subscription.StateActive || got.Version <= v1 || got.StateReason != subscription.ReasonReactivatedByHand ||
		!got.UpdatedAt.Equal(at) {
		t.Fatalf("reactivated subscription: %+v; want active at a version after %d, reactivated by hand, updated at %v", got, v1, at)
	}
	equal(t, "catalog changes", subIDs(changes(b, v1).Changed), []string{a.ID})
	for id, attempts := range map[string]int{d1: 1, d2: 0} {
		d := b.get(id)
		if d.Status != delivery.StatusPending || d.Attempts != attempts || d.RoundAttempts != 0 || !d.RoundStart.Equal(at) ||
			!d.FirstFailure.IsZero() || !d.NextAttemptAt.Equal(at) || !d.LockedUntil.IsZero() || d.EndpointID != a.EndpointID {
			t.Fatalf("delivery %s after the reactivation: %+v; want pending from %v with a fresh budget, unlocked", id, d, at)
		}
	}
	settled(t, "the consumer's lock", settle(b, a, store.Acknowledge, at, tok), store.ErrLockLost)
	countQueued(b, 0)
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, at, 10)), []string{d2, d1})

	v2 := changes(b, 0).Version
	res, err = b.s.ReactivateSubscription(b.ctx, a.ID, at, subscription.ReasonReactivatedByHand)
	if err != nil || res.Count != 0 {
		t.Fatalf("ReactivateSubscription(active) = %+v, %v; want nothing moved", res, err)
	}
	noChanges(b, v2)
	if s := readSubscription(b, a.ID); s.StateReason != subscription.ReasonReactivatedByHand || !s.UpdatedAt.Equal(at) {
		t.Fatalf("subscription after reactivating it again: %+v; want its reason and UpdatedAt kept", s)
	}
	p := b.pullSub(true)
	if _, err := b.s.ReactivateSubscription(b.ctx, p.ID, at, subscription.ReasonReactivatedByHand); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("ReactivateSubscription(pull) = %v, want ErrConflict", err)
	}
	if _, err := b.s.ReactivateSubscription(b.ctx, "sub_unknown", at, subscription.ReasonReactivatedByHand); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReactivateSubscription(unknown) = %v, want ErrNotFound", err)
	}
}
