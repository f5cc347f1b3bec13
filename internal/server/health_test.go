package server_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
)

func TestDisabledEndpointProbesEveryIntervalThenBacklogFlows(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 0
	cfg.DisableConsecutive = 3
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	ops := b.opsReceiver("herald.endpoint.disabled", "herald.endpoint.enabled")
	rc, failing := switchable(t, http.StatusServiceUnavailable, true)
	sub := b.subscribe(map[string]any{"name": "flaky", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "24h"}})
	ep := b.endpointOf(sub)

	for i := 0; i < 3; i++ {
		b.publish("e"+strconv.Itoa(i), "t")
	}
	eventually(t, "disabled after 3 failures", func() bool { return b.endpoint(ep).State == "disabled" })
	e := b.endpoint(ep)
	if e.ConsecutiveFailures != 3 || e.NextProbeAt == nil || !e.NextProbeAt.Equal(start.Add(10*time.Minute)) {
		t.Fatalf("disabled endpoint: %+v", e)
	}
	// More events while disabled: held, no attempt.
	for i := 3; i < 8; i++ {
		b.publish("e"+strconv.Itoa(i), "t")
	}
	// Nothing in flight before the move (the disabled event's push among
	// them): the move would end its lease, the loader would claim it
	// again and ops would count it twice (CI saw it once on PostgreSQL).
	b.settle()
	b.clk.Advance(9 * time.Minute) // every retry is due, but the circuit is open... for probes only
	b.settle()
	if rc.count() != 3 {
		t.Fatalf("a disabled endpoint got %d requests before its probe time, want 3", rc.count())
	}

	// Probes every 10 minutes, one at a time.
	for probe := 1; probe <= 2; probe++ {
		b.clk.Set(start.Add(time.Duration(probe) * 10 * time.Minute))
		eventually(t, "probe", func() bool { return rc.count() == 3+probe })
		b.settle()
		if rc.count() != 3+probe {
			t.Fatalf("probe %d: %d requests, want %d", probe, rc.count(), 3+probe)
		}
		e := b.endpoint(ep)
		if e.State != "disabled" || !e.NextProbeAt.Equal(start.Add(time.Duration(probe+1)*10*time.Minute)) {
			t.Fatalf("after failed probe %d: %+v", probe, e)
		}
	}

	failing.Store(false)
	b.clk.Set(start.Add(30 * time.Minute))
	eventually(t, "re-enabled and the backlog delivered", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	if e := b.endpoint(ep); e.State != "enabled" || e.ConsecutiveFailures != 0 {
		t.Fatalf("after a successful probe: %+v", e)
	}
	eventually(t, "operational events", func() bool { return ops.count() == 2 })
	evs := opsEvents(t, ops)
	if evs[0]["type"] != "herald.endpoint.disabled" || evs[1]["type"] != "herald.endpoint.enabled" || evs[0]["source"] != "/herald" {
		t.Fatalf("operational events: %v", evs)
	}
	data := evs[0]["data"].(map[string]any)
	if data["url"] != rc.URL || data["endpoint_id"] != ep || data["reason"] != "3 consecutive failures" {
		t.Fatalf("disabled event data: %v", data)
	}
}

