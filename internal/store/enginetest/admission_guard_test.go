package enginetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

func testPublishGuardVersion(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	v := changes(b, 0).Version
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
			_, errs[i] = b.s.Publish(b.ctx, []store.NewEvent{eventFor(b, i, a)}, store.PublishOptions{CatalogVersion: ver})
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
func eventFor(b *bundle, i int, sub subscription.Subscription) store.NewEvent {
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
		v := changes(b, 0).Version
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
