package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
)

// oneAtATime makes each endpoint take one request at a time, so that what
// queues behind a request is batched deterministically.
func oneAtATime(c *server.Config) {
	c.Scheduling.EndpointConcurrency, c.Scheduling.InitialConcurrency = 1, 1
}

// gatedReceiver holds its first request until open is called, answering
// every request with answer(n).
func gatedReceiver(t *testing.T, answer func(n int) int) (rc *receiver, open func()) {
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	rc = newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) {
		if n == 1 {
			<-gate
		}
		w.WriteHeader(answer(n))
	})
	t.Cleanup(open)
	return rc, open
}

// batchSizes decodes each request's body as a JSON array and returns the
// number of events in each, checking the content type.
func batchSizes(t *testing.T, rc *receiver, contentType string) []int {
	t.Helper()
	var sizes []int
	for i := 0; i < rc.count(); i++ {
		r := rc.request(i)
		if ct := r.header.Get("Content-Type"); ct != contentType {
			t.Fatalf("request %d: content type %q, want %q", i, ct, contentType)
		}
		var evs []json.RawMessage
		if err := json.Unmarshal(r.body, &evs); err != nil {
			t.Fatalf("request %d: not an array: %v: %s", i, err, r.body)
		}
		sizes = append(sizes, len(evs))
	}
	return sizes
}

// TestBatchesNeverWaitAndKeepTheirBound: a lone event goes at once (a batch
// of one: never waiting to fill a batch); what queues behind a request goes
// in batches of at most max_events_per_batch, each its own request.
func TestBatchesNeverWaitAndKeepTheirBound(t *testing.T) {
	b := setup(t, oneAtATime)
	rc, open := gatedReceiver(t, func(int) int { return 200 })
	sub := b.subscribe(map[string]any{"name": "batched", "url": rc.URL, "max_events_per_batch": 3})
	b.publish("lone", "t")
	eventually(t, "the lone event sent at once", func() bool { return rc.count() == 1 })
	publishBatch(b, "q", "t", 10)
	open()
	eventually(t, "every event delivered", func() bool { return rc.count() == 5 })
	b.settle()
	got := batchSizes(t, rc, "application/cloudevents-batch+json")
	want := []int{1, 3, 3, 3, 1}
	if len(got) != len(want) {
		t.Fatalf("batch sizes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batch sizes %v, want %v", got, want)
		}
	}
	// A batch has a webhook-id of its own; a single event its delivery's.
	if id := rc.request(1).header.Get("Webhook-Id"); !strings.HasPrefix(id, "bat_") {
		t.Fatalf("a batch's webhook-id %q", id)
	}
	// Its signature covers the batch's exact bytes.
	if err := verifyWith(t, secretOf(b, sub).Secret, rc.request(1)); err != nil {
		t.Fatalf("a batch does not verify: %v", err)
	}
}

// TestBatchSizeRule: with a preferred size of 1 KiB, events of about 400
// bytes go two a request, and an event larger than the preferred size goes
// alone, never dropped.
func TestBatchSizeRule(t *testing.T) {
	b := setup(t, oneAtATime)
	rc, open := gatedReceiver(t, func(int) int { return 200 })
	b.subscribe(map[string]any{"name": "sized", "url": rc.URL, "max_events_per_batch": 100, "preferred_batch_size_kb": 1})
	b.publish("first", "t")
	eventually(t, "the first event sent", func() bool { return rc.count() == 1 })
	pad := strings.Repeat("x", 300)
	var evs []map[string]any
	for _, id := range []string{"a", "b", "c", "d"} {
		evs = append(evs, map[string]any{"specversion": "1.0", "id": id, "source": "/s", "type": "t", "data": map[string]any{"pad": pad}})
	}
	evs = append(evs, map[string]any{"specversion": "1.0", "id": "big", "source": "/s", "type": "t", "data": map[string]any{"pad": strings.Repeat("y", 2000)}})
	raw, _ := json.Marshal(evs)
	if code, body := b.do("POST", "/v1/events", raw, nil); code != 202 {
		t.Fatalf("publish: %d %s", code, body)
	}
	open()
	eventually(t, "every event delivered", func() bool { return rc.count() == 4 })
	b.settle()
	got := batchSizes(t, rc, "application/cloudevents-batch+json")
	if want := []int{1, 2, 2, 1}; len(got) != 4 || got[1] != 2 || got[2] != 2 || got[3] != 1 {
		t.Fatalf("batch sizes %v, want %v", got, want)
	}
	for i := 1; i < 4; i++ {
		if n := len(rc.request(i).body); n > 1024 && got[i] > 1 {
			t.Fatalf("request %d: %d events in %d bytes, over the preferred 1 KiB", i, got[i], n)
		}
	}
	if !strings.Contains(string(rc.request(3).body), `"id":"big"`) {
		t.Fatalf("the large event was not sent alone last: %s", rc.request(3).body)
	}
}

