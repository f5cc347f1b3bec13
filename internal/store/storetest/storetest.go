// Package storetest is the conformance suite every store.Store
// implementation runs (the shape of River's riverdrivertest): one Run call
// from the implementation's own tests, with a function that opens a fresh,
// empty store.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
//	}
//
// The suite checks behaviour through the store.Store interface only, with
// exact assertions. It assumes nothing an implementation may do differently:
// times are compared at millisecond precision (attempt durations at
// microsecond precision), and leases are always given an Until far beyond
// every time the suite passes as now, so a backend whose leases expire by time
// behaves like one whose leases do not.
//
// Bench is the matching set of benchmarks, run from each implementation's
// bench_test.go.
package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Run runs every conformance test. open must return a new, empty store for
// the test it is given; Run closes the store when that test ends (a second
// Close from the caller's own cleanup must be harmless). Subtests run in
// parallel.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Publish", publishTests},
		{"Claim", claimTests},
		{"Record", recordTests},
		{"Redeliver", redeliverTests},
		{"Lists", listTests},
		{"Subscriptions", subscriptionTests},
		{"Cleanup", cleanupTests},
		{"Lifecycle", lifecycleTests},
		{"Endpoints", endpointTests},
		{"EndpointLifetime", endpointLifeTests},
		{"Leaders", leaderTests},
		{"Catalog", catalogTests},
		{"Accounts", accountTests},
		{"Keys", keyTests},
		{"Tenants", tenantTests},
		{"Queue", queueTests},
		{"DeadLetters", deadLetterTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, setup(t, open))
				})
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T, b *bundle)
}

// bundle is one test's store and helpers.
type bundle struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
	// now is the suite's "current time": a fixed instant, millisecond
	// precision, UTC. Tests move time by adding to it.
	now   time.Time
	lease store.Lease
	// idAt advances by a millisecond per generated ID, so IDs made later in a
	// test always sort after earlier ones.
	idAt time.Time
	n    int
}

var base = time.Date(2030, time.March, 4, 5, 6, 7, 0, time.UTC)

func setup(t *testing.T, open func(t *testing.T) store.Store) *bundle {
	t.Helper()
	s := open(t)
	t.Cleanup(func() { _ = s.Close() })
	return &bundle{
		t:     t,
		s:     s,
		ctx:   context.Background(),
		now:   base,
		lease: store.Lease{Owner: "node-a", Until: base.Add(10000 * time.Hour)},
		idAt:  base,
	}
}

// id returns a new ID with prefix, sorting after every ID made before it.
func (b *bundle) id(prefix string) string {
	b.idAt = b.idAt.Add(time.Millisecond)
	return ids.New(prefix, b.idAt)
}

// at returns the suite's base time plus d.
func (b *bundle) at(d time.Duration) time.Time { return b.now.Add(d) }

// sub creates a subscription to url with a unique name in account.DefaultID.
func (b *bundle) sub(url string) subscription.Subscription {
	b.t.Helper()
	return b.subIn(account.DefaultID, url)
}

// subIn creates a subscription to url with a unique name in an account.
func (b *bundle) subIn(account, url string) subscription.Subscription {
	b.t.Helper()
	return b.subWith(account, url, nil)
}

// subWith creates a subscription to url with a unique name in an account,
// as subIn does, after edit (when not nil) changed it.
func (b *bundle) subWith(account, url string, edit func(*subscription.Subscription)) subscription.Subscription {
	b.t.Helper()
	b.n++
	s := subscription.Subscription{
		ID:            b.id("sub_"),
		AccountID:     account,
		Name:          fmt.Sprintf("sub-%d", b.n),
		URL:           url,
		EventTypes:    []string{"invoice.paid"},
		RetryPolicy:   []byte(`{"preset":"eventgrid"}`),
		Timeout:       30 * time.Second,
		Headers:       map[string]string{"X-Api-Key": "k"},
		DeadLetter:    true,
		State:         "active",
		DeliveryMode:  subscription.ModePush,
		FailurePolicy: subscription.FailureRetry,
		CreatedAt:     b.now,
		UpdatedAt:     b.now,
	}
	if edit != nil {
		edit(&s)
	}
	if err := b.s.CreateSubscription(b.ctx, s); err != nil {
		b.t.Fatalf("CreateSubscription: %v", err)
	}
	b.endpoints(&s)
	return s
}

// endpoints sets s's EndpointID and DeadLetterEndpointID as the store
// sets them on a write.
func (b *bundle) endpoints(s *subscription.Subscription) {
	s.EndpointID, s.DeadLetterEndpointID = "", ""
	if s.DeliveryMode == "" || s.DeliveryMode == subscription.ModePush {
		s.EndpointID = b.s.EndpointID(s.AccountID, s.URL)
		if s.Delivery.DeadLetterURL != "" {
			s.DeadLetterEndpointID = b.s.EndpointID(s.AccountID, s.Delivery.DeadLetterURL)
		}
	}
}

// event returns an event published at `at` with one unclaimed delivery per
// subscription in subs, in the account of the first (without subs, with no
// account: account.DefaultID's).
func (b *bundle) event(at time.Time, subs ...subscription.Subscription) store.NewEvent {
	b.n++
	ev := store.NewEvent{
		ID:          fmt.Sprintf("evt-%d", b.n),
		Source:      "/billing",
		Type:        "invoice.paid",
		Subject:     fmt.Sprintf("invoices/%d", b.n),
		Payload:     []byte(fmt.Sprintf(`{"specversion":"1.0","id":"evt-%d","data":{"n":%d}}`, b.n, b.n)),
		PublishedAt: at,
	}
	for _, s := range subs {
		ev.Deliveries = append(ev.Deliveries, store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: s.ID, EndpointID: s.EndpointID})
	}
	if len(subs) > 0 {
		ev.AccountID = subs[0].AccountID
	}
	return ev
}

