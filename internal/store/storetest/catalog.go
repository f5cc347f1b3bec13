package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Subscription versions, the publish guard and endpoint versions: what lets
// every node's copy of the subscriptions and endpoint health catch up
// incrementally, and a publish check in its own transaction that it matched
// current subscriptions.
var catalogTests = []test{
	{"ChangesAreIncremental", testCatalogChanges},
	{"PublishGuardedByVersion", testPublishGuardVersion},
	{"PublishGuardedBySubscriptions", testPublishGuardSubscriptions},
	{"DeleteRacingPublishesLeavesNothingPending", testDeleteRacingPublishes},
	{"RedeliverOfDeletedSubscription", testRedeliverDeletedSubscription},
	{"EndpointChanges", testEndpointChanges},
	{"CleanupForgetsOldDeletions", testCleanupPrunesTombstones},
}

func (b *bundle) changes(since int64) store.CatalogChanges {
	b.t.Helper()
	c, err := b.s.SubscriptionChanges(b.ctx, since)
	if err != nil {
		b.t.Fatalf("SubscriptionChanges(%d): %v", since, err)
	}
	return c
}

func subIDs(subs []subscription.Subscription) []string {
	var out []string
	for _, s := range subs {
		out = append(out, s.ID)
	}
	return out
}

func testCatalogChanges(t *testing.T, b *bundle) {
	v0 := b.changes(0)
	if !v0.Full || len(v0.Changed) != 0 || v0.Version <= 0 {
		t.Fatalf("empty store: %+v; want full, no subscriptions, a positive version", v0)
	}
	if again := b.changes(v0.Version); again.Full || len(again.Changed)+len(again.Deleted) != 0 || again.Version != v0.Version {
		t.Fatalf("no change since %d: %+v", v0.Version, again)
	}
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	v1 := b.changes(v0.Version)
	if v1.Full || v1.Version != v0.Version+2 {
		t.Fatalf("after two creates: version %d full %v; want %d, incremental", v1.Version, v1.Full, v0.Version+2)
	}
	equal(t, "created", subIDs(v1.Changed), []string{a.ID, c.ID})

	a.EventTypes = []string{"invoice.voided"}
	if err := b.s.UpdateSubscription(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := b.s.DeleteSubscription(b.ctx, c.ID, b.now); err != nil {
		t.Fatal(err)
	}
	v2 := b.changes(v1.Version)
	if v2.Version != v1.Version+2 {
		t.Fatalf("after an update and a delete: version %d, want %d", v2.Version, v1.Version+2)
	}
	equal(t, "changed", subIDs(v2.Changed), []string{a.ID})
	equal(t, "changed types", v2.Changed[0].EventTypes, []string{"invoice.voided"})
	equal(t, "deleted", v2.Deleted, []string{c.ID})
	// A reader between the two writes sees only the second.
	mid := b.changes(v1.Version + 1)
	if len(mid.Changed) != 0 {
		t.Fatalf("since %d: changed %v, want none", v1.Version+1, subIDs(mid.Changed))
	}
	equal(t, "deleted since the update", mid.Deleted, []string{c.ID})
	// From scratch: only what exists.
	all := b.changes(0)
	if !all.Full || len(all.Deleted) != 0 {
		t.Fatalf("since 0: %+v", all)
	}
	equal(t, "all", subIDs(all.Changed), []string{a.ID})
}

func testPublishGuardVersion(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	v := b.changes(0).Version
	ev := b.event(b.now, a)
	if _, err := b.s.Publish(b.ctx, []store.NewEvent{ev}, store.PublishOptions{CatalogVersion: v}); err != nil {
		t.Fatalf("Publish at the current version: %v", err)
	}
	c := b.sub("https://c.example/hook") // the catalog moves on
	stale := b.event(b.now, a)
	_, err := b.s.Publish(b.ctx, []store.NewEvent{stale}, store.PublishOptions{CatalogVersion: v})
	var se *store.StaleCatalogError
	if !errors.As(err, &se) || !errors.Is(err, store.ErrStaleCatalog) || se.Version != v+1 {
		t.Fatalf("Publish matched at %d after a create: %v; want a StaleCatalogError at %d", v, err, v+1)
	}
	// Nothing of it was written: the same event is new afterwards.
	if _, err := b.s.GetDelivery(b.ctx, stale.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delivery of the refused publish: %v; want ErrNotFound", err)
	}
	stale.Deliveries = append(stale.Deliveries, store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: c.ID, EndpointID: c.EndpointID})
	res, err := b.s.Publish(b.ctx, []store.NewEvent{stale}, store.PublishOptions{CatalogVersion: se.Version})
	if err != nil || res[0].Duplicate {
		t.Fatalf("Publish again at %d: %+v, %v; want stored", se.Version, res, err)
	}
	// A newer version than stored is accepted (a reader may be ahead of a
	// follower's snapshot; the store's version is what counts).
	if _, err := b.s.Publish(b.ctx, []store.NewEvent{b.event(b.now, a)}, store.PublishOptions{CatalogVersion: se.Version + 5}); err != nil {
		t.Fatalf("Publish ahead of the stored version: %v", err)
	}
	// In one group of concurrent calls, the stale one fails alone.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ver := se.Version
			if i%2 == 1 {
				ver = v
			}
			_, errs[i] = b.s.Publish(b.ctx, []store.NewEvent{b.eventFor(i, a)}, store.PublishOptions{CatalogVersion: ver})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if stale := i%2 == 1; stale != errors.Is(err, store.ErrStaleCatalog) || !stale && err != nil {
			t.Fatalf("call %d (stale %v): %v", i, stale, err)
		}
	}
}

