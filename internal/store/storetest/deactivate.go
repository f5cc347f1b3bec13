package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Deactivation (a push that failed under the queue failure policy: Record
// with a queued outcome and Deactivate) and ReactivateSubscription.

// queuedOutcome is the outcome of failed attempt n of id, started at
// `started`, under the queue failure policy: queued, receivable from the
// attempt's start (to the millisecond: the dispatcher's clock, as
// sqlrow.AttemptDueMS), the subscription deactivated.
func queuedOutcome(id string, n int, started time.Time) store.Outcome {
	end := started.Truncate(time.Millisecond)
	o := failed(id, n, started, end, end)
	o.Status, o.Deactivate = delivery.StatusQueued, true
	return o
}

func (b *bundle) subscription(id string) subscription.Subscription {
	b.t.Helper()
	s, err := b.s.GetSubscription(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetSubscription(%s): %v", id, err)
	}
	return s
}

// noChanges fails the test unless the catalog is still at version v.
func (b *bundle) noChanges(v int64) {
	b.t.Helper()
	if c := b.changes(v); c.Version != v || len(c.Changed)+len(c.Deleted) != 0 {
		b.t.Fatalf("catalog changes since %d: %+v; want none", v, c)
	}
}

// testRecordDeactivates: a queued outcome with Deactivate, applied under
// its lease, queues the delivery, deactivates its subscription at a new
// catalog version, and queues the subscription's other pending deliveries
// (leased ones too: their holders' outcomes then only log), receivable at
// the attempt's end. Finished deliveries and other subscriptions' are left
// alone; a subscription already deactivated stays at its version.
func testRecordDeactivates(t *testing.T, b *bundle) {
	a, other := b.sub("https://a.example/hook"), b.sub("https://other.example/hook")
	ev1, _ := b.claimOne(a, b.now)
	d1 := ev1.Deliveries[0].ID
	d2 := b.deliver(a, b.now)
	ev3, _ := b.claimOne(a, b.now)
	d3 := ev3.Deliveries[0].ID
	d4 := b.retrying(a, b.now, b.at(time.Hour))
	ev5, _ := b.claimOne(a, b.now)
	d5 := ev5.Deliveries[0].ID
	b.record(succeeded(d5, 1, b.now))
	d6 := b.deliver(other, b.now)
	before := map[string]delivery.Delivery{}
	for _, id := range []string{d1, d2, d3, d4, d5, d6} {
		before[id] = b.get(id)
	}
	v0 := b.changes(0).Version

	o := queuedOutcome(d1, 1, b.at(time.Second))
	o.LeaseOwner = b.lease.Owner
	b.record(o)
	end := o.NextAttemptAt

	got := b.subscription(a.ID)
	if got.Version <= v0 {
		t.Fatalf("version after the deactivation %d, before %d: want it to advance", got.Version, v0)
	}
	want := a
	want.State, want.Version = subscription.StateDeactivated, got.Version
	want.UpdatedAt = got.UpdatedAt // the contract does not say
	equal(t, "deactivated subscription", got, want)
	ch := b.changes(v0)
	equal(t, "catalog changes", subIDs(ch.Changed), []string{a.ID})
	equal(t, "changed", ch.Changed[0], want)

	w1 := before[d1]
	w1.Status, w1.Attempts, w1.RoundAttempts = delivery.StatusQueued, 1, 1
	w1.FirstFailure, w1.NextAttemptAt, w1.LastAttemptAt = end, end, b.at(time.Second)
	w1.LastStatusCode, w1.LastOutcome = 503, "http_503"
	equal(t, "the recorded delivery", b.get(d1), w1)
	equal(t, "attempt log", attempts(t, b, d1), []delivery.Attempt{o.Attempt})
	for _, id := range []string{d2, d3, d4} {
		w := before[id]
		w.Status, w.NextAttemptAt = delivery.StatusQueued, end
		equal(t, "queued by the deactivation", b.get(id), w)
	}
	for _, id := range []string{d5, d6} {
		equal(t, "untouched", b.get(id), before[id])
	}
	b.countQueued(4)
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != 1 || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want 1 (the other subscription's), 0", fresh, retry, err)
	}
	if got := b.claim(a.EndpointID, b.at(10*time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed queued deliveries %v", claimedIDs(got))
	}
	// The holder of d3's lease only logs its attempt.
	late := succeeded(d3, 1, b.at(time.Second))
	late.LeaseOwner = b.lease.Owner
	b.record(late)
	if d := b.get(d3); d.Status != delivery.StatusQueued {
		t.Fatalf("a leased delivery queued by the deactivation, after its holder's outcome: %+v", d)
	}
	// All are receivable from the attempt's end.
	if next := b.receiveNone(a, end.Add(-time.Millisecond)); !next.Equal(end) {
		t.Fatalf("NextAt = %v, want %v", next, end)
	}
	equal(t, "received", sortedCopy(receivedIDs(b.receive(a, end, 10).Received)), sortedCopy([]string{d1, d2, d3, d4}))

	// A subscription already deactivated stays as it is.
	v1 := b.changes(0).Version
	ev7, _ := b.claimOne(a, b.now)
	d7 := ev7.Deliveries[0].ID
	o7 := queuedOutcome(d7, 1, b.at(time.Second))
	o7.LeaseOwner = b.lease.Owner
	b.record(o7)
	b.noChanges(v1)
	if d := b.get(d7); d.Status != delivery.StatusQueued {
		t.Fatalf("second queued outcome: %+v", d)
	}
}

// testDeactivateGuarded: a queued outcome with Deactivate whose state
// change does not apply (another owner holds the lease; the delivery is
// no longer pending) logs its attempt and deactivates nothing.
func testDeactivateGuarded(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	pending := b.deliver(a, b.now)
	before, beforePending := b.get(id), b.get(pending)
	v0 := b.changes(0).Version
	o := queuedOutcome(id, 1, b.at(time.Second))
	o.LeaseOwner = "node-b"
	b.record(o)
	b.noChanges(v0)
	if s := b.subscription(a.ID); s.State != subscription.StateActive {
		t.Fatalf("subscription after a stale owner's outcome: %+v", s)
	}
	equal(t, "delivery", b.get(id), before)
	equal(t, "other delivery", b.get(pending), beforePending)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{o.Attempt})
	b.countQueued(0)

	b.record(succeeded(id, 2, b.at(time.Minute)))
	b.record(queuedOutcome(id, 3, b.at(2*time.Minute))) // delivered by then
	b.noChanges(v0)
	if d := b.get(id); d.Status != delivery.StatusDelivered {
		t.Fatalf("delivered delivery after a queued outcome: %+v", d)
	}
}

// testReactivate: reactivating a deactivated subscription makes it active
// at a new catalog version and its queued deliveries pending on its
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
	tok := b.receive(a, end, 1).Received[0].LockToken // a consumer holds a lock
	v1 := b.changes(0).Version

	at := end.Add(time.Second)
	res, err := b.s.ReactivateSubscription(b.ctx, a.ID, at)
	if err != nil || res.Count != 2 {
		t.Fatalf("ReactivateSubscription = %+v, %v; want 2 moved", res, err)
	}
	equal(t, "endpoints", res.Endpoints, []string{a.EndpointID})
	got := b.subscription(a.ID)
	if got.State != subscription.StateActive || got.Version <= v1 {
		t.Fatalf("reactivated subscription: %+v; want active at a version after %d", got, v1)
	}
	equal(t, "catalog changes", subIDs(b.changes(v1).Changed), []string{a.ID})
	for id, attempts := range map[string]int{d1: 1, d2: 0} {
		d := b.get(id)
		if d.Status != delivery.StatusPending || d.Attempts != attempts || d.RoundAttempts != 0 || !d.RoundStart.Equal(at) ||
			!d.FirstFailure.IsZero() || !d.NextAttemptAt.Equal(at) || !d.LockedUntil.IsZero() || d.EndpointID != a.EndpointID {
			t.Fatalf("delivery %s after the reactivation: %+v; want pending from %v with a fresh budget, unlocked", id, d, at)
		}
	}
	settled(t, "the consumer's lock", b.settle(a, store.Acknowledge, at, tok), store.ErrLockLost)
	b.countQueued(0)
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, at, 10)), []string{d2, d1})

	v2 := b.changes(0).Version
	res, err = b.s.ReactivateSubscription(b.ctx, a.ID, at)
	if err != nil || res.Count != 0 {
		t.Fatalf("ReactivateSubscription(active) = %+v, %v; want nothing moved", res, err)
	}
	b.noChanges(v2)
	p := b.pullSub(true)
	if _, err := b.s.ReactivateSubscription(b.ctx, p.ID, at); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("ReactivateSubscription(pull) = %v, want ErrConflict", err)
	}
	if _, err := b.s.ReactivateSubscription(b.ctx, "sub_unknown", at); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReactivateSubscription(unknown) = %v, want ErrNotFound", err)
	}
}
