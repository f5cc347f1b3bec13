package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
)

// publishBatch publishes n events of one type as CloudEvents batches of 100.
func publishBatch(b *bundle, prefix, typ string, n int) {
	b.t.Helper()
	for i := 0; i < n; i += 100 {
		publishRange(b, prefix, typ, i, min(i+100, n))
	}
}

// publishRange publishes the events prefix-from … prefix-(to-1) of one type
// in one CloudEvents batch and returns how many of them the server
// reported as duplicates.
func publishRange(b *bundle, prefix, typ string, from, to int) (duplicates int) {
	b.t.Helper()
	var evs []map[string]any
	for j := from; j < to; j++ {
		evs = append(evs, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("%s-%d", prefix, j), "source": "/test", "type": typ})
	}
	raw, _ := json.Marshal(evs)
	req, _ := http.NewRequest("POST", b.api.URL+"/v1/events", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/cloudevents-batch+json")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Events []struct {
			Duplicate bool `json:"duplicate"`
		} `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted || len(out.Events) != to-from {
		b.t.Fatalf("publish batch %s-%d…: %d, %v, %d results", prefix, from, resp.StatusCode, err, len(out.Events))
	}
	for _, e := range out.Events {
		if e.Duplicate {
			duplicates++
		}
	}
	return duplicates
}

// TestFreshNotBehindRetries: with 10,000 retries due for one endpoint (and
// that endpoint hanging), a fresh event for another endpoint is delivered at
// once (fresh deliveries never wait behind retries: retries have a queue
// of their own, so fresh traffic flows while a subset fails).
func TestFreshNotBehindRetries(t *testing.T) {
	// The circuit would (rightly) disable an endpoint that failed 10,000
	// times; keep it open so the retries really are due.
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = circuitOff() })
	var hanging atomic.Bool
	gate := make(chan struct{})
	slow := newReceiver(t, func(_ int, r *http.Request, w http.ResponseWriter) {
		if hanging.Load() {
			select {
			case <-gate:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	})
	fast := newReceiver(t, status(http.StatusOK))
	// The longest timeout: an attempt hanging at the gate must not time out
	// (on the wall clock) before the test opens it, however long a loaded
	// machine takes to deliver the fresh event; a timed-out attempt's slot
	// would go to another retry, over the count checked below.
	b.subscribe(map[string]any{"name": "slow", "url": slow.URL, "event_types": []string{"a"}, "timeout": "5m",
		"retry_policy": map[string]any{"jitter": 0}})
	fastSub := b.subscribe(map[string]any{"name": "fast", "url": fast.URL, "event_types": []string{"b"}})

	const n = 10_000
	publishBatch(b, "a", "a", n)
	// 10,000 attempts each, first and last: their waits are bounded by
	// progress (a loaded machine under -race takes minutes).
	eventuallyProgressing(t, "10,000 first attempts", func() (int, bool) {
		_, retry, err := b.srv.Store.CountPending(context.Background())
		return int(retry), err == nil && retry == n
	})

	hanging.Store(true)
	b.clk.Advance(10 * time.Second) // every retry is now due
	const limit = 64                // the endpoint's most concurrency
	eventuallyProgressing(t, "retries hanging at the slow endpoint", func() (int, bool) { return slow.count(), slow.count() > n })

	b.publish("b-1", "b")
	d := b.waitDelivery(fastSub, "fresh delivery to the healthy endpoint", func(d delivery) bool { return d.Status == "delivered" })
	if d.Attempts != 1 {
		t.Fatalf("fresh delivery: %+v", d)
	}
	if got := slow.count(); got > n+limit {
		t.Fatalf("the slow endpoint got %d requests, over its concurrency while it hangs", got)
	}
	_, retry, _ := b.srv.Store.CountPending(context.Background())
	if retry < n-limit {
		t.Fatalf("only %d retries still pending; the fresh delivery should not have waited for them", retry)
	}
	st := b.srv.Pipeline.Scheduler.Stats()
	if st.LoadHeld > 512 {
		t.Fatalf("the loader holds %d deliveries of one endpoint, over its per-endpoint window", st.LoadHeld)
	}

	close(gate)
	eventuallyProgressing(t, "the backlog to drain", func() (int, bool) {
		fresh, retry, err := b.srv.Store.CountPending(context.Background())
		return int(fresh + retry), err == nil && fresh == 0 && retry == 0
	})
}

// circuitOff returns endpoint health thresholds that never trip.
func circuitOff() health.Config {
	c := health.DefaultConfig()
	c.ProbationAfter = 0
	c.MinAttempts = 1 << 30
	c.DisableConsecutive, c.FreezeConsecutive, c.FreezeStaleConsecutive = 1<<40, 1<<40, 1<<40
	return c
}
