package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// rateLimitRes is the endpoint resource's rate_limit.
type rateLimitRes struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// endpointRateLimit reads an endpoint's rate_limit through GET and through
// the list (they must agree): nil when null.
func endpointRateLimit(b *bundle, id string) *rateLimitRes {
	b.t.Helper()
	var one struct {
		RateLimit *rateLimitRes `json:"rate_limit"`
	}
	raw := mustDo(b, "GET", "/v1/endpoints/"+id, nil, &one)
	if !strings.Contains(string(raw), `"rate_limit":`) {
		b.t.Fatalf("the endpoint resource has no rate_limit member: %s", raw)
	}
	var page struct {
		Data []struct {
			ID        string        `json:"id"`
			RateLimit *rateLimitRes `json:"rate_limit"`
		} `json:"data"`
	}
	mustDo(b, "GET", "/v1/endpoints", nil, &page)
	for _, e := range page.Data {
		if e.ID == id {
			if (e.RateLimit == nil) != (one.RateLimit == nil) || e.RateLimit != nil && *e.RateLimit != *one.RateLimit {
				b.t.Fatalf("GET shows the rate limit %+v, the list %+v", one.RateLimit, e.RateLimit)
			}
			return one.RateLimit
		}
	}
	b.t.Fatalf("endpoint %s is not listed", id)
	return nil
}

func mustDo(b *bundle, method, path string, in, out any) []byte {
	b.t.Helper()
	code, raw := b.do(method, path, in, out)
	if code != http.StatusOK {
		b.t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
	return raw
}

// TestEndpointRateLimitPatch: PATCH /v1/endpoints/{id} sets the rate
// limit, which GET and the list show; a bad value answers 400 naming the
// field and changes nothing; an absent rate_limit changes nothing; null
// removes it; an unknown endpoint is 404.
func TestEndpointRateLimitPatch(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	ep := b.endpointOf(b.subscribe(map[string]any{"name": "a", "url": rc.URL}))
	path := "/v1/endpoints/" + ep
	if got := endpointRateLimit(b, ep); got != nil {
		t.Fatalf("a new endpoint's rate limit: %+v; want null", got)
	}
	mustDo(b, "PATCH", path, []byte(`{"rate_limit": {"per_second": 2.5, "burst": 5}}`), nil)
	want := rateLimitRes{2.5, 5}
	if got := endpointRateLimit(b, ep); got == nil || *got != want {
		t.Fatalf("after PATCH: %+v; want %+v", got, want)
	}
	for _, c := range []struct{ body, field string }{
		{`{"rate_limit": {"per_second": 0, "burst": 5}}`, "rate_limit.per_second"},
		{`{"rate_limit": {"per_second": 0.001, "burst": 5}}`, "rate_limit.per_second"},
		{`{"rate_limit": {"per_second": 10000.5, "burst": 5}}`, "rate_limit.per_second"},
		{`{"rate_limit": {"per_second": -1, "burst": 5}}`, "rate_limit.per_second"},
		{`{"rate_limit": {"per_second": "20", "burst": 5}}`, "rate_limit.per_second"},
		{`{"rate_limit": {"burst": 5}}`, "rate_limit.per_second"},
		{`{"rate_limit": {"per_second": 20, "burst": 0}}`, "rate_limit.burst"},
		{`{"rate_limit": {"per_second": 20, "burst": 10001}}`, "rate_limit.burst"},
		{`{"rate_limit": {"per_second": 20, "burst": 1.5}}`, "rate_limit.burst"},
		{`{"rate_limit": {"per_second": 20}}`, "rate_limit.burst"},
		{`{"rate_limit": {"per_second": 20, "burst": 5, "burts": 5}}`, "rate_limit.burts"},
		{`{"rate_limit": 20}`, "rate_limit"},
		{`{"rate_limt": null}`, "rate_limt"},
	} {
		var p struct {
			Field string `json:"field"`
		}
		code, raw := b.do("PATCH", path, []byte(c.body), nil)
		_ = json.Unmarshal(raw, &p)
		if code != http.StatusBadRequest || p.Field != c.field {
			t.Errorf("PATCH %s: %d %s; want 400 naming %s", c.body, code, raw, c.field)
		}
	}
	if got := endpointRateLimit(b, ep); got == nil || *got != want {
		t.Fatalf("after refused PATCHes: %+v; want %+v unchanged", got, want)
	}
	mustDo(b, "PATCH", path, []byte(`{}`), nil)
	if got := endpointRateLimit(b, ep); got == nil || *got != want {
		t.Fatalf("after an empty PATCH: %+v; want %+v unchanged", got, want)
	}
	mustDo(b, "PATCH", path, []byte(`{"rate_limit": null}`), nil)
	if got := endpointRateLimit(b, ep); got != nil {
		t.Fatalf("after PATCH null: %+v; want none", got)
	}
	if code, raw := b.do("PATCH", "/v1/endpoints/ep_00000000000000000000", []byte(`{"rate_limit": null}`), nil); code != http.StatusNotFound {
		t.Fatalf("PATCH of an unknown endpoint: %d %s", code, raw)
	}
}

// arrivals is a receiver recording when each delivery (webhook-id) arrived.
type arrivals struct {
	*receiver
	mu    sync.Mutex
	times []time.Time
	ids   map[string]int
}

func newArrivals(t *testing.T) *arrivals {
	a := &arrivals{ids: map[string]int{}}
	a.receiver = newReceiver(t, func(_ int, r *http.Request, w http.ResponseWriter) {
		a.mu.Lock()
		a.times = append(a.times, time.Now())
		a.ids[r.Header.Get("Webhook-Id")]++
		a.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	return a
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.times)
}

// check: n distinct deliveries each arrived once, and after the first burst
// every 10 s window within the run held perWindow ± 10 %.
func (a *arrivals) check(t *testing.T, n, burst int, perWindow float64) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.times) != n || len(a.ids) != n {
		t.Fatalf("the limited endpoint got %d requests for %d deliveries; want %d, one each", len(a.times), len(a.ids), n)
	}
	ts := slices.Clone(a.times)
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	last := ts[len(ts)-1]
	windows := 0
	for i := burst; i < len(ts) && !ts[i].Add(10*time.Second).After(last); i++ {
		end := ts[i].Add(10 * time.Second)
		got := 0
		for _, at := range ts[i:] {
			if at.Before(end) {
				got++
			}
		}
		windows++
		if float64(got) < 0.9*perWindow || float64(got) > 1.1*perWindow {
			t.Fatalf("the 10 s window from %v after the first request held %d requests; want %.0f ± 10 %%", ts[i].Sub(ts[0]), got, perWindow)
		}
	}
	if windows == 0 {
		t.Fatal("the run was shorter than one window after the burst")
	}
	t.Logf("%d requests in %v; %d windows checked", n, last.Sub(ts[0]), windows)
}

