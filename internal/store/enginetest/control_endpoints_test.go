package enginetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// noEndpoint fails the test unless endpoint id is gone.
func noEndpoint(b *bundle, id string) {
	b.t.Helper()
	if e, err := b.s.GetEndpoint(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
		b.t.Fatalf("GetEndpoint(%s) = %+v, %v; want ErrNotFound", id, e, err)
	}
}

func deleteSub(b *bundle, s subscription.Subscription) {
	b.t.Helper()
	if err := b.s.DeleteSubscription(b.ctx, s.ID, b.now); err != nil {
		b.t.Fatalf("DeleteSubscription(%s): %v", s.ID, err)
	}
}

func updateSub(b *bundle, s subscription.Subscription) {
	b.t.Helper()
	if err := b.s.UpdateSubscription(b.ctx, s); err != nil {
		b.t.Fatalf("UpdateSubscription(%s): %v", s.ID, err)
	}
}

// testDeleteRemovesUnusedEndpoint: deleting a subscription deletes its
// endpoint's row when no other subscription uses the URL, and only then.
func testDeleteRemovesUnusedEndpoint(t *testing.T, b *bundle) {
	s1, s2 := b.sub("https://shared.example/hook"), b.sub("https://shared.example/hook")
	secret := b.sub("https://user:secret@other.example/hook")
	h := sampleHealth(b)
	setHealth(b, s1.EndpointID, h)
	deleteSub(b, s1)
	equal(t, "health of the endpoint another subscription still uses", readEndpoint(b, s2.EndpointID).Health, h)
	deleteSub(b, s2)
	noEndpoint(b, s2.EndpointID)
	deleteSub(b, secret)
	noEndpoint(b, secret.EndpointID)
	if eps, err := b.s.AllEndpoints(b.ctx); err != nil || len(eps) != 0 {
		t.Fatalf("AllEndpoints after every subscription was deleted = %+v, %v; want none", eps, err)
	}
	// The health sync of a node that still holds the endpoint finds nothing
	// to write.
	if out := modify(b, []string{s2.EndpointID}, func([]*endpoint.Endpoint) error { return nil }); len(out) != 0 {
		t.Fatalf("ModifyEndpoints on a deleted endpoint wrote %+v", out)
	}
}

// testMoveRemovesUnusedEndpoint: a subscription moving to another URL takes
// its deliveries still to be attempted to that URL's endpoint (finished ones
// keep theirs), and its old endpoint's row goes when no other subscription
// uses it. An update that keeps the URL keeps the endpoint and its health.
func testMoveRemovesUnusedEndpoint(t *testing.T, b *bundle) {
	a, other := b.sub("https://a.example/hook"), b.sub("https://shared.example/hook")
	epA, shared := a.EndpointID, other.EndpointID
	h := sampleHealth(b)
	setHealth(b, epA, h)
	a.EventTypes, a.UpdatedAt = []string{"invoice.voided"}, b.at(time.Second)
	updateSub(b, a)
	equal(t, "health after an update that kept the URL", readEndpoint(b, epA).Health, h)

	dead := b.deadAfterTwo(a, b.now)
	later := b.at(time.Hour)
	pending := b.deliver(a, later)
	lev, _ := b.claimOne(a, later)
	leased := lev.Deliveries[0].ID
	a.URL, a.EndpointID, a.UpdatedAt = other.URL, shared, b.at(2*time.Second)
	updateSub(b, a)
	noEndpoint(b, epA)
	for _, id := range []string{pending, leased} {
		if d := b.get(id); d.EndpointID != shared {
			t.Fatalf("delivery %s still to be attempted is on %s after the move; want %s", id, d.EndpointID, shared)
		}
	}
	if d := b.get(dead); d.EndpointID != epA {
		t.Fatalf("dead letter %s is on %s after the move; want it kept on %s", dead, d.EndpointID, epA)
	}
	if _, ok, err := b.s.NextDue(b.ctx, epA); err != nil || ok {
		t.Fatalf("the old endpoint still has due deliveries (ok %v, err %v)", ok, err)
	}
	equal(t, "claimed on the new endpoint", claimedIDs(b.claim(shared, later, 10)), []string{pending})

	// Moving away from a URL another subscription uses keeps its endpoint.
	a.URL, a.UpdatedAt = "https://c.example/hook", b.at(3*time.Second)
	a.EndpointID = b.s.EndpointID("", a.URL)
	updateSub(b, a)
	readEndpoint(b, shared)
	readEndpoint(b, a.EndpointID)
	if d, err := b.s.Redeliver(b.ctx, dead, later); err != nil || d.EndpointID != a.EndpointID {
		t.Fatalf("Redeliver of a dead letter made before two moves = %+v, %v; want it on %s", d, err, a.EndpointID)
	}
}

