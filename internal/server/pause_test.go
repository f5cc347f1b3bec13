package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// Pausing by hand: a push subscription deactivated (its deliveries queue)
// and reactivated; an endpoint frozen (no attempt) and enabled. Each
// resource shows why it is in its state (state_reason), and its updated_at
// moves with every change of state.

// TestDeactivateByHandQueuesUntilReactivated: deactivate makes an active
// push subscription queue what is published (nothing is pushed), says why,
// moves updated_at and announces it; a second deactivate changes nothing;
// reactivate pushes the queue and what comes after. A pull subscription is
// refused with 409 saying why, an unknown one 404.
func TestDeactivateByHandQueuesUntilReactivated(t *testing.T) {
	b := setup(t)
	ops := b.opsReceiver("herald.subscription.deactivated")
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "paused", "url": rc.URL, "event_types": []string{"t"}})
	if s := subStateOf(b, sub); s.State != "active" || s.StateReason != nil || !s.UpdatedAt.Equal(start) {
		t.Fatalf("a new subscription: %+v", s)
	}

	b.clk.Set(start.Add(time.Minute))
	var s subState
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/deactivate", nil, &s); code != 200 || s.State != "deactivated" ||
		s.StateReason == nil || *s.StateReason != "deactivated by hand" || !s.UpdatedAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("deactivate: %d %s", code, raw)
	}
	b.clk.Set(start.Add(2 * time.Minute))
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/deactivate", nil, &s); code != 200 || s.State != "deactivated" ||
		!s.UpdatedAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("deactivate a deactivated subscription: %d %s; want it as it was", code, raw)
	}
	b.publish("e1", "t")
	b.publish("e2", "t")
	b.settle()
	if rc.count() != 0 {
		t.Fatalf("a subscription deactivated by hand pushed %d requests", rc.count())
	}
	var queued []string
	for _, d := range b.deliveries(sub) {
		if d.Status != "queued" || d.Attempts != 0 {
			t.Fatalf("a delivery of a deactivated subscription: %+v; want queued, never attempted", d)
		}
		queued = append(queued, d.ID)
	}
	eventually(t, "the deactivation announced", func() bool { return ops.count() == 1 })
	if data := opsEvents(t, ops)[0]["data"].(map[string]any); data["subscription_id"] != sub || data["reason"] != "deactivated by hand" {
		t.Fatalf("herald.subscription.deactivated data: %v", data)
	}

	b.clk.Set(start.Add(3 * time.Minute))
	var re struct {
		subState
		Requeued int `json:"requeued"`
	}
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/reactivate", nil, &re); code != 200 || re.State != "active" ||
		re.Requeued != 2 || re.StateReason == nil || *re.StateReason != "reactivated by hand" || !re.UpdatedAt.Equal(start.Add(3*time.Minute)) {
		t.Fatalf("reactivate: %d %s", code, raw)
	}
	eventually(t, "the queued deliveries delivered", func() bool { return len(queued) == 2 && delivered(b, sub, queued) })
	b.publish("e3", "t")
	eventually(t, "a new event pushed at once", func() bool { return rc.count() == 3 })

	var pull struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "puller", "delivery_mode": "pull"}, &pull); code != 201 {
		t.Fatalf("create pull: %d %s", code, raw)
	}
	if p := problemOf(t, b, "POST", "/v1/subscriptions/"+pull.ID+"/deactivate", nil, http.StatusConflict); !strings.Contains(p["detail"].(string), "pull subscription") {
		t.Fatalf("deactivate a pull subscription: %v", p)
	}
	if s := subStateOf(b, pull.ID); s.State != "active" || s.StateReason != nil {
		t.Fatalf("a pull subscription after a refused deactivate: %+v", s)
	}
	problemOf(t, b, "POST", "/v1/subscriptions/sub_missing/deactivate", nil, http.StatusNotFound)
}

