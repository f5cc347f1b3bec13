package recording_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/pipeline"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlite"
	"github.com/herald-events/herald/internal/subscription"
)

// stores opens a fresh store of each kind for a test.
var stores = []struct {
	name string
	open func(t *testing.T, clk clock.Clock) store.Store
}{
	{"sqlite", func(t *testing.T, _ clock.Clock) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"postgres", func(t *testing.T, clk clock.Clock) store.Store {
		s, err := postgres.Open(context.Background(), pgtest.SchemaURL(t), postgres.Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// failingRecords is a real store whose Record fails while fail is above
// zero (each failure counts it down).
type failingRecords struct {
	store.Store
	fail  atomic.Int64
	calls atomic.Int64
}

func (f *failingRecords) Record(ctx context.Context, outs []store.Outcome) ([]bool, error) {
	f.calls.Add(1)
	if f.fail.Add(-1) >= 0 {
		return nil, errors.New("injected: the disk is full")
	}
	return f.Store.Record(ctx, outs)
}

var start = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// recordFixture is a started delivery pipeline on a real store whose Record fails the
// given number of times, with one subscription to a real receiver and one
// pending delivery (dlv_1) of it.
type recordFixture struct {
	clk *clock.Fake
	st  *failingRecords
	got atomic.Int64 // requests the receiver got
	sub subscription.Subscription
	eng *pipeline.Pipeline
}

func newRecordFixture(t *testing.T, open func(*testing.T, clock.Clock) store.Store, failures int64) *recordFixture {
	f := &recordFixture{clk: clock.NewFake(start)}
	f.st = &failingRecords{Store: open(t, f.clk)}
	t.Cleanup(func() { _ = f.st.Store.Close() })
	f.st.fail.Store(failures)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { f.got.Add(1) }))
	t.Cleanup(rc.Close)
	ctx := context.Background()
	f.sub = subscription.Subscription{ID: "sub_1", Name: "s", URL: rc.URL, State: "active",
		RetryPolicy: []byte(`{"preset":"eventgrid"}`), CreatedAt: start, UpdatedAt: start}
	if err := f.st.CreateSubscription(ctx, f.sub); err != nil {
		t.Fatal(err)
	}
	f.sub.EndpointID = f.st.EndpointID("", f.sub.URL)
	cat := catalog.New(f.st)
	if err := cat.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	ev := store.NewEvent{ID: "e1", Source: "/t", Type: "t", Payload: []byte(`{}`), PublishedAt: start,
		Deliveries: []store.NewDelivery{{ID: "dlv_1", SubscriptionID: f.sub.ID, EndpointID: f.sub.EndpointID}}}
	if _, err := f.st.Publish(ctx, []store.NewEvent{ev}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eng = pipeline.New(pipeline.Config{Store: f.st, Catalog: cat, Clock: f.clk,
		Scheduling: scheduling.Config{Lease: time.Hour},
		Attempting: attempting.Config{Destinations: destination.Policy{AllowPrivate: true}}}) // the receiver is on loopback
	if err := f.eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFailedOutcomeWriteKeepsTheDeliveryDeliverable: when writing an
// attempt's outcome fails, the recorder keeps the delivery and writes the
// outcome again (on its clock) until it succeeds: the delivery ends
// delivered, and its lease is given back.
func TestFailedOutcomeWriteKeepsTheDeliveryDeliverable(t *testing.T) {
	for _, sk := range stores {
		t.Run(sk.name, func(t *testing.T) {
			f := newRecordFixture(t, sk.open, 3)
			clk, st, got, sub, eng, ctx := f.clk, f.st, &f.got, f.sub, f.eng, context.Background()
			stopped := sync.OnceFunc(eng.Stop)
			t.Cleanup(stopped)

			// Each failed write is tried again after 1 s, 2 s, 4 s of the
			// recorder's clock: move it on while waiting.
			waitFor(t, "the outcome written", func() bool {
				d, err := st.GetDelivery(ctx, "dlv_1")
				if err == nil && d.Status == delivery.StatusDelivered {
					return true
				}
				if st.calls.Load() > 0 {
					clk.Advance(250 * time.Millisecond)
				}
				return false
			})
			if n := st.calls.Load(); n != 4 {
				t.Fatalf("Record called %d times, want 4 (three failures, then the write)", n)
			}
			if elapsed := clk.Now().Sub(start); elapsed < 7*time.Second {
				t.Fatalf("written %v after the start, want at least 7s (1 + 2 + 4 s of pauses)", elapsed)
			}
			if n := got.Load(); n != 1 {
				t.Fatalf("the receiver got %d requests, want 1 (the write was retried, not the attempt)", n)
			}
			waitFor(t, "the delivery's memory place given back", func() bool {
				s := eng.Scheduler.Stats()
				return s.LoadHeld+s.FreshHeld+s.InFlight == 0
			})
			stopped()
			// Nothing is left leased: a new claim finds nothing, and the
			// delivery is not pending.
			cs, err := st.ClaimDue(ctx, sub.EndpointID, start.Add(time.Hour), 10, store.Lease{Owner: "other", Until: start.Add(2 * time.Hour)})
			if err != nil || len(cs) != 0 {
				t.Fatalf("claim after: %v, %v", cs, err)
			}
		})
	}
}

// TestOutcomeGivenUpAtStopIsAttemptedAgain: when the outcome still cannot
// be written at shutdown, the delivery is given back to the store and the
// next process attempts it (at-least-once).
func TestOutcomeGivenUpAtStopIsAttemptedAgain(t *testing.T) {
	for _, sk := range stores {
		t.Run(sk.name, func(t *testing.T) {
			f := newRecordFixture(t, sk.open, 1<<40)
			st, sub, eng, ctx := f.st, f.sub, f.eng, context.Background()
			waitFor(t, "a failed write", func() bool { return st.calls.Load() > 0 })
			eng.Abandon() // no grace: give up at once
			eng.Stop()
			d, err := st.GetDelivery(ctx, "dlv_1")
			if err != nil || d.Status != delivery.StatusPending {
				t.Fatalf("after the stop: %+v, %v; want pending", d, err)
			}
			// A new process (another owner) may claim it at once.
			cs, err := st.ClaimDue(ctx, sub.EndpointID, start, 10, store.Lease{Owner: "next", Until: start.Add(time.Hour)})
			if err != nil || len(cs) != 1 {
				t.Fatalf("claim by the next process: %d, %v; want the delivery", len(cs), err)
			}
		})
	}
}

// waitFor waits for cond, checking every few milliseconds, for up to a
// minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
