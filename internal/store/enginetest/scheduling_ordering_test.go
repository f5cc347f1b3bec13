package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// keyed publishes one event at `at` to sub whose delivery has ordering
// key key, and returns the delivery's ID.
func (b *bundle) keyed(sub subscription.Subscription, key string, at time.Time) string {
	b.t.Helper()
	ev := b.event(at, sub)
	ev.PartitionKey = key
	ev.Deliveries[0].OrderingKey = key
	b.publish(ev)
	return ev.Deliveries[0].ID
}

// testClaimKeyHeads: a claim takes a keyed delivery only as its key's
// head (no pending delivery of its subscription and key of an earlier
// event, none leased), so one claim takes at most one per key, in publish
// order; a
// retrying head holds back its key only, until it ends (delivered or
// dead-lettered); NextDue passes the waiting ones by; an unkeyed delivery
// and the same key in another subscription are not held.
func testClaimKeyHeads(t *testing.T, b *bundle) {
	a, o := b.sub("https://a.example/hook"), b.sub("https://a.example/hook")
	a1, a2, a3 := b.keyed(a, "k1", b.at(1*time.Second)), b.keyed(a, "k1", b.at(2*time.Second)), b.keyed(a, "k1", b.at(3*time.Second))
	b1, u1, o1 := b.keyed(a, "k2", b.at(4*time.Second)), b.deliver(a, b.at(5*time.Second)), b.keyed(o, "k1", b.at(6*time.Second))
	now := b.at(time.Minute)
	got := b.claim(a.EndpointID, now, 100)
	equal(t, "first claim: one head per key", claimedIDs(got), []string{a1, b1, u1, o1})
	if got[0].OrderingKey != "k1" || got[2].OrderingKey != "" {
		t.Fatalf("claimed ordering keys %q, %q; want k1 and none", got[0].OrderingKey, got[2].OrderingKey)
	}
	if got := b.claim(a.EndpointID, now, 100); len(got) != 0 {
		t.Fatalf("claimed %v behind their heads", claimedIDs(got))
	}
	if at, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || ok {
		t.Fatalf("NextDue = %v, %v, %v; want nothing claimable (the waiting ones are not)", at, ok, err)
	}
	b.record(failed(a1, 1, now, now, b.at(2*time.Minute)), succeeded(b1, 1, now))
	if got := b.claim(a.EndpointID, now, 100); len(got) != 0 {
		t.Fatalf("claimed %v while k1's head waits for its retry", claimedIDs(got))
	}
	if at, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || !ok || !at.Equal(b.at(2*time.Minute)) {
		t.Fatalf("NextDue = %v, %v, %v; want the head's retry at +2m", at, ok, err)
	}
	later := b.at(2 * time.Minute)
	equal(t, "the retrying head", claimedIDs(b.claim(a.EndpointID, later, 100)), []string{a1})
	b.record(succeeded(a1, 2, later))
	equal(t, "the next after the head was delivered", claimedIDs(b.claim(a.EndpointID, later, 100)), []string{a2})
	b.record(deadLettered(a2, 1, later, later))
	equal(t, "the next after the head was dead-lettered", claimedIDs(b.claim(a.EndpointID, later, 100)), []string{a3})
}

// testClaimKeyLeaseHolds: while a delivery of a key is leased, no other
// delivery of the key is claimed, by any owner, even one with a smaller
// event (an older one redelivered); it becomes the head when the leased one
// ends. ListDeliveries by subscription and ordering key lists the key's,
// newest first.
func testClaimKeyLeaseHolds(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	a1, a2 := b.keyed(a, "k", b.at(1*time.Second)), b.keyed(a, "k", b.at(2*time.Second))
	b.deliver(a, b.at(3*time.Second))
	now := b.at(time.Minute)
	equal(t, "head", claimedIDs(b.claim(a.EndpointID, now, 1)), []string{a1})
	b.record(succeeded(a1, 1, now))
	other := store.Lease{Owner: "node-b", Until: b.lease.Until}
	if got, err := b.s.ClaimDue(b.ctx, a.EndpointID, now, 1, other); err != nil || len(got) != 1 || got[0].ID != a2 {
		t.Fatalf("node-b claimed %v, %v; want %s", claimedIDs(got), err, a2)
	}
	if _, err := b.s.Redeliver(b.ctx, a1, now); err != nil {
		t.Fatalf("Redeliver: %v", err)
	}
	if got := claimedIDs(b.claim(a.EndpointID, now, 100)); len(got) != 1 || got[0] == a1 {
		t.Fatalf("claimed %v; want the unkeyed one only while %s is leased", got, a2)
	}
	b.record(succeeded(a2, 1, now))
	equal(t, "the redelivered one, after the leased one ended", claimedIDs(b.claim(a.EndpointID, now, 100)), []string{a1})
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{SubscriptionID: a.ID, OrderingKey: "k", Page: store.Page{Limit: 10}})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, d := range ds {
		listed = append(listed, d.ID)
	}
	equal(t, "the key's deliveries", listed, []string{a2, a1})
}