// testRecreatedEndpointIsNew: a URL subscribed to again after its endpoint
// was deleted gets a new row with fresh health, which EndpointChanges
// reports to readers that still hold the old one's.
func testRecreatedEndpointIsNew(t *testing.T, b *bundle) {
	url := "https://again.example/hook"
	a := b.sub(url)
	setHealth(b, a.EndpointID, sampleHealth(b))
	_, v0, err := b.s.EndpointChanges(b.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	deleteSub(b, a)
	again := b.sub(url)
	fresh := readEndpoint(b, b.sub("https://fresh.example/hook").EndpointID)
	e := readEndpoint(b, again.EndpointID)
	equal(t, "health of the recreated endpoint", e.Health, fresh.Health)
	eps, v1, err := b.s.EndpointChanges(b.ctx, v0)
	if err != nil || v1 <= v0 || len(eps) != 2 {
		t.Fatalf("EndpointChanges(%d) = %+v, %d, %v; want both new endpoints", v0, eps, v1, err)
	}
	if eps[0].ID != again.EndpointID && eps[1].ID != again.EndpointID {
		t.Fatalf("EndpointChanges(%d) = %+v; want the recreated endpoint among them", v0, eps)
	}
}

// testNoEndpointLeftBehind: many subscriptions with distinct URLs, deleted
// or moved, leave no endpoint behind but those in use.
func testNoEndpointLeftBehind(t *testing.T, b *bundle) {
	const n = 100
	subs := make([]subscription.Subscription, n)
	for i := range subs {
		subs[i] = b.sub(fmt.Sprintf("https://user:pass%d@host%d.example/hook", i, i))
	}
	for i, s := range subs {
		if i%2 == 0 {
			deleteSub(b, s)
			continue
		}
		s.URL, s.EndpointID, s.UpdatedAt = "https://kept.example/hook", b.s.EndpointID("", "https://kept.example/hook"), b.at(time.Second)
		updateSub(b, s)
	}
	eps, err := b.s.AllEndpoints(b.ctx)
	if err != nil || len(eps) != 1 || eps[0].URL != "https://kept.example/hook" {
		t.Fatalf("AllEndpoints = %+v, %v; want only the one in use", eps, err)
	}
}

// testPullNoEndpoint: a pull subscription has no endpoint row: creating,
// updating and deleting it leaves the endpoints as they are.
func testPullNoEndpoint(t *testing.T, b *bundle) {
	endpoints := func() []string {
		t.Helper()
		eps, err := b.s.AllEndpoints(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range eps {
			out = append(out, e.ID)
		}
		return out
	}
	p := b.pullSub(true)
	got, err := b.s.GetSubscription(b.ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.Version = got.Version
	equal(t, "pull subscription", got, p)
	equal(t, "endpoints", endpoints(), []string{})
	a := b.sub("https://a.example/hook")
	equal(t, "endpoints", endpoints(), []string{a.EndpointID})
	p.Name, p.EventTypes = "renamed", []string{"invoice.voided"}
	updateSub(b, p)
	if got, err := b.s.GetSubscription(b.ctx, p.ID); err != nil || got.Name != "renamed" || got.EndpointID != "" || got.DeliveryMode != subscription.ModePull {
		t.Fatalf("updated pull subscription: %+v, %v", got, err)
	}
	equal(t, "endpoints after an update", endpoints(), []string{a.EndpointID})
	id := b.queue(p, b.now)
	deleteSub(b, p)
	equal(t, "endpoints after a delete", endpoints(), []string{a.EndpointID})
	if d := b.get(id); d.Status != delivery.StatusDropped || d.DeadLetterReason != delivery.ReasonSubscriptionDeleted {
		t.Fatalf("queued delivery of a deleted pull subscription: %+v", d)
	}
	countQueued(b, 0)
}