// publishBatches publishes events id0..id(n-1) of type typ in batches of
// 50 through b (every k-th batch through the next bundle, when several).
func publishBatches(t *testing.T, n int, typ string, bs ...*bundle) {
	t.Helper()
	for i := 0; i < n; i += 50 {
		var evs []map[string]any
		for j := i; j < min(i+50, n); j++ {
			evs = append(evs, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("e%d", j), "source": "/rate", "type": typ})
		}
		raw, _ := json.Marshal(evs)
		b := bs[(i/50)%len(bs)]
		resp, body := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents-batch+json"}, string(raw))
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish: %d %s", resp.StatusCode, body)
		}
	}
}

// realClock runs a server on the wall clock.
func realClock(c *server.Config) { c.Clock = clock.Real{} }

// TestRateLimitHeld: 400 deliveries to an endpoint limited to 20/s (burst
// 20) arrive at 20/s (every 10 s window after the burst within ±10 % of
// 200), none lost and each in one attempt, while an unlimited endpoint
// subscribed to the same events gets all of them long before (it is not
// slowed). Real time: about 20 s.
func TestRateLimitHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, realClock)
	limited, free := newArrivals(t), newArrivals(t)
	sub := b.subscribe(map[string]any{"name": "limited", "url": limited.URL, "event_types": []string{"t"}})
	b.subscribe(map[string]any{"name": "free", "url": free.URL, "event_types": []string{"t"}})
	ep := b.endpointOf(sub)
	mustDo(b, "PATCH", "/v1/endpoints/"+ep, []byte(`{"rate_limit": {"per_second": 20, "burst": 20}}`), nil)
	publishBatches(t, 400, "t", b)
	eventually(t, "the unlimited endpoint gets every event", func() bool { return free.count() == 400 })
	if n := limited.count(); n > 200 {
		t.Fatalf("the limited endpoint had %d requests when the unlimited one had all 400: it was slowed", n)
	}
	eventually(t, "the limited endpoint gets every event", func() bool { return limited.count() >= 400 })
	limited.check(t, 400, 20, 200)
	eventually(t, "every outcome recorded", func() bool {
		ds := b.deliveries(sub)
		return len(ds) == 400 && !slices.ContainsFunc(ds, func(d delivery) bool { return d.Status == "pending" })
	})
	for _, d := range b.deliveries(sub) {
		if d.Status != "delivered" || d.Attempts != 1 {
			t.Fatalf("delivery %s: %s after %d attempts; want delivered in one", d.ID, d.Status, d.Attempts)
		}
	}
	var metrics string
	_, raw := b.do("GET", "/metrics", nil, nil)
	metrics = string(raw)
	if !strings.Contains(metrics, "herald_endpoint_rate_limited_seconds_total ") || strings.Contains(metrics, "herald_endpoint_rate_limited_seconds_total 0\n") {
		t.Fatalf("herald_endpoint_rate_limited_seconds_total is missing or zero")
	}
}

