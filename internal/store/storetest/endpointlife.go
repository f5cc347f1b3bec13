package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// An endpoint row lives while a subscription uses its URL.
var endpointLifeTests = []test{
	{"DeleteRemovesUnusedEndpoint", testDeleteRemovesUnusedEndpoint},
	{"MoveRemovesUnusedEndpoint", testMoveRemovesUnusedEndpoint},
	{"RecreatedEndpointIsNew", testRecreatedEndpointIsNew},
	{"NoEndpointLeftBehind", testNoEndpointLeftBehind},
}

// noEndpoint fails the test unless endpoint id is gone.
func (b *bundle) noEndpoint(id string) {
	b.t.Helper()
	if e, err := b.s.GetEndpoint(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
		b.t.Fatalf("GetEndpoint(%s) = %+v, %v; want ErrNotFound", id, e, err)
	}
}

func (b *bundle) deleteSub(s subscription.Subscription) {
	b.t.Helper()
	if err := b.s.DeleteSubscription(b.ctx, s.ID, b.now); err != nil {
		b.t.Fatalf("DeleteSubscription(%s): %v", s.ID, err)
	}
}

func (b *bundle) updateSub(s subscription.Subscription) {
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
	b.setHealth(s1.EndpointID, h)
	b.deleteSub(s1)
	equal(t, "health of the endpoint another subscription still uses", b.endpoint(s2.EndpointID).Health, h)
	b.deleteSub(s2)
	b.noEndpoint(s2.EndpointID)
	b.deleteSub(secret)
	b.noEndpoint(secret.EndpointID)
	if eps, err := b.s.AllEndpoints(b.ctx); err != nil || len(eps) != 0 {
		t.Fatalf("AllEndpoints after every subscription was deleted = %+v, %v; want none", eps, err)
	}
	// The health sync of a node that still holds the endpoint finds nothing
	// to write.
	if out := b.modify([]string{s2.EndpointID}, func([]*endpoint.Endpoint) error { return nil }); len(out) != 0 {
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
	b.setHealth(epA, h)
	a.EventTypes, a.UpdatedAt = []string{"invoice.voided"}, b.at(time.Second)
	b.updateSub(a)
	equal(t, "health after an update that kept the URL", b.endpoint(epA).Health, h)

	dead := b.deadAfterTwo(a, b.now)
	later := b.at(time.Hour)
	pending := b.deliver(a, later)
	lev, _ := b.claimOne(a, later)
	leased := lev.Deliveries[0].ID
	a.URL, a.EndpointID, a.UpdatedAt = other.URL, shared, b.at(2*time.Second)
	b.updateSub(a)
	b.noEndpoint(epA)
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
	b.updateSub(a)
	b.endpoint(shared)
	b.endpoint(a.EndpointID)
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
	b.setHealth(a.EndpointID, sampleHealth(b))
	_, v0, err := b.s.EndpointChanges(b.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.deleteSub(a)
	again := b.sub(url)
	fresh := b.endpoint(b.sub("https://fresh.example/hook").EndpointID)
	e := b.endpoint(again.EndpointID)
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
			b.deleteSub(s)
			continue
		}
		s.URL, s.EndpointID, s.UpdatedAt = "https://kept.example/hook", b.s.EndpointID("", "https://kept.example/hook"), b.at(time.Second)
		b.updateSub(s)
	}
	eps, err := b.s.AllEndpoints(b.ctx)
	if err != nil || len(eps) != 1 || eps[0].URL != "https://kept.example/hook" {
		t.Fatalf("AllEndpoints = %+v, %v; want only the one in use", eps, err)
	}
}
