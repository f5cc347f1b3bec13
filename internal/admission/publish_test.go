package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/pipeline"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlite"
	"github.com/herald-events/herald/internal/subscription"
)

// setup returns a store, a catalog, a publisher over them and a function
// that creates a subscription of type t (with these advanced filters, if
// any) pushing to a receiver that answers 200.
func setup(t *testing.T) (*sqlite.Store, *catalog.Catalog, *admission.Publisher, func(id string, filters ...string)) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rc := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(rc.Close)
	cat := catalog.New(st)
	pipe := pipeline.New(pipeline.Config{Store: st, Catalog: cat})
	t.Cleanup(pipe.Stop)
	in := pipe.Admission
	create := func(id string, filters ...string) {
		t.Helper()
		now := time.Now().UTC().Truncate(time.Millisecond)
		s := subscription.Subscription{ID: id, Name: id, URL: rc.URL + "/" + id,
			EventTypes: []string{"t"}, State: "active", RetryPolicy: []byte(`{"preset":"eventgrid"}`),
			CreatedAt: now, UpdatedAt: now}
		if len(filters) > 0 {
			s.Filters.Advanced = []byte(filters[0])
		}
		if err := st.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return st, cat, in, create
}

// TestPublishMatchedAgainstAStaleCatalog: subscriptions written behind the
// catalog's back (as another node writes them) are matched all the same.
// The catalog here is never synced by the test after the start: only the
// store's refusal of a publish matched at an older version brings it up to
// date.
func TestPublishMatchedAgainstAStaleCatalog(t *testing.T) {
	ctx := context.Background()
	st, cat, in, create := setup(t)
	publish := func(id string) admission.Result {
		res, err := in.Publish(ctx, "", []event.Event{{SpecVersion: "1.0", ID: id, Source: "/t", Type: "t"}})
		if err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
		return res[0]
	}
	deliveriesOf := func(sub string) int {
		ds, _, err := st.ListDeliveries(ctx, store.DeliveryFilter{SubscriptionID: sub})
		if err != nil {
			t.Fatal(err)
		}
		return len(ds)
	}

	create("sub_a")
	if err := cat.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if r := publish("e1"); r.Deliveries != 1 {
		t.Fatalf("e1: %d deliveries, want 1", r.Deliveries)
	}

	// Created behind the catalog's back: the publish is refused at the old
	// version and matched again.
	create("sub_b")
	before := cat.Version()
	if r := publish("e2"); r.Deliveries != 2 {
		t.Fatalf("e2, after sub_b was created: %d deliveries, want 2", r.Deliveries)
	}
	if cat.Version() <= before {
		t.Fatalf("the catalog did not catch up (version %d)", cat.Version())
	}
	if deliveriesOf("sub_b") != 1 {
		t.Fatalf("sub_b has %d deliveries, want 1", deliveriesOf("sub_b"))
	}

	// Deleted behind the catalog's back: no delivery is written for it.
	if err := st.DeleteSubscription(ctx, "sub_b", time.Now()); err != nil {
		t.Fatal(err)
	}
	if cat.Get("sub_b") == nil {
		t.Fatal("the test needs a catalog that still has sub_b")
	}
	if r := publish("e3"); r.Deliveries != 1 {
		t.Fatalf("e3, after sub_b was deleted: %d deliveries, want 1", r.Deliveries)
	}
	if n := deliveriesOf("sub_b"); n != 1 {
		t.Fatalf("sub_b has %d deliveries after its delete, want still 1 (e2's, dropped)", n)
	}
}

// admitCounter counts the scheduler's reservations: one per publish whose
// matching ran to its end.
type admitCounter struct {
	admission.Scheduler
	admits int
}

func (a *admitCounter) Reserve(endpointIDs []string, now time.Time) *scheduling.Reservation {
	a.admits++
	return a.Scheduler.Reserve(endpointIDs, now)
}

// TestPublishAbandonedWhenTheClientHasGone: a publish whose context is
// cancelled (the client hung up) stops matching and returns the context's
// error: nothing is admitted or stored, and the same event published
// afterwards is new. Before, the matching ran to its end (the scheduler
// was asked to reserve places for its deliveries) and only the store noticed.
func TestPublishAbandonedWhenTheClientHasGone(t *testing.T) {
	_, cat, in, create := setup(t)
	create("sub_a", `[{"operator_type": "StringIn", "key": "data.region", "values": ["eu"]}]`)
	if err := cat.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	counter := &admitCounter{Scheduler: in.Scheduler}
	in.Scheduler = counter
	region := make([]string, 1000)
	for i := range region {
		region[i] = "eu"
	}
	data, _ := json.Marshal(map[string]any{"region": region})
	evs := []event.Event{{SpecVersion: "1.0", ID: "e1", Source: "/t", Type: "t", Data: data}}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := in.Publish(ctx, "", evs); !errors.Is(err, context.Canceled) {
		t.Fatalf("publish with a cancelled context: %v, %v; want context.Canceled", res, err)
	}
	if counter.admits != 0 {
		t.Fatalf("the cancelled publish was matched to its end (%d admissions)", counter.admits)
	}
	res, err := in.Publish(context.Background(), "", evs)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Duplicate || res[0].Deliveries != 1 {
		t.Fatalf("published again: %+v; want a new event with 1 delivery (the cancelled one stored nothing)", res[0])
	}
}

// TestPublishRefusedPastItsMatchWork: with MaxMatchWork between what one
// event's matching costs and what two cost, a publish of the two is
// refused with a *filter.WorkError naming the bound, before anything is
// admitted or stored (each alone is then new, and passes).
func TestPublishRefusedPastItsMatchWork(t *testing.T) {
	_, cat, in, create := setup(t)
	create("sub_a", `[{"operator_type": "StringNotContains", "key": "data.arr", "values": ["x", "y"]}]`)
	if err := cat.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	counter := &admitCounter{Scheduler: in.Scheduler}
	in.Scheduler = counter
	arr := make([]string, 5000) // 2 tests an element, and 1 for the candidate: 10,001 tests an event
	for i := range arr {
		arr[i] = "a"
	}
	data, _ := json.Marshal(map[string]any{"arr": arr})
	ev := func(id string) event.Event {
		return event.Event{SpecVersion: "1.0", ID: id, Source: "/t", Type: "t", Data: data}
	}
	in.MaxMatchWork = 15_000
	_, err := in.Publish(context.Background(), "", []event.Event{ev("e1"), ev("e2")})
	var we *filter.WorkError
	if !errors.As(err, &we) || we.Limit != 15_000 {
		t.Fatalf("publish of two events of 10,001 tests each: %v; want a *filter.WorkError of 15,000", err)
	}
	if counter.admits != 0 {
		t.Fatalf("the refused publish was admitted (%d)", counter.admits)
	}
	for _, id := range []string{"e1", "e2"} {
		res, err := in.Publish(context.Background(), "", []event.Event{ev(id)})
		if err != nil || res[0].Duplicate || res[0].Deliveries != 1 {
			t.Fatalf("%s alone: %+v, %v; want a new event with 1 delivery", id, res, err)
		}
	}
}
