package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// failPlan answers 500, in front of a receiver, to every push of the events
// in always and to the first push of those in once; other pushes go on to
// the receiver (which counts only what it answers 200). It counts the 500s
// it answered per event. A failing push too waits for gate (the receiver's):
// failures held back while every success is would come back alone, in a
// run long enough to open the endpoint's circuit.
type failPlan struct {
	always, once map[string]bool
	gate         <-chan struct{}

	mu     sync.Mutex
	failed map[string]int // event id → pushes answered 500
}

func (p *failPlan) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err != nil {
			return // Herald went away mid-push
		}
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &ev) // the receiver reports a malformed push
		p.mu.Lock()
		fail := p.always[ev.ID] || (p.once[ev.ID] && p.failed[ev.ID] == 0)
		if fail {
			p.failed[ev.ID]++
		}
		p.mu.Unlock()
		if fail {
			select {
			case <-p.gate:
			case <-req.Context().Done():
				return
			}
			http.Error(w, "planned failure", http.StatusInternalServerError)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, req)
	})
}

// answered500 is how many pushes the plan answered 500 in all.
func (p *failPlan) answered500() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.failed {
		n += c
	}
	return n
}

// statsTotals adds up GET /v1/stats?window=1h of subscription subID over
// every step of the window.
func (h *herald) statsTotals(t *testing.T, subID string) (delivered, failed, deadLettered int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out struct {
		Step   string `json:"step"`
		Series []struct {
			Delivered    int64 `json:"delivered"`
			Failed       int64 `json:"failed"`
			DeadLettered int64 `json:"dead_lettered"`
		} `json:"series"`
	}
	q := url.Values{"window": {"1h"}, "subscription_id": {subID}}
	if _, err := h.do(ctx, http.MethodGet, "/v1/stats?"+q.Encode(), "", nil, &out); err != nil {
		t.Fatalf("%s: reading stats: %v", h.name, err)
	}
	if out.Step != "1m" || len(out.Series) != 60 {
		t.Fatalf("%s: stats of window 1h have step %q and %d points, want 1m and 60", h.name, out.Step, len(out.Series))
	}
	for _, s := range out.Series {
		delivered += s.Delivered
		failed += s.Failed
		deadLettered += s.DeadLettered
	}
	return delivered, failed, deadLettered
}

// rollupStore starts herald processes on one store: a data directory
// (SQLite) or a PostgreSQL schema, the same for every start.
type rollupStore func(t *testing.T, name string) *herald

