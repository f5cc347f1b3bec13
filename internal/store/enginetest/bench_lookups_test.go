package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/drivertest"
	"github.com/herald-events/herald/internal/subscription"
)

// benchLookups measures the reads the API serves (lookups) on a store of
// 10,000 deliveries to 10 subscriptions (lookupData).
func benchLookups(b *testing.B, bs BenchStore) {
	ctx := context.Background()
	s := bs.Open(b)
	d := fillLookups(b, s)
	for _, l := range lookups {
		b.Run(l.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if n, err := l.read(ctx, s, d, i); err != nil || n == 0 {
					b.Fatalf("got %d, %v", n, err)
				}
				i++
			}
		})
	}
}

// lookupSubs, lookupCalls and lookupsPerCall are the size of
// benchLookups' store: subscriptions, and publishes of events (one
// delivery each).
const lookupSubs, lookupCalls, lookupsPerCall = 10, 100, 100

// lookupData is what benchLookups' store holds: a quarter of its
// deliveries each delivered, retrying (one failed attempt), dead-lettered
// and still leased.
type lookupData struct {
	subs       []subscription.Subscription
	deliveries []string // every delivery
	attempted  []string // those with an attempt
	events     []string // their events' CloudEvents ids
	seqs       []int64  // their events' seqs
}

// fillLookups fills s with benchLookups' deliveries.
func fillLookups(b *testing.B, s store.Store) *lookupData {
	ctx := context.Background()
	d := &lookupData{}
	for i := range lookupSubs {
		d.subs = append(d.subs, drivertest.BenchSub(b, s, i))
	}
	now := time.Now()
	lease := store.Lease{Owner: "bench", Until: now.Add(24 * time.Hour)}
	for c := range lookupCalls {
		evs := drivertest.BenchEvents(fmt.Sprintf("l%d", c), lookupsPerCall, d.subs[c%lookupSubs], now)
		for i := range evs {
			evs[i].Deliveries[0].Claimed = true
		}
		res, err := s.Publish(ctx, evs, store.PublishOptions{Lease: lease})
		if err != nil {
			b.Fatal(err)
		}
		var outs []store.Outcome
		for i, ev := range evs {
			id := ev.Deliveries[0].ID
			d.deliveries, d.events, d.seqs = append(d.deliveries, id), append(d.events, ev.ID), append(d.seqs, res[i].Seq)
			if o, ok := lookupOutcome(id, i, now); ok {
				outs = append(outs, o)
				d.attempted = append(d.attempted, id)
			}
		}
		if _, err := s.Record(ctx, outs); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// lookupOutcome is the outcome of the i-th delivery of a publish, id, in
// turn delivered, retrying in an hour and dead-lettered; none (ok false)
// for every fourth, which stays leased.
func lookupOutcome(id string, i int, now time.Time) (o store.Outcome, ok bool) {
	o = store.Outcome{Attempt: delivery.Attempt{DeliveryID: id, Number: 1, StartedAt: now,
		Duration: time.Millisecond, StatusCode: 503, Outcome: "http_503", ResponseBody: []byte("busy")},
		Attempts: 1, RoundAttempts: 1, FirstFailure: now, LastStatusCode: 503, LastOutcome: "http_503"}
	switch i % 4 {
	case 0:
		o.Attempt.StatusCode, o.Attempt.Outcome = 200, "http_200"
		o.Status, o.FirstFailure, o.LastStatusCode, o.LastOutcome, o.DeliveredAt = delivery.StatusDelivered, time.Time{}, 200, "http_200", now
	case 1:
		o.Status, o.NextAttemptAt = delivery.StatusPending, now.Add(time.Hour)
	case 2:
		o.Status, o.DeadLetterReason = delivery.StatusDeadLettered, "MaxAttemptsExceeded"
	default:
		return o, false
	}
	return o, true
}

// lookupPage is the page the lookups' lists read.
var lookupPage = store.Page{Limit: 100}

// lookupStatuses are the statuses ListDeliveries/status lists in turn.
var lookupStatuses = []delivery.Status{delivery.StatusDelivered, delivery.StatusPending, delivery.StatusDeadLettered}

// lookups are benchLookups' reads: the i-th call of each reads what it
// returns the count of (a get, 1).
var lookups = []struct {
	name string
	read func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error)
}{
	{"GetDelivery", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		_, err := s.GetDelivery(ctx, d.deliveries[i%len(d.deliveries)])
		return 1, err
	}},
	{"GetEvent", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		_, err := s.GetEvent(ctx, d.seqs[i%len(d.seqs)])
		return 1, err
	}},
	{"ListDeliveries/subscription", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		ds, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{SubscriptionID: d.subs[i%len(d.subs)].ID, Page: lookupPage})
		return len(ds), err
	}},
	{"ListDeliveries/status", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		ds, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{Status: lookupStatuses[i%len(lookupStatuses)], Page: lookupPage})
		return len(ds), err
	}},
	{"ListDeliveries/event", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		ds, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{EventID: d.events[i%len(d.events)], Page: lookupPage})
		return len(ds), err
	}},
	{"ListAttempts", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		as, _, err := s.ListAttempts(ctx, d.attempted[i%len(d.attempted)], lookupPage)
		return len(as), err
	}},
	{"ListDeadLetters", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		dls, _, err := s.ListDeadLetters(ctx, store.DeadLetterFilter{SubscriptionID: d.subs[i%len(d.subs)].ID, Page: lookupPage})
		return len(dls), err
	}},
	{"GetSubscription", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		_, err := s.GetSubscription(ctx, d.subs[i%len(d.subs)].ID)
		return 1, err
	}},
	{"ListSubscriptions", func(ctx context.Context, s store.Store, _ *lookupData, _ int) (int, error) {
		ss, _, err := s.ListSubscriptions(ctx, "", lookupPage)
		return len(ss), err
	}},
	{"GetEndpoint", func(ctx context.Context, s store.Store, d *lookupData, i int) (int, error) {
		_, err := s.GetEndpoint(ctx, d.subs[i%len(d.subs)].EndpointID)
		return 1, err
	}},
	{"ListEndpoints", func(ctx context.Context, s store.Store, _ *lookupData, _ int) (int, error) {
		eps, _, err := s.ListEndpoints(ctx, "", "", lookupPage)
		return len(eps), err
	}},
	{"CountPending", func(ctx context.Context, s store.Store, _ *lookupData, _ int) (int, error) {
		fresh, retry, err := s.CountPending(ctx)
		return int(fresh + retry), err
	}},
}