// eventFor is event with a fixed ID per i, safe to build concurrently.
func (b *bundle) eventFor(i int, sub subscription.Subscription) store.NewEvent {
	id := "conc-" + string(rune('a'+i))
	return store.NewEvent{
		ID: id, Source: "/billing", Type: "invoice.paid", Payload: []byte(`{}`), PublishedAt: b.now,
		Deliveries: []store.NewDelivery{{ID: "dlv_" + id, SubscriptionID: sub.ID, EndpointID: sub.EndpointID}},
	}
}

func testPublishGuardSubscriptions(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	opts := store.PublishOptions{RequireSubscriptions: true}
	if _, err := b.s.Publish(b.ctx, []store.NewEvent{b.event(b.now, a, c)}, opts); err != nil {
		t.Fatalf("Publish to existing subscriptions: %v", err)
	}
	if err := b.s.DeleteSubscription(b.ctx, c.ID, b.now); err != nil {
		t.Fatal(err)
	}
	ev := b.event(b.now, a, c)
	if _, err := b.s.Publish(b.ctx, []store.NewEvent{ev}, opts); !errors.Is(err, store.ErrStaleCatalog) {
		t.Fatalf("Publish naming a deleted subscription: %v; want ErrStaleCatalog", err)
	}
	if _, err := b.s.GetDelivery(b.ctx, ev.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delivery of the refused publish: %v; want ErrNotFound", err)
	}
	// Unguarded, the store takes what it is given (tools and tests).
	if _, err := b.s.Publish(b.ctx, []store.NewEvent{b.event(b.now, a, c)}, store.PublishOptions{}); err != nil {
		t.Fatalf("unguarded Publish: %v", err)
	}
}

// testDeleteRacingPublishes: guarded publishes race a delete; whatever
// order they commit in, none of the subscription's deliveries stays pending.
func testDeleteRacingPublishes(t *testing.T, b *bundle) {
	for round := range 3 {
		a := b.sub("https://a.example/hook")
		v := b.changes(0).Version
		var evs [][]store.NewEvent
		for range 20 {
			evs = append(evs, []store.NewEvent{b.event(b.now, a)})
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(evs))
		for i := range evs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.s.Publish(b.ctx, evs[i], store.PublishOptions{CatalogVersion: v})
				if errors.Is(err, store.ErrStaleCatalog) {
					// What the publish path does next: publish again
					// requiring the subscriptions to exist.
					_, err = b.s.Publish(b.ctx, evs[i], store.PublishOptions{RequireSubscriptions: true})
					if errors.Is(err, store.ErrStaleCatalog) {
						err = nil // the subscription is gone: nothing to write
					}
				}
				errs <- err
			}()
		}
		if err := b.s.DeleteSubscription(b.ctx, a.ID, b.now); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: Publish: %v", round, err)
			}
		}
		ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{SubscriptionID: a.ID, Status: delivery.StatusPending, Page: store.Page{Limit: 100}})
		if err != nil || len(ds) != 0 {
			t.Fatalf("round %d: pending deliveries of the deleted subscription: %v, %v; want none", round, deliveryIDs(ds), err)
		}
	}
}

