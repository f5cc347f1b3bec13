package drivertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Fixtures of the store's benchmarks: the engine's (internal/store/enginetest)
// and each driver's own.

// BenchEvents returns n events published at `at`, with IDs prefix-0 … and
// a 1 KiB payload, each with one delivery to sub.
func BenchEvents(prefix string, n int, sub subscription.Subscription, at time.Time) []store.NewEvent {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = 'x'
	}
	evs := make([]store.NewEvent, n)
	for i := range evs {
		evs[i] = store.NewEvent{
			ID: fmt.Sprintf("%s-%d", prefix, i), Source: "bench", Type: "bench.event",
			Payload: payload, PublishedAt: at,
			Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", at), SubscriptionID: sub.ID, EndpointID: sub.EndpointID}},
		}
	}
	return evs
}

// BenchSub creates subscription number i (its own URL, so its own endpoint).
func BenchSub(b testing.TB, s store.Store, i int) subscription.Subscription {
	b.Helper()
	now := time.Now()
	url := fmt.Sprintf("http://127.0.0.1:1/hook/%d", i)
	sub := subscription.Subscription{ID: ids.New("sub_", now), Name: fmt.Sprintf("bench-%d", i), URL: url,
		EndpointID: s.EndpointID("", url), EventTypes: []string{"bench.event"}, State: "active",
		CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSubscription(context.Background(), sub); err != nil {
		b.Fatal(err)
	}
	return sub
}