// TestFailedBatchIsRetriedWhole: a batch answered 500 fails for every
// delivery in it; each keeps its own attempt count and log, and the retry
// sends them again together.
func TestFailedBatchIsRetriedWhole(t *testing.T) {
	b := setup(t, oneAtATime)
	rc, open := gatedReceiver(t, func(n int) int {
		if n == 2 {
			return 500
		}
		return 200
	})
	sub := b.subscribe(map[string]any{"name": "retried", "url": rc.URL, "max_events_per_batch": 10,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"5s"}, "max_attempts": 3}})
	b.publish("first", "t")
	eventually(t, "the first event sent", func() bool { return rc.count() == 1 })
	publishBatch(b, "q", "t", 4)
	open()
	eventually(t, "the batch failed", func() bool { return rc.count() == 2 })
	b.settle()
	b.clk.Advance(5 * time.Second)
	eventually(t, "the batch retried", func() bool { return rc.count() == 3 })
	b.settle()
	got := batchSizes(t, rc, "application/cloudevents-batch+json")
	if len(got) != 3 || got[1] != 4 || got[2] != 4 {
		t.Fatalf("batch sizes %v, want [1 4 4]", got)
	}
	if a := rc.request(2).header.Get("Herald-Delivery-Attempt"); a != "2" {
		t.Fatalf("the retried batch's herald-delivery-attempt %q, want 2", a)
	}
	for _, d := range b.deliveries(sub) {
		if d.EventID == "first" {
			continue
		}
		if d.Status != "delivered" || d.Attempts != 2 || len(b.attempts(d.ID)) != 2 {
			t.Fatalf("delivery %s: %+v, want delivered after 2 attempts, each logged", d.EventID, d)
		}
	}
}

// TestBatchesRefusedWhereTheSchemaCannotCarryThem: binary, data and pubsub
// carry one event a request.
func TestBatchesRefusedWhereTheSchemaCannotCarryThem(t *testing.T) {
	b := setup(t)
	for _, schema := range []string{"cloudevents-binary", "data", "pubsub"} {
		code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": schema, "url": "http://127.0.0.1:1/",
			"delivery_schema": schema, "max_events_per_batch": 2}, nil)
		var p struct{ Field string }
		_ = json.Unmarshal(raw, &p)
		if code != 422 || p.Field != "max_events_per_batch" {
			t.Errorf("%s with batches: %d %s, want 422 naming max_events_per_batch", schema, code, raw)
		}
	}
	for _, c := range []struct {
		field string
		value any
	}{{"max_events_per_batch", 0}, {"max_events_per_batch", 5001}, {"preferred_batch_size_kb", 1025}, {"delivery_schema", "xml"}} {
		code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "x", "url": "http://127.0.0.1:1/", c.field: c.value}, nil)
		var p struct{ Field string }
		_ = json.Unmarshal(raw, &p)
		if code != 400 || p.Field != c.field {
			t.Errorf("%s %v: %d %s, want 400 naming it", c.field, c.value, code, raw)
		}
	}
}