// TestFreezeByHandHoldsUntilEnable: a frozen endpoint gets no attempt while
// the clock moves past every probe and probation time, a redeliver
// included; its deliveries stay pending with no attempt and no failure,
// and it says why it is frozen. Enable sends them.
func TestFreezeByHandHoldsUntilEnable(t *testing.T) {
	cfg := health.DefaultConfig()
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	ops := b.opsReceiver("herald.endpoint.frozen")
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "held", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "720h"}})
	ep := b.endpointOf(sub)
	b.publish("e0", "t")
	b.waitDelivery(sub, "the first delivery", func(d delivery) bool { return d.Status == "delivered" })
	b.settle()

	at := start.Add(time.Minute)
	b.clk.Set(at)
	b.settle() // the health sync merged e0's outcome: nothing more to save
	var e endpointRes
	if code, raw := b.do("POST", "/v1/endpoints/"+ep+"/freeze", nil, &e); code != 200 || e.State != "frozen" ||
		e.StateReason == nil || *e.StateReason != "frozen by hand" || e.FrozenAt == nil || !e.FrozenAt.Equal(at) ||
		e.NextProbeAt != nil || e.UpdatedAt == nil || e.UpdatedAt.Before(at) {
		t.Fatalf("freeze: %d %s", code, raw)
	}
	frozenAt := *e.UpdatedAt // as the freeze saved it
	if code, raw := b.do("POST", "/v1/endpoints/"+ep+"/freeze", nil, &e); code != 200 || e.State != "frozen" || !e.UpdatedAt.Equal(frozenAt) {
		t.Fatalf("freeze a frozen endpoint: %d %s; want it as it was", code, raw)
	}
	for i := 1; i <= 3; i++ {
		b.publish("e"+strconv.Itoa(i), "t")
	}
	b.settle()
	held := b.deliveries(sub)[0] // the newest
	if code, raw := b.do("POST", "/v1/deliveries/"+held.ID+"/redeliver", nil, nil); code != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", code, raw)
	}
	// Past the probation cool-downs, the probe interval, the freeze rule's
	// staleness and a week.
	for _, d := range []time.Duration{10 * time.Second, 5 * time.Minute, cfg.ProbeInterval, time.Hour, cfg.FreezeStaleAfter, 7 * 24 * time.Hour} {
		b.clk.Advance(d)
		b.settle()
	}
	if rc.count() != 1 {
		t.Fatalf("a frozen endpoint got %d requests, want only the one before it froze", rc.count())
	}
	var heldIDs []string // e0's may be cleaned up by now: the clock moved past its retention
	for _, d := range b.deliveries(sub)[:3] {
		if d.Status != "pending" || d.Attempts != 0 {
			t.Fatalf("a delivery behind a frozen endpoint: %+v; want pending, never attempted", d)
		}
		heldIDs = append(heldIDs, d.ID)
	}
	if e := b.endpoint(ep); e.State != "frozen" || *e.StateReason != "frozen by hand" || e.ConsecutiveFailures != 0 {
		t.Fatalf("the endpoint a week later: %+v", e)
	}
	eventually(t, "the freeze announced", func() bool { return ops.count() == 1 })
	if data := opsEvents(t, ops)[0]["data"].(map[string]any); data["endpoint_id"] != ep || data["reason"] != "frozen by hand" {
		t.Fatalf("herald.endpoint.frozen data: %v", data)
	}

	if code, raw := b.do("POST", "/v1/endpoints/"+ep+"/enable", nil, &e); code != 200 || e.State != "enabled" ||
		*e.StateReason != "enabled by hand" || !e.UpdatedAt.Equal(b.clk.Now().Truncate(time.Millisecond)) {
		t.Fatalf("enable: %d %s", code, raw)
	}
	eventually(t, "the held deliveries delivered", func() bool { return rc.count() == 4 && delivered(b, sub, heldIDs) })
	problemOf(t, b, "POST", "/v1/endpoints/ep_missing/freeze", nil, http.StatusNotFound)
}

// TestStateReasonsAndUpdatedAtFollowTheCircuit: a real failure run shows
// its reason on the endpoint, and every circuit transition (disabled by
// failures, enabled by a successful probe, frozen and enabled by hand)
// moves updated_at.
func TestStateReasonsAndUpdatedAtFollowTheCircuit(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 0
	cfg.DisableConsecutive = 3
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	rc, failing := switchable(t, http.StatusServiceUnavailable, true)
	sub := b.subscribe(map[string]any{"name": "flaky", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "24h"}})
	ep := b.endpointOf(sub)
	if e := b.endpoint(ep); e.State != "enabled" || e.StateReason != nil || e.UpdatedAt != nil {
		t.Fatalf("a new endpoint: %+v", e)
	}
	var last time.Time
	moved := func(what string, e endpointRes) {
		t.Helper()
		if e.UpdatedAt == nil || !e.UpdatedAt.After(last) {
			t.Fatalf("%s: updated_at %v, want after %v", what, e.UpdatedAt, last)
		}
		last = *e.UpdatedAt
	}
	for i := 0; i < 3; i++ {
		b.publish("e"+strconv.Itoa(i), "t")
	}
	eventually(t, "disabled after 3 failures, and saved", func() bool { return storedState(b, ep) == "disabled" })
	b.settle()
	e := b.endpoint(ep)
	if e.StateReason == nil || *e.StateReason != "3 consecutive failures" {
		t.Fatalf("disabled by failures: %+v", e)
	}
	moved("disabled", e)

	failing.Store(false)
	b.clk.Set(start.Add(cfg.ProbeInterval))
	eventually(t, "enabled by the probe, and saved", func() bool { return storedState(b, ep) == "enabled" })
	b.settle() // the health sync adopted what it saved
	if e = b.endpoint(ep); *e.StateReason != "a delivery succeeded" {
		t.Fatalf("enabled by a probe: %+v", e)
	}
	moved("enabled by a probe", e)

	b.clk.Advance(time.Minute)
	b.do("POST", "/v1/endpoints/"+ep+"/freeze", nil, &e)
	moved("frozen by hand", e)
	b.clk.Advance(time.Minute)
	b.do("POST", "/v1/endpoints/"+ep+"/enable", nil, &e)
	moved("enabled by hand", e)
	if stored, err := b.srv.Store.GetEndpoint(t.Context(), ep); err != nil || stored.Health.Reason != "enabled by hand" ||
		!stored.UpdatedAt.Equal(last) {
		t.Fatalf("stored: %+v, %v", stored, err)
	}
}

