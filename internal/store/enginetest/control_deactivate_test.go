package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// testDeactivateByHand: DeactivateSubscription deactivates an active push
// subscription at a new catalog version, with its reason and an UpdatedAt
// that moves even when the time given is its UpdatedAt, and queues its
// pending deliveries (leased ones too: their holders' outcomes then only
// log), receivable at once; finished deliveries and another
// subscription's are left alone. Deactivating it again changes nothing;
// ReactivateSubscription pushes the queue again.
func testDeactivateByHand(t *testing.T, b *bundle) {
	a, other := b.sub("https://a.example/hook"), b.sub("https://other.example/hook")
	d1 := b.deliver(a, b.now)
	ev2, _ := b.claimOne(a, b.now)
	d2 := ev2.Deliveries[0].ID
	ev3, _ := b.claimOne(a, b.now)
	d3 := ev3.Deliveries[0].ID
	b.record(succeeded(d3, 1, b.now))
	d4 := b.deliver(other, b.now)
	before := map[string]delivery.Delivery{}
	for _, id := range []string{d1, d2, d3, d4} {
		before[id] = b.get(id)
	}
	v0 := changes(b, 0).Version

	changed, err := b.s.DeactivateSubscription(b.ctx, a.ID, b.now, subscription.ReasonDeactivatedByHand)
	if err != nil || !changed {
		t.Fatalf("DeactivateSubscription = %v, %v; want a change", changed, err)
	}
	got := readSubscription(b, a.ID)
	want := a
	want.State, want.StateReason, want.Version = subscription.StateDeactivated, subscription.ReasonDeactivatedByHand, got.Version
	want.UpdatedAt = b.now.Add(time.Millisecond) // created at b.now: it moves all the same
	equal(t, "deactivated subscription", got, want)
	if got.Version <= v0 {
		t.Fatalf("version after the deactivation %d, before %d: want it to advance", got.Version, v0)
	}
	equal(t, "catalog changes", subIDs(changes(b, v0).Changed), []string{a.ID})
	for _, id := range []string{d1, d2} {
		w := before[id]
		w.Status, w.NextAttemptAt = delivery.StatusQueued, b.now
		equal(t, "queued by the deactivation", b.get(id), w)
	}
	for _, id := range []string{d3, d4} {
		equal(t, "untouched", b.get(id), before[id])
	}
	countQueued(b, 2)
	if got := b.claim(a.EndpointID, b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed queued deliveries %v", claimedIDs(got))
	}
	late := succeeded(d2, 1, b.at(time.Second)) // the holder of d2's lease
	late.LeaseOwner = b.lease.Owner
	b.record(late)
	equal(t, "received", sortedCopy(receivedIDs(receive(b, a, b.now, 10).Received)), sortedCopy([]string{d1, d2}))

	v1 := changes(b, 0).Version
	if changed, err := b.s.DeactivateSubscription(b.ctx, a.ID, b.at(time.Minute), subscription.ReasonDeactivatedByHand); err != nil || changed {
		t.Fatalf("DeactivateSubscription(deactivated) = %v, %v; want no change", changed, err)
	}
	noChanges(b, v1)
	equal(t, "subscription deactivated again", readSubscription(b, a.ID), got)

	at := b.at(time.Hour)
	if res, err := b.s.ReactivateSubscription(b.ctx, a.ID, at, subscription.ReasonReactivatedByHand); err != nil || res.Count != 2 {
		t.Fatalf("ReactivateSubscription = %+v, %v; want 2 moved", res, err)
	}
	if s := readSubscription(b, a.ID); s.State != subscription.StateActive || s.StateReason != subscription.ReasonReactivatedByHand ||
		!s.UpdatedAt.Equal(at) {
		t.Fatalf("reactivated subscription: %+v", s)
	}
	equal(t, "claimed after the reactivation", sortedCopy(claimedIDs(b.claim(a.EndpointID, at, 10))), sortedCopy([]string{d1, d2}))
}

// testDeactivateByHandRefused: DeactivateSubscription refuses a pull
// subscription and one awaiting validation (ErrConflict) and an unknown one
// (ErrNotFound), and changes nothing.
func testDeactivateByHandRefused(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	waiting := b.subWith(account.DefaultID, "https://waiting.example/hook", func(s *subscription.Subscription) {
		s.State = subscription.StateAwaitingValidation
	})
	v0 := changes(b, 0).Version
	for _, s := range []subscription.Subscription{p, waiting} {
		if _, err := b.s.DeactivateSubscription(b.ctx, s.ID, b.now, subscription.ReasonDeactivatedByHand); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("DeactivateSubscription(%s, %s) = %v, want ErrConflict", s.DeliveryMode, s.State, err)
		}
		if got := readSubscription(b, s.ID); got.State != s.State || got.StateReason != "" {
			t.Fatalf("subscription after a refused deactivation: %+v", got)
		}
	}
	if _, err := b.s.DeactivateSubscription(b.ctx, "sub_unknown", b.now, subscription.ReasonDeactivatedByHand); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeactivateSubscription(unknown) = %v, want ErrNotFound", err)
	}
	noChanges(b, v0)
}