func TestFrozenEndpointWaitsForTheAPI(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 0
	cfg.FreezeConsecutive = 4
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	rc, failing := switchable(t, http.StatusInternalServerError, true)
	sub := b.subscribe(map[string]any{"name": "dead", "url": rc.URL,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1m"}, "ttl": "720h"}})
	ep := b.endpointOf(sub)
	for i := 0; i < 4; i++ {
		b.publish("e"+strconv.Itoa(i), "t")
	}
	eventually(t, "frozen", func() bool { return b.endpoint(ep).State == "frozen" })
	for day := 1; day <= 5; day++ {
		b.clk.Advance(24 * time.Hour)
		b.settle()
	}
	if rc.count() != 4 {
		t.Fatalf("a frozen endpoint got %d requests in 5 days, want only the 4 before it froze", rc.count())
	}
	failing.Store(false)
	var e endpointRes
	if code, raw := b.do("POST", "/v1/endpoints/"+ep+"/enable", nil, &e); code != 200 || e.State != "enabled" || e.ConsecutiveFailures != 0 {
		t.Fatalf("enable: %d %s", code, raw)
	}
	eventually(t, "the held deliveries delivered", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	problemOf(t, b, "POST", "/v1/endpoints/ep_missing/enable", nil, http.StatusNotFound)
}

func TestProbationDoublesOnFailedProbes(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 2
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	rc, failing := switchable(t, http.StatusInternalServerError, true)
	sub := b.subscribe(map[string]any{"name": "p", "url": rc.URL,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "1h"}})
	ep := b.endpointOf(sub)
	b.publish("e1", "t")
	d := b.waitDelivery(sub, "first attempt", func(d delivery) bool { return d.Attempts == 1 })
	b.clk.Set(start.Add(time.Second))
	b.waitDelivery(sub, "second attempt", func(d delivery) bool { return d.Attempts == 2 })
	if e := b.endpoint(ep); e.State != "probation" || *e.ProbationDelay != "10s" {
		t.Fatalf("after 2 failures: %+v", e)
	}
	// The retry is due at +2s but waits for the probe at +11s, then the
	// cool-down doubles: probes at +11s, +31s, +71s.
	b.clk.Set(start.Add(2 * time.Second))
	b.settle()
	if rc.count() != 2 {
		t.Fatalf("an attempt went out during the cool-down")
	}
	for i, at := range []time.Duration{11, 31} {
		b.clk.Set(start.Add(at * time.Second))
		b.waitDelivery(sub, "probe", func(d delivery) bool { return d.Attempts == 3+i })
	}
	if e := b.endpoint(ep); *e.ProbationDelay != "40s" || !e.NextProbeAt.Equal(start.Add(71*time.Second)) {
		t.Fatalf("after two failed probes: %+v", e)
	}
	failing.Store(false)
	b.clk.Set(start.Add(71 * time.Second))
	b.waitDelivery(sub, "delivered by the probe", func(d delivery) bool { return d.Status == "delivered" })
	var starts []time.Duration
	for _, a := range b.attempts(d.ID) {
		starts = append(starts, a.StartedAt.Sub(start))
	}
	want := []time.Duration{0, time.Second, 11 * time.Second, 31 * time.Second, 71 * time.Second}
	if len(starts) != len(want) {
		t.Fatalf("attempts at %v, want %v", starts, want)
	}
	for i := range want {
		if starts[i] != want[i] {
			t.Fatalf("attempts at %v, want %v", starts, want)
		}
	}
	if e := b.endpoint(ep); e.State != "enabled" {
		t.Fatalf("a successful probe ends probation: %+v", e)
	}
}

func TestGoneDisablesAndNotifies(t *testing.T) {
	b := setup(t)
	ops := b.opsReceiver("herald.endpoint.disabled", "herald.delivery.dead_lettered")
	rc := newReceiver(t, status(http.StatusGone))
	sub := b.subscribe(map[string]any{"name": "gone", "url": rc.URL, "event_types": []string{"t"}})
	ep := b.endpointOf(sub)
	b.publish("e1", "t")
	eventually(t, "disabled by 410", func() bool { return b.endpoint(ep).State == "disabled" })
	if e := b.endpoint(ep); e.ConsecutiveFailures != 1 || !e.NextProbeAt.Equal(start.Add(10*time.Minute)) ||
		e.StateReason == nil || *e.StateReason != "410 Gone" {
		t.Fatalf("after 410: %+v", e)
	}
	eventually(t, "disabled event", func() bool { return ops.count() == 1 })
	data := opsEvents(t, ops)[0]["data"].(map[string]any)
	if data["reason"] != "410 Gone" {
		t.Fatalf("event data: %v", data)
	}
}

func TestDeadLetterEventNamesTheDelivery(t *testing.T) {
	b := setup(t)
	ops := b.opsReceiver("herald.delivery.dead_lettered")
	rc := newReceiver(t, status(http.StatusNotFound))
	sub := b.subscribe(map[string]any{"name": "nf", "url": rc.URL, "event_types": []string{"t"}})
	b.publish("e1", "t")
	d := b.waitDelivery(sub, "dead-lettered", func(d delivery) bool { return d.Status == "dead_lettered" })
	eventually(t, "dead-letter event", func() bool { return ops.count() == 1 })
	ev := opsEvents(t, ops)[0]
	data := ev["data"].(map[string]any)
	if ev["type"] != "herald.delivery.dead_lettered" || data["delivery_id"] != d.ID || data["subscription_id"] != sub ||
		data["event_id"] != "e1" || data["dead_letter_reason"] != "NonRetriableStatus" || data["url"] != rc.URL {
		t.Fatalf("dead-letter event: %v", ev)
	}
}

func TestCatchAllSubscriptionGetsNoOperationalEvents(t *testing.T) {
	b := setup(t)
	all := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "all", "url": all.URL})
	gone := newReceiver(t, status(http.StatusGone))
	b.subscribe(map[string]any{"name": "gone", "url": gone.URL, "event_types": []string{"t"}})
	b.publish("e1", "t")
	b.publish("e2", "other")
	eventually(t, "the catch-all deliveries", func() bool { return all.count() >= 2 })
	b.settle()
	if all.count() != 2 {
		t.Fatalf("the catch-all subscription got %d events; operational events must be asked for by type", all.count())
	}
}

