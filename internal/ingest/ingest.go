// Package ingest is the publish path: it fans accepted events out to the
// subscriptions that match them, commits each event with its deliveries in
// the store's group commit, and hands the fresh deliveries to the dispatcher
// without a round trip through the store (the fast path).
package ingest

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/dispatch"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
)

// Ingester publishes events. It is safe for concurrent use.
type Ingester struct {
	Store   store.DeliveryStore
	Catalog *catalog.Catalog
	Engine  *dispatch.Engine
	Clock   clock.Clock
	Owner   string        // lease owner of fast-path deliveries
	Lease   time.Duration // lease length of fast-path deliveries
}

// Result is what happened to one published event.
type Result struct {
	ID         string `json:"id"`
	Source     string `json:"source"`
	Duplicate  bool   `json:"duplicate"`
	Deliveries int    `json:"deliveries"`
}

// Publish durably stores events and their deliveries and returns when they
// are committed. Events are matched against the catalog as it is now; an
// event that matches nothing is still stored (and deduplicated). A duplicate
// (source, id) makes no deliveries.
func (in *Ingester) Publish(ctx context.Context, evs []event.Event) ([]Result, error) {
	now := in.Clock.Now()
	news := make([]store.NewEvent, len(evs))
	total := 0
	for i, ev := range evs {
		payload, err := ev.Marshal()
		if err != nil {
			return nil, err
		}
		ne := store.NewEvent{
			ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject,
			Payload: payload, PublishedAt: now,
		}
		for _, sub := range in.Catalog.Match(ev.Type, ev.Subject) {
			ne.Deliveries = append(ne.Deliveries, store.NewDelivery{
				ID:             ids.New("dlv_", now),
				SubscriptionID: sub.ID,
				EndpointID:     sub.EndpointID,
			})
		}
		total += len(ne.Deliveries)
		news[i] = ne
	}

	// Ask the dispatcher which deliveries it takes straight from here.
	var granted []bool
	if in.Engine != nil && total > 0 {
		eps := make([]string, 0, total)
		for _, ne := range news {
			for _, d := range ne.Deliveries {
				eps = append(eps, d.EndpointID)
			}
		}
		granted = in.Engine.Reserve(eps)
		k := 0
		for i := range news {
			for j := range news[i].Deliveries {
				news[i].Deliveries[j].Claimed = granted[k]
				k++
			}
		}
	}

	res, err := in.Store.Publish(ctx, news, store.Lease{Owner: in.Owner, Until: now.Add(in.Lease)})
	if err != nil {
		n := 0
		for _, g := range granted {
			if g {
				n++
			}
		}
		if n > 0 {
			in.Engine.Unreserve(n)
		}
		return nil, err
	}

	out := make([]Result, len(news))
	var offer []store.Claimed
	for i, ne := range news {
		out[i] = Result{ID: ne.ID, Source: ne.Source, Duplicate: res[i].Duplicate}
		if res[i].Duplicate {
			for _, d := range ne.Deliveries {
				if d.Claimed {
					in.Engine.Unreserve(1)
				}
			}
			continue
		}
		out[i].Deliveries = len(ne.Deliveries)
		for _, d := range ne.Deliveries {
			if !d.Claimed {
				// Over the fast path's bound: the loader picks it up.
				if in.Engine != nil {
					in.Engine.Hint(d.EndpointID, now)
				}
				continue
			}
			offer = append(offer, store.Claimed{
				Delivery: store.Delivery{
					ID: d.ID, SubscriptionID: d.SubscriptionID, EndpointID: d.EndpointID,
					EventSeq: res[i].Seq, EventID: ne.ID, EventSource: ne.Source,
					Status: store.StatusPending, RoundStart: now, NextAttemptAt: now, CreatedAt: now,
				},
				Payload: ne.Payload,
			})
		}
	}
	if len(offer) > 0 {
		in.Engine.Offer(offer)
	}
	return out, nil
}
