package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
)

// TestPolicyRejectionDoesNotTripTheSharedCircuit: two subscriptions share a
// healthy URL that answers 200. One accepts only 418, so every one of its
// attempts fails by its own policy; another sends a header value Herald
// cannot send, so every attempt fails before a byte leaves. Neither says
// anything about the endpoint's health: the shared endpoint stays enabled
// with no failures, and the first subscription's deliveries go through at
// once.
func TestPolicyRejectionDoesNotTripTheSharedCircuit(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 3
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	rc := newReceiver(t, status(http.StatusOK))
	custom := map[string]any{"preset": "custom", "delays": []string{"1h"}, "max_attempts": 1}
	picky := b.subscribe(map[string]any{"name": "picky", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1h"}, "max_attempts": 1, "success_codes": []int{418}}})
	broken := b.subscribe(map[string]any{"name": "broken", "url": rc.URL + "/", "event_types": []string{"t"},
		"retry_policy": custom})
	ep := b.endpointOf(picky)
	brokenEP := b.endpointOf(broken)
	// A header Herald cannot send, written behind the API's validation.
	setHeader(t, b, broken, "X-Bad", "v\u0001\u007f")

	for i := range 6 {
		b.publish(fmt.Sprintf("e%d", i), "t")
	}
	eventually(t, "every attempt ended", func() bool {
		n := 0
		for _, sub := range []string{picky, broken} {
			for _, d := range b.deliveries(sub) {
				if d.Status == "dead_lettered" {
					n++
				}
			}
		}
		return n == 12
	})
	b.settle()
	for _, d := range b.deliveries(broken) {
		if *d.LastOutcome != "request_error" {
			t.Fatalf("the broken subscription's outcome %q, want request_error", *d.LastOutcome)
		}
	}
	for _, id := range []string{ep, brokenEP} {
		if e := b.endpoint(id); e.State != "enabled" || e.ConsecutiveFailures != 0 {
			t.Fatalf("endpoint %s after policy rejections and local errors: %+v; want enabled with no failures", id, e)
		}
	}
	if rc.count() != 6 {
		t.Fatalf("the endpoint got %d requests, want 6 (the picky subscription's)", rc.count())
	}
	// A subscription that takes 200 as success is not held back.
	plain := b.subscribe(map[string]any{"name": "plain", "url": rc.URL, "event_types": []string{"u"}})
	b.publish("u1", "u")
	b.waitDelivery(plain, "delivered at once", func(d delivery) bool { return d.Status == "delivered" })
}

// TestRedriveProbesAtOnce: with the endpoint in probation, a redrive is the
// operator saying it is fixed: the first redriven delivery goes now, as the
// probe, not when the cool-down ends; its success re-opens the circuit and
// the rest follow.
func TestRedriveProbesAtOnce(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 4
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	rc, failing := switchable(t, http.StatusInternalServerError, true)
	sub := b.subscribe(map[string]any{"name": "r", "url": rc.URL,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "max_attempts": 2}})
	ep := b.endpointOf(sub)
	b.publish("e1", "t")
	b.publish("e2", "t")
	eventually(t, "e1 and e2 attempted once", func() bool { return rc.count() == 2 })
	b.settle() // both retries scheduled
	b.clk.Set(start.Add(time.Second))
	eventually(t, "both dead-lettered", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status != "dead_lettered" {
				return false
			}
		}
		return len(b.deliveries(sub)) == 2
	})
	b.settle()
	e := b.endpoint(ep)
	if e.State != "probation" || e.NextProbeAt == nil || !e.NextProbeAt.After(start.Add(5*time.Second)) {
		t.Fatalf("after 4 failures: %+v; want probation with a cool-down ahead", e)
	}

	failing.Store(false)
	var res map[string]int
	if code, raw := b.do("POST", "/v1/dead-letters/redrive", map[string]any{"subscription_id": sub}, &res); code != http.StatusAccepted || res["redriven"] != 2 {
		t.Fatalf("redrive: %d %s", code, raw)
	}
	// The clock does not move: the cool-down is not waited for.
	eventually(t, "both delivered without the clock moving", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	if e := b.endpoint(ep); e.State != "enabled" {
		t.Fatalf("after the probe succeeded: %+v", e)
	}
	for _, d := range b.deliveries(sub) {
		as := b.attempts(d.ID)
		if last := as[len(as)-1]; !last.StartedAt.Equal(start.Add(time.Second)) {
			t.Fatalf("delivery %s was attempted at %v, want at the redrive (%v)", d.ID, last.StartedAt, start.Add(time.Second))
		}
	}
}

