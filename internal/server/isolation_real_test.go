package server_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/server"
)

// TestIsolationOnTheWallClock: one endpoint is a black hole (accepts the
// request, never answers), one answers 503 to everything, one is healthy.
// Every event goes to all three. The healthy endpoint's publish→receipt p99
// stays under 200 ms: the others cost it nothing beyond their own
// concurrency (a slow or dead endpoint takes no more than its own
// concurrency from the others).
func TestIsolationOnTheWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sends real traffic for a few seconds")
	}
	b := setup(t, func(c *server.Config) { c.Clock = clock.Real{} })

	hole := make(chan struct{})
	blackhole := newReceiver(t, func(_ int, r *http.Request, w http.ResponseWriter) {
		select {
		case <-hole:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(hole) })
	failing := newReceiver(t, status(http.StatusServiceUnavailable))

	var mu sync.Mutex
	var latencies []time.Duration
	var healthy *receiver
	healthy = newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) {
		var ev struct {
			Data struct {
				Sent int64 `json:"sent"`
			} `json:"data"`
		}
		body := healthy.request(n - 1).body
		if err := json.Unmarshal(body, &ev); err == nil && ev.Data.Sent > 0 {
			mu.Lock()
			latencies = append(latencies, time.Since(time.Unix(0, ev.Data.Sent)))
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	})
	policy := map[string]any{"preset": "custom", "delays": []string{"100ms"}, "ttl": "1m"}
	for name, rc := range map[string]*receiver{"hole": blackhole, "failing": failing, "healthy": healthy} {
		b.subscribe(map[string]any{"name": name, "url": rc.URL, "event_types": []string{"load"},
			"timeout": "2s", "retry_policy": policy})
	}

	const events = 400
	tick := time.NewTicker(5 * time.Millisecond) // 200 events/s offered
	defer tick.Stop()
	for i := 0; i < events; i++ {
		<-tick.C
		ev := map[string]any{"specversion": "1.0", "id": strconv.Itoa(i), "source": "/load", "type": "load",
			"data": map[string]any{"sent": time.Now().UnixNano()}}
		if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
			t.Fatalf("publish: %d %s", code, raw)
		}
	}
	eventually(t, "every event at the healthy endpoint", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(latencies) >= events
	})
	mu.Lock()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	p50, p99 := latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	mu.Unlock()
	t.Logf("healthy endpoint: p50 %s, p99 %s; black hole got %d requests, failing %d", p50, p99, blackhole.count(), failing.count())
	if p99 > 200*time.Millisecond {
		t.Fatalf("healthy endpoint p99 %s, want under 200ms", p99)
	}
	var subs struct {
		Data []struct {
			Name       string `json:"name"`
			EndpointID string `json:"endpoint_id"`
		}
	}
	b.do("GET", "/v1/subscriptions", nil, &subs)
	for _, s := range subs.Data {
		if s.Name == "failing" {
			if st := b.endpoint(s.EndpointID).State; st != "probation" && st != "disabled" {
				t.Fatalf("the endpoint answering 503 is %s; its circuit should hold its deliveries back", st)
			}
		}
	}
}
