package enginetest

import (
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
// sqlrow.AttemptDueMS), the subscription deactivated for
// subscription.ReasonPushFailed.
func queuedOutcome(id string, n int, started time.Time) store.Outcome {
	end := started.Truncate(time.Millisecond)
	o := failed(id, n, started, end, end)
	o.Status, o.Deactivate, o.DeactivateReason = delivery.StatusQueued, true, subscription.ReasonPushFailed
	return o
}

func readSubscription(b *bundle, id string) subscription.Subscription {
	b.t.Helper()
	s, err := b.s.GetSubscription(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetSubscription(%s): %v", id, err)
	}
	return s
}

// noChanges fails the test unless the catalog is still at version v.
func noChanges(b *bundle, v int64) {
	b.t.Helper()
	if c := changes(b, v); c.Version != v || len(c.Changed)+len(c.Deleted) != 0 {
		b.t.Fatalf("catalog changes since %d: %+v; want none", v, c)
	}
}

// testRecordDeactivates: a queued outcome with Deactivate, applied under
// its lease, queues the delivery, deactivates its subscription at a new
// catalog version (with the outcome's reason, UpdatedAt its NextAttemptAt),
// and queues the subscription's other pending deliveries
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
	v0 := changes(b, 0).Version

	o := queuedOutcome(d1, 1, b.at(time.Second))
	o.LeaseOwner = b.lease.Owner
	b.record(o)
	end := o.NextAttemptAt

	got := readSubscription(b, a.ID)
	if got.Version <= v0 {
		t.Fatalf("version after the deactivation %d, before %d: want it to advance", got.Version, v0)
	}
	want := a
	want.State, want.StateReason, want.Version = subscription.StateDeactivated, subscription.ReasonPushFailed, got.Version
	want.UpdatedAt = end // the outcome's NextAttemptAt
	equal(t, "deactivated subscription", got, want)
	ch := changes(b, v0)
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
	countQueued(b, 4)
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
	if next := receiveNone(b, a, end.Add(-time.Millisecond)); !next.Equal(end) {
		t.Fatalf("NextAt = %v, want %v", next, end)
	}
	equal(t, "received", sortedCopy(receivedIDs(receive(b, a, end, 10).Received)), sortedCopy([]string{d1, d2, d3, d4}))

	// A subscription already deactivated stays as it is.
	v1 := changes(b, 0).Version
	ev7, _ := b.claimOne(a, b.now)
	d7 := ev7.Deliveries[0].ID
	o7 := queuedOutcome(d7, 1, b.at(time.Second))
	o7.LeaseOwner = b.lease.Owner
	b.record(o7)
	noChanges(b, v1)
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
	v0 := changes(b, 0).Version
	o := queuedOutcome(id, 1, b.at(time.Second))
	o.LeaseOwner = "node-b"
	b.record(o)
	noChanges(b, v0)
	if s := readSubscription(b, a.ID); s.State != subscription.StateActive {
		t.Fatalf("subscription after a stale owner's outcome: %+v", s)
	}
	equal(t, "delivery", b.get(id), before)
	equal(t, "other delivery", b.get(pending), beforePending)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{o.Attempt})
	countQueued(b, 0)

	b.record(succeeded(id, 2, b.at(time.Minute)))
	b.record(queuedOutcome(id, 3, b.at(2*time.Minute))) // delivered by then
	noChanges(b, v0)
	if d := b.get(id); d.Status != delivery.StatusDelivered {
		t.Fatalf("delivered delivery after a queued outcome: %+v", d)
	}
}