// delivered reports whether every one of the subscription's deliveries ids
// is delivered.
func delivered(b *bundle, sub string, ids []string) bool {
	status := map[string]string{}
	for _, d := range b.deliveries(sub) {
		status[d.ID] = d.Status
	}
	for _, id := range ids {
		if status[id] != "delivered" {
			return false
		}
	}
	return true
}

// storedState is an endpoint's state in the store (what every node adopts).
func storedState(b *bundle, ep string) string {
	b.t.Helper()
	e, err := b.srv.Store.GetEndpoint(b.t.Context(), ep)
	if err != nil {
		b.t.Fatal(err)
	}
	return string(e.Health.State)
}

// TestAutomaticDeactivationSaysWhy: a subscription Herald deactivates
// (failure_policy queue) shows the reason and an updated_at that moved.
func TestAutomaticDeactivationSaysWhy(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusServiceUnavailable))
	sub := b.subscribe(map[string]any{"name": "q", "url": rc.URL, "failure_policy": "queue"})
	b.clk.Set(start.Add(time.Minute))
	b.publish("e1", "t")
	b.waitDelivery(sub, "queued after one failure", func(d delivery) bool { return d.Status == "queued" })
	if s := subStateOf(b, sub); s.State != "deactivated" || s.StateReason == nil ||
		*s.StateReason != "a push failed (failure_policy queue)" || !s.UpdatedAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("deactivated by a failed push: %+v", s)
	}
}

// TestPauseHoldsEveryNode: two processes on one PostgreSQL database. An
// endpoint frozen through node A gets no attempt from node B once B's
// health sync adopts the change (its next round, or at once on the store's
// announcement); a subscription deactivated through A queues what is
// published through B. Enable and reactivate through B send everything.
func TestPauseHoldsEveryNode(t *testing.T) {
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) { c.Store = url; c.CatalogReload = time.Second }
	a := setup(t, onPG)
	b := setup(t, onPG)
	rc := newReceiver(t, status(http.StatusOK))
	sub := a.subscribe(map[string]any{"name": "shared", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "720h"}})
	ep := a.endpointOf(sub)
	b.clk.Advance(time.Second)
	eventually(t, "node B knows the subscription", func() bool { return b.srv.Catalog.Get(sub) != nil })
	b.publish("e0", "t") // B's lane learns the endpoint
	eventually(t, "node B delivers", func() bool { return rc.count() == 1 })
	b.settle()

	var e endpointRes
	if code, raw := a.do("POST", "/v1/endpoints/"+ep+"/freeze", nil, &e); code != 200 || e.State != "frozen" {
		t.Fatalf("freeze on A: %d %s", code, raw)
	}
	b.clk.Advance(time.Second)
	eventually(t, "node B sees it frozen", func() bool { return b.endpoint(ep).State == "frozen" })
	b.publish("e1", "t")
	for _, n := range []*bundle{a, b} {
		n.clk.Advance(time.Hour)
		n.settle()
	}
	if rc.count() != 1 {
		t.Fatalf("a frozen endpoint got %d requests across the nodes, want 1", rc.count())
	}
	if code, raw := b.do("POST", "/v1/endpoints/"+ep+"/enable", nil, &e); code != 200 || e.State != "enabled" {
		t.Fatalf("enable on B: %d %s", code, raw)
	}
	eventually(t, "the held delivery sent", func() bool { return rc.count() == 2 })
	// Its outcome recorded before the deactivation: a deactivation queues
	// what is still pending, and the receiver's count moves before the
	// sender's recorder commits.
	eventually(t, "the held delivery recorded as delivered", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})

	if code, raw := a.do("POST", "/v1/subscriptions/"+sub+"/deactivate", nil, nil); code != 200 {
		t.Fatalf("deactivate on A: %d %s", code, raw)
	}
	b.publish("e2", "t")
	b.settle()
	a.settle()
	if d := b.deliveries(sub)[0]; d.EventID != "e2" || d.Status != "queued" || rc.count() != 2 {
		t.Fatalf("published on B after a deactivation on A: %+v (%d requests); want queued", d, rc.count())
	}
	var re struct{ Requeued int }
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/reactivate", nil, &re); code != 200 || re.Requeued != 1 {
		t.Fatalf("reactivate on B: %d %s", code, raw)
	}
	eventually(t, "the queued delivery sent", func() bool { return rc.count() == 3 })
}