// TestAdaptiveConcurrency: an endpoint's limit starts at 8, does not grow
// while nothing waits for it (deliveries one at a time), and halves at a
// failure. Growth with a backlog, and the exchange times' part, are the
// scheduler's tests (internal/scheduling/testdata/sched_limit*).
func TestAdaptiveConcurrency(t *testing.T) {
	b := setup(t)
	rc, failing := switchable(t, http.StatusInternalServerError, false)
	sub := b.subscribe(map[string]any{"name": "a", "url": rc.URL})
	ep := b.endpointOf(sub)
	if e := b.endpoint(ep); e.ConcurrencyLimit != nil && *e.ConcurrencyLimit != 8 {
		t.Fatalf("initial limit %v", *e.ConcurrencyLimit)
	}
	for i := range 20 {
		b.publish("ok"+strconv.Itoa(i), "t")
		eventually(t, "the delivery", func() bool { return rc.count() == i+1 })
	}
	b.settle()
	if e := b.endpoint(ep); *e.ConcurrencyLimit != 8 {
		t.Fatalf("after 20 successes one at a time the limit is %d, want 8: nothing waited for it", *e.ConcurrencyLimit)
	}
	failing.Store(true)
	b.publish("bad", "t")
	eventually(t, "the failure", func() bool { return rc.count() == 21 })
	b.settle()
	if e := b.endpoint(ep); *e.ConcurrencyLimit != 4 {
		t.Fatalf("after a failure the limit is %d, want 8/2", *e.ConcurrencyLimit)
	}
}

func TestTTLRunsWhileDisabled(t *testing.T) {
	cfg := health.DefaultConfig()
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	rc, failing := switchable(t, http.StatusGone, true)
	sub := b.subscribe(map[string]any{"name": "ttl", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "15m"}})
	ep := b.endpointOf(sub)
	b.publish("e1", "t") // 410: disabled; retry due at +1s but held
	eventually(t, "disabled", func() bool { return b.endpoint(ep).State == "disabled" })
	b.clk.Set(start.Add(5 * time.Minute))
	b.publish("e2", "t") // held from the start; its ttl ends at +20m
	failing.Store(false)
	b.clk.Set(start.Add(20 * time.Minute)) // e1's ttl (15m) has passed; e2's has too (20m)
	eventually(t, "both ended", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status == "pending" {
				return false
			}
		}
		return true
	})
	for _, d := range b.deliveries(sub) {
		if d.Status != "dead_lettered" || *d.DeadLetterReason != "TimeToLiveExceeded" {
			t.Fatalf("held past its ttl: %+v", d)
		}
	}
	if rc.count() != 1 {
		t.Fatalf("expired deliveries were sent: %d requests", rc.count())
	}
}

func TestHealthSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	rc := newReceiver(t, status(http.StatusGone))
	b := setup(t, func(c *server.Config) { c.DataDir = dir })
	sub := b.subscribe(map[string]any{"name": "gone", "url": rc.URL})
	ep := b.endpointOf(sub)
	b.publish("e1", "t")
	eventually(t, "disabled", func() bool { return b.endpoint(ep).State == "disabled" })
	b.api.Close()
	if err := b.srv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	b2 := setup(t, func(c *server.Config) { c.DataDir, c.Store = dir, b.cfg.Store })
	if e := b2.endpoint(ep); e.State != "disabled" || e.ConsecutiveFailures != 1 || !e.NextProbeAt.Equal(start.Add(10*time.Minute)) {
		t.Fatalf("after restart: %+v", e)
	}
}

// switchable is a receiver that answers failCode while failing is set, and
// 200 otherwise.
func switchable(t *testing.T, failCode int, failNow bool) (*receiver, *atomic.Bool) {
	failing := new(atomic.Bool)
	failing.Store(failNow)
	rc := newReceiver(t, func(_ int, _ *http.Request, w http.ResponseWriter) {
		if failing.Load() {
			w.WriteHeader(failCode)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return rc, failing
}
