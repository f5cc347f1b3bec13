package process

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// receiver is a subscriber endpoint on loopback. It counts, per CloudEvent
// id, the pushes it answered 200; a push whose connection went away before
// the answer (Herald was killed) is counted as aborted, not received. It
// can hold pushes at a gate until open is called, and answer each after a
// delay, so that deliveries are in flight when Herald is killed.
type receiver struct {
	t     testing.TB
	srv   *httptest.Server
	delay time.Duration

	gate     chan struct{}
	openOnce sync.Once

	mu         sync.Mutex
	counts     map[string]int    // event id → pushes answered 200
	webhookIDs map[string]string // event id → the webhook-id it came with
	requests   int               // pushes that arrived
	aborted    int               // pushes whose client went away before the answer
	inFlight   int
	problems   []string // malformed pushes, reported at cleanup
	waiters    []distinctWaiter
}

type distinctWaiter struct {
	n  int
	ch chan struct{}
}

// newReceiver starts a receiver. With gated it holds every push until open
// is called. It is closed at cleanup, and any malformed push fails the test.
func newReceiver(t testing.TB, delay time.Duration, gated bool) *receiver {
	return newWrappedReceiver(t, delay, gated, nil)
}

// newWrappedReceiver is newReceiver with its handler passed through wrap
// (when not nil), for tests that observe the pushes around the receiver.
func newWrappedReceiver(t testing.TB, delay time.Duration, gated bool, wrap func(http.Handler) http.Handler) *receiver {
	r := &receiver{
		t: t, delay: delay, gate: make(chan struct{}),
		counts: map[string]int{}, webhookIDs: map[string]string{},
	}
	if !gated {
		r.open()
	}
	var h http.Handler = http.HandlerFunc(r.serve)
	if wrap != nil {
		h = wrap(h)
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		r.open()
		r.srv.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.problems {
			t.Errorf("receiver: %s", p)
		}
	})
	return r
}

// URL is the receiver's endpoint.
func (r *receiver) URL() string { return r.srv.URL + "/hook" }

// open lets held and later pushes through.
func (r *receiver) open() { r.openOnce.Do(func() { close(r.gate) }) }

func (r *receiver) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests++
	r.inFlight++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}()

	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		r.abort()
		return
	}
	if req.Method != http.MethodPost || req.URL.Path != "/hook" {
		r.problem("push is %s %s, want POST /hook", req.Method, req.URL.Path)
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "application/cloudevents+json" {
		r.problem("push has content-type %q, want application/cloudevents+json", req.Header.Get("Content-Type"))
	}
	var ev cloudEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		r.problem("push body is not a CloudEvent with an id (%v): %.200q", err, body)
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	whID := req.Header.Get("webhook-id")
	if whID == "" {
		r.problem("push of %s has no webhook-id", ev.ID)
	}
	if n, err := strconv.Atoi(req.Header.Get("herald-delivery-attempt")); err != nil || n < 1 {
		r.problem("push of %s has herald-delivery-attempt %q, want a whole number ≥ 1", ev.ID, req.Header.Get("herald-delivery-attempt"))
	}

	ctx := req.Context()
	select {
	case <-r.gate:
	case <-ctx.Done():
		r.abort()
		return
	}
	if r.delay > 0 {
		tm := time.NewTimer(r.delay)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			r.abort()
			return
		}
	}
	if ctx.Err() != nil {
		r.abort()
		return
	}

	r.mu.Lock()
	r.counts[ev.ID]++
	if prev, ok := r.webhookIDs[ev.ID]; !ok {
		r.webhookIDs[ev.ID] = whID
	} else if prev != whID && len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf("event %s came with webhook-id %q and later %q; a delivery id must be stable across attempts", ev.ID, prev, whID))
	}
	distinct := len(r.counts)
	kept := r.waiters[:0]
	for _, wt := range r.waiters {
		if distinct >= wt.n {
			close(wt.ch)
		} else {
			kept = append(kept, wt)
		}
	}
	r.waiters = kept
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) abort() {
	r.mu.Lock()
	r.aborted++
	r.mu.Unlock()
}

// reached returns a channel closed once n distinct event ids were received.
func (r *receiver) reached(n int) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	if len(r.counts) >= n {
		close(ch)
		return ch
	}
	r.waiters = append(r.waiters, distinctWaiter{n: n, ch: ch})
	return ch
}

// openUntil opens the gate and waits (30 s at most, else it fails the
// test) until n distinct event ids of total were received.
func (r *receiver) openUntil(t testing.TB, n, total int) {
	t.Helper()
	reached := r.reached(n)
	r.open()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatalf("only %d of %d events arrived within 30s; want %d", r.stats().Distinct, total, n)
	}
}

// receiverStats is a snapshot of the receiver's counters.
type receiverStats struct {
	Requests, Aborted, InFlight int
	Distinct                    int // distinct event ids received
	Duplicates                  int // receipts beyond the first, over all ids
	DuplicatedIDs               int // ids received more than once
}

func (r *receiver) stats() receiverStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := receiverStats{Requests: r.requests, Aborted: r.aborted, InFlight: r.inFlight, Distinct: len(r.counts)}
	for _, n := range r.counts {
		if n > 1 {
			s.DuplicatedIDs++
			s.Duplicates += n - 1
		}
	}
	return s
}

// missing returns the ids of want not received yet, sorted.
func (r *receiver) missing(want []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range want {
		if r.counts[id] == 0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// received returns the distinct event ids received so far.
func (r *receiver) received() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.counts))
	for id := range r.counts {
		out[id] = true
	}
	return out
}

// waitIdle waits until no push is open at the receiver: after a sender's
// death, its pushes still in the handler end (received or aborted) before
// the test reads counts that must include them.
func (r *receiver) waitIdle(t testing.TB, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "the receiver to have no push open", func() (bool, string) {
		n := r.stats().InFlight
		return n == 0, fmt.Sprintf("%d pushes open", n)
	})
}

// receivedCount returns how many of ids were received at least once.
func (r *receiver) receivedCount(ids []string) int {
	return len(ids) - len(r.missing(ids))
}

// unexpected returns the received ids that are not in known, sorted.
func (r *receiver) unexpected(known map[string]bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for id := range r.counts {
		if !known[id] {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// head returns at most n of ids, for messages.
func head[T any](ids []T, n int) []T {
	if len(ids) > n {
		return ids[:n]
	}
	return ids
}