// TestRedeliverOfADeletedSubscriptionChangesNothing: a delivery whose
// subscription was deleted cannot be made pending again.
func TestRedeliverOfADeletedSubscriptionChangesNothing(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "gone", "url": rc.URL})
	b.publish("e1", "t")
	d := b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	if code, raw := b.do("DELETE", "/v1/subscriptions/"+sub, nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, raw)
	}
	p := problemOf(t, b, "POST", "/v1/deliveries/"+d.ID+"/redeliver", nil, http.StatusConflict)
	if p["detail"] == nil {
		t.Fatalf("problem without a detail: %v", p)
	}
	var after delivery
	b.do("GET", "/v1/deliveries/"+d.ID, nil, &after)
	if after.Status != "delivered" {
		t.Fatalf("after a refused redeliver: %s", after.Status)
	}
	if p := problemOf(t, b, "POST", "/v1/dead-letters/redrive", map[string]any{"subscription_id": sub}, http.StatusNotFound); p["field"] != "subscription_id" {
		t.Fatalf("redrive of a deleted subscription: %v; want field subscription_id", p)
	}
}

// TestChangesRacingPublishes (run with -race): publishers and two PATCH
// loops on one subscription, then its DELETE while they go on, repeated.
// Afterwards none of its deliveries is pending, and no attempt of it was
// made after the DELETE was answered: a push that arrives after it must be
// one that was already on its way and that Herald cut short (its client
// gives up on the request), never one completed.
func TestChangesRacingPublishes(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	var late []string
	deletedAt := map[string]time.Time{}
	rc := newReceiver(t, func(_ int, r *http.Request, w http.ResponseWriter) {
		sub := r.Header.Get("Herald-Subscription")
		mu.Lock()
		at, deleted := deletedAt[sub]
		mu.Unlock()
		if deleted && time.Now().After(at) {
			// Cut short by the delete: Herald has closed the request.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Second):
			}
			mu.Lock()
			late = append(late, sub+" "+r.Header.Get("Webhook-Id"))
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	})
	for round := range 4 {
		sub := b.subscribe(map[string]any{"name": fmt.Sprintf("race-%d", round), "url": rc.URL, "event_types": []string{"a"}})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var published atomic.Int64
		loop := func(step func(i int)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					step(i)
				}
			}()
		}
		for p := range 3 {
			loop(func(i int) {
				b.publish(fmt.Sprintf("r%d-p%d-%d", round, p, i), "a")
				published.Add(1)
			})
		}
		for k := range 2 {
			loop(func(i int) {
				types := []string{"a", fmt.Sprintf("x%d-%d", k, i)}
				if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, map[string]any{"event_types": types}, nil); code != http.StatusOK && code != http.StatusNotFound {
					t.Errorf("PATCH: %d %s", code, raw)
				}
			})
		}
		eventually(t, "publishes under way", func() bool { return published.Load() >= 50 })
		if code, raw := b.do("DELETE", "/v1/subscriptions/"+sub, nil, nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d %s", code, raw)
		}
		mu.Lock()
		deletedAt[sub] = time.Now()
		mu.Unlock()
		after := published.Load()
		eventually(t, "publishes after the delete", func() bool { return published.Load() >= after+20 })
		close(stop)
		wg.Wait()
		eventually(t, "nothing pending for the deleted subscription", func() bool {
			for _, d := range b.deliveries(sub) {
				if d.Status == "pending" || d.Status == "queued" {
					return false
				}
			}
			return true
		})
	}
	b.settle()
	mu.Lock()
	defer mu.Unlock()
	if len(late) > 0 {
		t.Fatalf("%d pushes of deleted subscriptions arrived after the DELETE answered, e.g. %v", len(late), late[0])
	}
}

// TestPatchSeenByTheNextPublish: a publish answered after a PATCH that adds
// a type is matched against it.
func TestPatchSeenByTheNextPublish(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "p", "url": rc.URL, "event_types": []string{"a"}})
	for i := range 20 {
		typ := fmt.Sprintf("t%d", i)
		if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, map[string]any{"event_types": []string{typ}}, nil); code != http.StatusOK {
			t.Fatalf("PATCH: %d %s", code, raw)
		}
		var res struct {
			Events []struct{ Deliveries int } `json:"events"`
		}
		ev := map[string]any{"specversion": "1.0", "id": typ, "source": "/t", "type": typ}
		if code, raw := b.do("POST", "/v1/events", ev, &res); code != http.StatusAccepted || res.Events[0].Deliveries != 1 {
			t.Fatalf("publish of %s right after the PATCH: %d %s", typ, code, raw)
		}
	}
}

// setHeader stores a custom header on a subscription directly in the store
// (as an earlier version, or another tool, could have), bypassing the API's
// validation, and brings the catalog up to date.
func setHeader(t *testing.T, b *bundle, subID, name, value string) {
	t.Helper()
	ctx := context.Background()
	sub, err := b.srv.Store.GetSubscription(ctx, subID)
	if err != nil {
		t.Fatal(err)
	}
	sub.Headers = map[string]string{name: value}
	if err := b.srv.Store.UpdateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if err := b.srv.Catalog.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}