// TestRollupsMatchDeliveriesAfterSIGKILL runs rollupsAfterSIGKILL on the
// embedded SQLite store and on PostgreSQL (skipped without
// HERALD_TEST_POSTGRES_URL).
func TestRollupsMatchDeliveriesAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	// The retries of the deliveries that fail for good come last, one
	// failure after another: without probation off the endpoint's circuit
	// would hold them back for --probation-initial.
	flags := append([]string{"--probation-after", "0"}, serveFlags...)
	t.Run("sqlite", func(t *testing.T) {
		dataDir := t.TempDir()
		rollupsAfterSIGKILL(t, func(t *testing.T, name string) *herald {
			return startHerald(t, name, dataDir, flags...)
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dbURL := pgtest.SchemaURL(t)
		// A short lease: the restarted process takes over the killed
		// one's claimed deliveries 3 s after the SIGKILL.
		rollupsAfterSIGKILL(t, func(t *testing.T, name string) *herald {
			return startNode(t, name, dbURL, append([]string{"--lease", "3s"}, flags...)...)
		})
	})
}

// rollupsAfterSIGKILL publishes 1,000 events to a push subscription whose
// receiver fails some (every push of 1 in 20 events, which end
// dead-lettered after maxAttempts, and the first push of another 1 in 20),
// SIGKILLs Herald while deliveries are in flight, starts it again on the
// same store and, once nothing is pending, requires the rollups of GET
// /v1/stats to count what the deliveries record: delivered and
// dead_lettered equal to the deliveries listed in those states (and to the
// events the plan lets through or fails for good), failed equal to the
// attempts recorded on the deliveries less the delivering ones.
func rollupsAfterSIGKILL(t *testing.T, start rollupStore) {
	const (
		total       = 1000
		batch       = 100
		killAfter   = total / 4 // distinct events received before the SIGKILL
		maxAttempts = 3
	)
	plan := &failPlan{always: map[string]bool{}, once: map[string]bool{}, failed: map[string]int{}}
	ids := make([]string, total)
	var deliverable []string
	for i := range ids {
		ids[i] = fmt.Sprintf("roll-%05d", i)
		switch i % 20 {
		case 0:
			plan.always[ids[i]] = true
		case 1:
			plan.once[ids[i]] = true
			deliverable = append(deliverable, ids[i])
		default:
			deliverable = append(deliverable, ids[i])
		}
	}
	// Pushes the plan lets through are held at the gate until every event
	// is published: the SIGKILL comes while most are still to arrive.
	rcv := newWrappedReceiver(t, 3*time.Millisecond, true, plan.wrap)
	plan.gate = rcv.gate
	h1 := start(t, "herald-1")
	subID := h1.createSubscriptionWith(t, "process-rollups", rcv.URL(), map[string]any{
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"200ms"}, "max_attempts": maxAttempts, "ttl": "1h"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < total; i += batch {
		if err := h1.publish(ctx, ids[i:i+batch]); err != nil {
			t.Fatalf("publishing events %d..%d: %v", i, i+batch-1, err)
		}
	}
	rcv.openUntil(t, killAfter, total)
	h1.kill()
	rcv.waitIdle(t, 5*time.Second)
	if n := rcv.stats().Distinct; n >= len(deliverable) {
		t.Fatalf("all %d deliverable events arrived before the SIGKILL: the test did not kill Herald mid-delivery", n)
	}
	t.Logf("SIGKILL after %d of %d deliverable events arrived", rcv.stats().Distinct, len(deliverable))

	h2 := start(t, "herald-2")
	checkSettled(t, h2, subID, rcv, deliverable)
	checkRollups(t, h2, subID, plan, len(deliverable), maxAttempts)
}

// checkRollups compares, once nothing is pending, the subscription's
// rollups with its deliveries (see rollupsAfterSIGKILL).
func checkRollups(t *testing.T, h *herald, subID string, plan *failPlan, deliverable, maxAttempts int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all, err := h.deliveries(ctx, url.Values{"subscription_id": {subID}})
	if err != nil {
		t.Fatalf("listing deliveries: %v", err)
	}
	byStatus := map[string]int{}
	attempts := 0
	for _, d := range all {
		byStatus[d.Status]++
		attempts += d.Attempts
		if d.Status == "dead_lettered" && d.Attempts != maxAttempts {
			t.Errorf("dead-lettered delivery %s of %s records %d attempts, want %d", d.ID, d.EventID, d.Attempts, maxAttempts)
		}
	}
	listed := map[string]int{}
	for _, status := range []string{"delivered", "dead_lettered"} {
		ds, err := h.deliveries(ctx, url.Values{"subscription_id": {subID}, "status": {status}})
		if err != nil {
			t.Fatalf("listing %s deliveries: %v", status, err)
		}
		listed[status] = len(ds)
	}
	delivered, failed, dead := h.statsTotals(t, subID)
	t.Logf("deliveries %v, %d attempts recorded; rollups: delivered %d, failed %d, dead_lettered %d; the receiver answered 500 %d times",
		byStatus, attempts, delivered, failed, dead, plan.answered500())
	if len(all) != len(plan.always)+deliverable || byStatus["delivered"]+byStatus["dead_lettered"] != len(all) {
		t.Errorf("deliveries by status %v, want %d delivered and %d dead_lettered", byStatus, deliverable, len(plan.always))
	}
	if delivered != int64(listed["delivered"]) || delivered != int64(deliverable) {
		t.Errorf("rollups count %d delivered; %d deliveries are listed as delivered, want %d", delivered, listed["delivered"], deliverable)
	}
	if dead != int64(listed["dead_lettered"]) || dead != int64(len(plan.always)) {
		t.Errorf("rollups count %d dead_lettered; %d deliveries are listed as dead_lettered, want %d", dead, listed["dead_lettered"], len(plan.always))
	}
	if want := int64(attempts) - delivered; failed != want {
		t.Errorf("rollups count %d failed attempts; the deliveries record %d attempts of which %d delivered, want %d", failed, attempts, delivered, want)
	}
	if least := len(plan.always) * maxAttempts; failed < int64(least) || failed > int64(plan.answered500()) {
		t.Errorf("rollups count %d failed attempts, want between %d (dead-lettered deliveries' attempts) and %d (pushes answered 500)", failed, least, plan.answered500())
	}
}