// TestRateLimitAcrossNodes: three nodes on one PostgreSQL schema, each
// publishing a third of 450 events to an endpoint limited to 30/s (burst
// 30), hold 30/s together: every 10 s window after the burst within ±10 %
// of 300, each delivery once. Real time: about 15 s.
func TestRateLimitAcrossNodes(t *testing.T) {
	t.Parallel()
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) { c.Store = url; c.CatalogReload = time.Second; c.Clock = clock.Real{} }
	a, b, c := setup(t, onPG), setup(t, onPG), setup(t, onPG)
	limited := newArrivals(t)
	sub := a.subscribe(map[string]any{"name": "limited", "url": limited.URL, "event_types": []string{"t"}})
	mustDo(a, "PATCH", "/v1/endpoints/"+a.endpointOf(sub), []byte(`{"rate_limit": {"per_second": 30, "burst": 30}}`), nil)
	for _, n := range []*bundle{b, c} {
		eventually(t, "every node knows the subscription", func() bool { return n.srv.Catalog.Get(sub) != nil })
	}
	publishBatches(t, 450, "t", a, b, c)
	eventually(t, "the limited endpoint gets every event", func() bool { return limited.count() >= 450 })
	limited.check(t, 450, 30, 300)
}

// TestRateLimitedEndpointKeeps429: a rate-limited endpoint's 429 with
// Retry-After still sets its delivery's next attempt (as on an unlimited
// one), and the retry goes when it is due, one attempt each time.
func TestRateLimitedEndpointKeeps429(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub := b.subscribe(map[string]any{"name": "limited", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"jitter": 0}})
	mustDo(b, "PATCH", "/v1/endpoints/"+b.endpointOf(sub), []byte(`{"rate_limit": {"per_second": 100, "burst": 10}}`), nil)
	b.publish("e1", "t")
	d := b.waitDelivery(sub, "the 429", func(d delivery) bool { return d.Attempts == 1 })
	if d.Status != "pending" || !d.NextAttemptAt.Equal(start.Add(120*time.Second)) {
		t.Fatalf("after a 429 with Retry-After 120: %s, next attempt %v; want pending at +120s", d.Status, d.NextAttemptAt)
	}
	b.clk.Advance(120 * time.Second)
	d = b.waitDelivery(sub, "the retry", func(d delivery) bool { return d.Status == "delivered" })
	if d.Attempts != 2 || rc.count() != 2 {
		t.Fatalf("delivered after %d attempts, %d requests; want 2", d.Attempts, rc.count())
	}
}