// publish publishes events and fails the test on error.
func (b *bundle) publish(events ...store.NewEvent) []store.PublishResult {
	b.t.Helper()
	res, err := b.s.Publish(b.ctx, events, store.PublishOptions{Lease: b.lease})
	if err != nil {
		b.t.Fatalf("Publish: %v", err)
	}
	if len(res) != len(events) {
		b.t.Fatalf("Publish returned %d results for %d events", len(res), len(events))
	}
	return res
}

// deliver publishes one event at `at` to sub and returns its delivery's ID.
func (b *bundle) deliver(sub subscription.Subscription, at time.Time) string {
	b.t.Helper()
	ev := b.event(at, sub)
	b.publish(ev)
	return ev.Deliveries[0].ID
}

func (b *bundle) get(id string) delivery.Delivery {
	b.t.Helper()
	d, err := b.s.GetDelivery(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetDelivery(%s): %v", id, err)
	}
	return d
}

func (b *bundle) claim(endpointID string, now time.Time, limit int) []store.Claimed {
	b.t.Helper()
	cs, err := b.s.ClaimDue(b.ctx, endpointID, now, limit, b.lease)
	if err != nil {
		b.t.Fatalf("ClaimDue: %v", err)
	}
	return cs
}

func (b *bundle) record(outcomes ...store.Outcome) {
	b.t.Helper()
	if err := b.s.Record(b.ctx, outcomes); err != nil {
		b.t.Fatalf("Record: %v", err)
	}
}

// attemptDuration has a microsecond part: backends keep durations to the
// microsecond.
const attemptDuration = 1234567 * time.Microsecond

// failed is the outcome of failed attempt number n (also the budget's n-th)
// started at `started`, to be retried at next. The budget's first failure
// is the end of attempt 1.
func failed(id string, n int, started, firstFailure, next time.Time) store.Outcome {
	return store.Outcome{
		Attempt: delivery.Attempt{
			DeliveryID: id, Number: n, StartedAt: started, Duration: attemptDuration,
			StatusCode: 503, Outcome: "http_503", Error: "service unavailable",
			ResponseBody: []byte("busy\x00\xff"),
		},
		Status: delivery.StatusPending, Attempts: n, RoundAttempts: n,
		FirstFailure: firstFailure, NextAttemptAt: next,
		LastStatusCode: 503, LastOutcome: "http_503",
	}
}

// succeeded is the outcome of successful attempt number n.
func succeeded(id string, n int, started time.Time) store.Outcome {
	return store.Outcome{
		Attempt: delivery.Attempt{
			DeliveryID: id, Number: n, StartedAt: started, Duration: attemptDuration,
			StatusCode: 200, Outcome: "http_200", ResponseBody: []byte("ok"),
		},
		Status: delivery.StatusDelivered, Attempts: n, RoundAttempts: n,
		LastStatusCode: 200, LastOutcome: "http_200",
		DeliveredAt: started.Add(1234 * time.Millisecond),
	}
}

// deadLettered is the outcome of attempt n that exhausts the budget.
func deadLettered(id string, n int, started, firstFailure time.Time) store.Outcome {
	o := failed(id, n, started, firstFailure, time.Time{})
	o.Attempt.StatusCode, o.Attempt.Outcome, o.Attempt.Error = 400, "http_400", ""
	o.Status, o.LastStatusCode, o.LastOutcome = delivery.StatusDeadLettered, 400, "http_400"
	o.DeadLetterReason = "NonRetriableStatus"
	return o
}

// norm returns v with every time.Time field (at any depth of structs,
// slices and pointers to structs) converted to UTC, so that
// reflect.DeepEqual compares instants. What a pointer points to is
// normalised in place.
func norm[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	normValue(rv)
	return v
}

var timeType = reflect.TypeOf(time.Time{})

func normValue(v reflect.Value) {
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			v.Set(reflect.ValueOf(time.Time{}))
		} else {
			v.Set(reflect.ValueOf(t.UTC()))
		}
	case v.Kind() == reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				normValue(v.Field(i))
			}
		}
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct:
		if !v.IsNil() {
			normValue(v.Elem())
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		for i := 0; i < v.Len(); i++ {
			normValue(v.Index(i))
		}
	}
}

// equal fails the test unless got and want are deeply equal after norm.
func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	g, w := norm(got), norm(want)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got: %+v\nwant: %+v", what, g, w)
	}
}

// ids of claimed deliveries, in order.
func claimedIDs(cs []store.Claimed) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func deliveryIDs(ds []delivery.Delivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func sortedCopy(s []string) []string {
	c := append([]string{}, s...)
	sort.Strings(c)
	return c
}

// reversed returns s in reverse order.
func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// pendingDelivery is the state Publish gives a delivery of ev.
func pendingDelivery(ev store.NewEvent, i int, seq int64) delivery.Delivery {
	d := ev.Deliveries[i]
	return delivery.Delivery{
		ID: d.ID, AccountID: account.OrDefault(ev.AccountID), SubscriptionID: d.SubscriptionID, EndpointID: d.EndpointID,
		EventSeq: seq, EventID: ev.ID, EventSource: ev.Source,
		Status:     delivery.StatusPending,
		RoundStart: ev.PublishedAt, NextAttemptAt: ev.PublishedAt, CreatedAt: ev.PublishedAt,
	}
}
