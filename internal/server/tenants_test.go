package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/subscription"
)

// TestSmallPublishNotHeldBehindFanout (one tenant cannot stall another):
// account A has 10,000 pull subscriptions of one type and publishes, from
// two clients at once, two events each that match all of them (10,000
// deliveries a request), while account B publishes one event at a time.
// B's publishes do not wait for A's fan-outs to commit: the
// SQLite writer writes each fan-out in steps with B's publishes between
// them, and on PostgreSQL a fan-out has a writer of its own. So B's p99,
// while A publishes, is a small part of an A request's time: a bound
// relative to the same run, so that it holds under -race and on a busy
// machine. It logs B's p99 alone, just before, beside B's p99 while A
// publishes; the absolute figure (under 100 ms) is measured with the
// command in docs/benchmarks.md, not asserted here. Before,
// B's publish waited for whole fan-outs: its p99 was about an A request's
// time (11.4 s for a publish of 20 such events). It is in the package's
// last file: on PostgreSQL what it writes keeps the server busy for a while
// after it, and the tests with tight timing before it are spared that.
func TestSmallPublishNotHeldBehindFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10,000 subscriptions and publishes 40,000 deliveries")
	}
	b := setup(t)
	a, other := newTenant(b, "a"), newTenant(b, "b")
	if code, raw := b.doAs(other.accountKey, "POST", "/v1/subscriptions",
		map[string]any{"name": "b", "delivery_mode": "pull", "event_types": []string{"x"}}, nil); code != http.StatusCreated {
		t.Fatalf("B's subscription: %d %s", code, raw)
	}
	const subs = 10_000
	createFanout(t, b, a.id, subs, nil)

	r := &fanoutRun{t: t, b: b}
	stop, bDone := make(chan struct{}), make(chan struct{})
	go r.publishSmall(other, stop, bDone)
	// B alone first: what this machine makes of its publishes now.
	eventually(t, "50 of B's publishes before A publishes", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.small) >= 50
	})
	r.publishFanouts(a, subs)
	close(stop)
	<-bDone
	if t.Failed() {
		return
	}
	r.check(subs)
}

// createFanout gives account n pull subscriptions to type x with these
// advanced filters (nil: none), straight into the store (through the API
// they would take minutes under -race), then into the catalog.
func createFanout(t *testing.T, b *bundle, account string, n int, filters []byte) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 16 {
				now := time.Now()
				if err := b.srv.Store.CreateSubscription(ctx, subscription.Subscription{ID: ids.New("sub_", now), AccountID: account,
					Name: fmt.Sprint("fan-", i), DeliveryMode: subscription.ModePull, EventTypes: []string{"x"}, State: subscription.StateActive,
					FailurePolicy: subscription.FailureRetry, RetryPolicy: []byte(`{"preset":"eventgrid"}`), CreatedAt: now, UpdatedAt: now,
					Filters: subscription.FilterOptions{Advanced: filters}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := b.srv.Catalog.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// span is when one publish request started and ended.
type span struct{ start, end time.Time }

// fanoutRun records the publishes of TestSmallPublishNotHeldBehindFanout.
type fanoutRun struct {
	t       *testing.T
	b       *bundle
	mu      sync.Mutex
	small   []span // B's publishes
	fanouts []span // A's
}

// publishSmall publishes B's events of type x one at a time until stop is
// closed, then closes done.
func (r *fanoutRun) publishSmall(other tenant, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		start := time.Now()
		ev := map[string]any{"specversion": "1.0", "id": fmt.Sprint("b-", i), "source": "/b", "type": "x"}
		if code, raw := r.b.doAs(other.pubKey, "POST", "/v1/events", ev, nil); code != http.StatusAccepted {
			r.t.Errorf("B's publish: %d %s", code, raw)
			return
		}
		r.mu.Lock()
		r.small = append(r.small, span{start, time.Now()})
		r.mu.Unlock()
	}
}

// publishFanouts publishes, from two clients at once, two events each of
// account a, each matching all subs of its subscriptions, and returns when
// they are accepted.
func (r *fanoutRun) publishFanouts(a tenant, subs int) {
	var aw sync.WaitGroup
	for c := range 2 {
		aw.Add(1)
		go func() {
			defer aw.Done()
			for i := range 2 {
				start := time.Now()
				var res struct{ Events []struct{ Deliveries int } }
				ev := map[string]any{"specversion": "1.0", "id": fmt.Sprint("a-", c, "-", i), "source": "/a", "type": "x"}
				if code, raw := r.b.doAs(a.pubKey, "POST", "/v1/events", ev, &res); code != http.StatusAccepted || res.Events[0].Deliveries != subs {
					r.t.Errorf("A's publish: %d %.300s; want 202 and %d deliveries", code, raw, subs)
					return
				}
				r.mu.Lock()
				r.fanouts = append(r.fanouts, span{start, time.Now()})
				r.mu.Unlock()
			}
		}()
	}
	aw.Wait()
}

// check compares B's publishes made while A's were in flight with A's: at
// least 10 were made, and their p99 is at most a quarter of an A request's
// median time. It logs B's p99 alone, before A published, beside them.
func (r *fanoutRun) check(subs int) {
	t := r.t
	from, to := r.fanouts[0].start, r.fanouts[0].end
	var aTimes []time.Duration
	for _, s := range r.fanouts {
		if s.start.Before(from) {
			from = s.start
		}
		if s.end.After(to) {
			to = s.end
		}
		aTimes = append(aTimes, s.end.Sub(s.start))
	}
	var lat, alone []time.Duration
	for _, s := range r.small {
		switch {
		case s.end.Before(from):
			alone = append(alone, s.end.Sub(s.start))
		case !s.start.Before(from) && !s.end.After(to):
			lat = append(lat, s.end.Sub(s.start))
		}
	}
	slices.Sort(lat)
	slices.Sort(alone)
	slices.Sort(aTimes)
	if len(lat) < 10 {
		// Each takes a few milliseconds alone: so few means they waited.
		t.Fatalf("only %d of B's publishes were made while A published for %v: B's publishes wait for A's fan-outs",
			len(lat), to.Sub(from))
	}
	p50, p99, aMedian := lat[len(lat)/2], lat[len(lat)*99/100], aTimes[len(aTimes)/2]
	aloneP99 := alone[len(alone)*99/100]
	t.Logf("B: %d publishes while A's 4 fan-outs of %d deliveries ran (%v; an A request's median %v): p50 %v, p99 %v, max %v; alone before: p99 %v of %d",
		len(lat), subs, to.Sub(from).Round(time.Millisecond), aMedian.Round(time.Millisecond), p50, p99, lat[len(lat)-1], aloneP99, len(alone))
	if p99 > aMedian/4 {
		t.Errorf("B's p99 %v is more than a quarter of an A request's median time %v: B's publishes wait for A's fan-outs", p99, aMedian)
	}
}