func testRedeliverDeletedSubscription(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	dead := b.deadAfterTwo(a, b.now)
	pending := b.deliver(a, b.now)
	if err := b.s.DeleteSubscription(b.ctx, a.ID, b.now); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{dead, pending} {
		before := b.get(id)
		if _, err := b.s.Redeliver(b.ctx, id, b.at(time.Minute)); !errors.Is(err, store.ErrSubscriptionDeleted) {
			t.Fatalf("Redeliver(%s) of a deleted subscription: %v; want ErrSubscriptionDeleted", id, err)
		}
		equal(t, "delivery after a refused Redeliver", b.get(id), before)
	}
	if _, err := b.s.Redrive(b.ctx, a.ID, nil, b.at(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Redrive of a deleted subscription: %v; want ErrNotFound", err)
	}
	if d := b.get(dead); d.Status != delivery.StatusDeadLettered {
		t.Fatalf("dead letter after a refused Redrive: %s", d.Status)
	}
}

func testEndpointChanges(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	eps, v0, err := b.s.EndpointChanges(b.ctx, 0)
	if err != nil || v0 <= 0 {
		t.Fatalf("EndpointChanges(0): %v, %d, %v", eps, v0, err)
	}
	if eps, v, err := b.s.EndpointChanges(b.ctx, v0); err != nil || len(eps) != 0 || v != v0 {
		t.Fatalf("EndpointChanges at the current version: %d endpoints, version %d, %v", len(eps), v, err)
	}
	b.modify([]string{a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].Health.State = health.Probation
		eps[0].Health.NextProbeAt = b.at(time.Second)
		return nil
	})
	eps, v1, err := b.s.EndpointChanges(b.ctx, v0)
	if err != nil || v1 <= v0 || len(eps) != 1 || eps[0].ID != a.EndpointID || eps[0].Health.State != health.Probation {
		t.Fatalf("after ModifyEndpoints: %+v, version %d (was %d), %v; want endpoint a in probation", eps, v1, v0, err)
	}
	equal(t, "changed endpoint", eps[0], b.endpoint(a.EndpointID))
	// Taking a probe is not a change others must adopt.
	b.takeProbe(a.EndpointID, b.at(time.Second), b.at(time.Minute), true)
	if eps, v2, err := b.s.EndpointChanges(b.ctx, v1); err != nil || len(eps) != 0 || v2 != v1 {
		t.Fatalf("after TakeProbe: %+v, version %d (was %d), %v; want no change", eps, v2, v1, err)
	}
	// Several endpoints in one write: each reported once.
	b.modify([]string{a.EndpointID, c.EndpointID}, func([]*endpoint.Endpoint) error { return nil })
	eps, v3, err := b.s.EndpointChanges(b.ctx, v1)
	if err != nil || v3 <= v1 || len(eps) != 2 {
		t.Fatalf("after modifying two: %+v, version %d (was %d), %v", eps, v3, v1, err)
	}
}

func testCleanupPrunesTombstones(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	v := b.changes(0).Version
	if err := b.s.DeleteSubscription(b.ctx, c.ID, b.now); err != nil {
		t.Fatal(err)
	}
	// Not yet old enough: the deletion is still reported.
	if _, err := b.s.Cleanup(b.ctx, b.now, 100); err != nil {
		t.Fatal(err)
	}
	if got := b.changes(v); got.Full || len(got.Deleted) != 1 {
		t.Fatalf("before the retention: %+v; want the deletion", got)
	}
	if _, err := b.s.Cleanup(b.ctx, b.at(time.Millisecond), 100); err != nil {
		t.Fatal(err)
	}
	// A reader that may have missed the forgotten deletion reads everything.
	got := b.changes(v)
	if !got.Full || len(got.Deleted) != 0 {
		t.Fatalf("after the retention, since %d: %+v; want full", v, got)
	}
	equal(t, "all", subIDs(got.Changed), []string{a.ID})
	// A reader that had seen the deletion is not sent back to the start.
	if after := b.changes(got.Version); after.Full {
		t.Fatalf("since %d after pruning: %+v; want incremental", got.Version, after)
	}
}
