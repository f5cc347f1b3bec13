package scheduling

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// rateBed is a scheduler with a limited lane "a" and an unlimited "b",
// the keeper's work driven by hand on local buckets.
type rateBed struct {
	t      *testing.T
	s      *scheduler
	lb     *localBuckets
	now    time.Time
	kicked int
}

func newRateBed(t *testing.T, rl endpoint.RateLimit) *rateBed {
	rb := &rateBed{t: t, s: newScheduler(defaultSchedTestConfig()), lb: newLocalBuckets(), now: ddStart}
	rb.s.rates.kick = func() { rb.kicked++ }
	rb.s.mu.Lock()
	for _, id := range []string{"a", "b"} {
		ep := endpoint.Endpoint{ID: id}
		ep.Health.State = health.Enabled
		if id == "a" {
			ep.RateLimit = &rl
		}
		rb.s.adopt(rb.s.laneFor(id), ep, rb.now)
	}
	rb.s.mu.Unlock()
	return rb
}

// offer queues deliveries (attempts: 0 fresh, else a retry) and pumps.
func (rb *rateBed) offer(lane string, attempts int, ids ...string) []string {
	rb.s.mu.Lock()
	for _, id := range ids {
		c := store.Claimed{}
		c.ID, c.EndpointID, c.Attempts = id, lane, attempts
		rb.s.enqueue(&item{c: c, fromPublish: true})
	}
	starts := rb.s.pump(rb.now, nil)
	rb.s.mu.Unlock()
	return startIDs(starts)
}

// keep runs one keeper round at now; it returns what started and the sleep.
func (rb *rateBed) keep() ([]string, time.Duration) {
	k := &rateKeeper{sched: rb.s}
	ws := k.wants(rb.now)
	starts, sleep := k.granted(ws, rb.lb.take(ws, rb.now), rb.now, time.Second)
	return startIDs(starts), sleep
}

// end ends a running attempt (a success) so the lane's slot is free.
func (rb *rateBed) end(id string) []string {
	for c, it := range rb.s.running {
		if c.ID == id {
			l := rb.s.lanes[c.EndpointID]
			en := rb.s.attemptEnded(l, &health.Outcome{Success: true, At: rb.now}, 0, "", rb.now)
			rb.s.mu.Lock()
			rb.s.forget(l, it)
			delete(rb.s.running, c)
			rb.s.mu.Unlock()
			return startIDs(en.starts)
		}
	}
	rb.t.Fatalf("%s is not running", id)
	return nil
}

func startIDs(starts []start) []string {
	var out []string
	for _, st := range starts {
		for _, it := range st.items() {
			out = append(out, fmt.Sprintf("%s@%s", it.c.ID, it.c.EndpointID))
		}
	}
	slices.Sort(out)
	return out
}

// TestRateGate: a limited lane starts nothing without a token and asks the
// keeper for some, while an unlimited lane beside it goes at once; the
// bucket's burst goes first, then one token per 1/PerSecond; a lane
// granted none waits until its bucket should hold one (no spinning);
// fresh deliveries go before retries; the wait is counted for the metric.
func TestRateGate(t *testing.T) {
	rb := newRateBed(t, endpoint.RateLimit{PerSecond: 2, Burst: 2})
	rb.offer("a", 1, "r1")
	if got := rb.offer("a", 0, "f1", "f2", "f3"); len(got) != 0 || rb.kicked == 0 {
		t.Fatalf("a limited lane without tokens started %v (keeper kicked %d times)", got, rb.kicked)
	}
	if got := rb.offer("b", 0, "u1", "u2"); !slices.Equal(got, []string{"u1@b", "u2@b"}) {
		t.Fatalf("the unlimited lane started %v", got)
	}
	// The burst: two tokens, a lease (a tenth of a second's worth, at
	// least one) at a time, the next asked for at once (pump kicks the
	// keeper): fresh ones first.
	kicks := rb.kicked
	got, _ := rb.keep()
	if !slices.Equal(got, []string{"f1@a"}) || rb.kicked == kicks {
		t.Fatalf("the burst's first lease started %v, the keeper kicked again: %v; want the oldest fresh delivery, a kick", got, rb.kicked > kicks)
	}
	if got, _ = rb.keep(); !slices.Equal(got, []string{"f2@a"}) {
		t.Fatalf("the burst's second lease started %v; want f2@a", got)
	}
	rb.end("f1")
	rb.end("f2")
	// Empty: the next token is due in half a second; no take before.
	got, sleep := rb.keep()
	if len(got) != 0 || sleep != 500*time.Millisecond {
		t.Fatalf("with an empty bucket: started %v, sleep %v; want none, 500ms", got, sleep)
	}
	rb.now = rb.now.Add(200 * time.Millisecond)
	if ws := (&rateKeeper{sched: rb.s}).wants(rb.now); len(ws) != 0 {
		t.Fatalf("the keeper asks again before the next token: %+v", ws)
	}
	rb.now = rb.now.Add(300 * time.Millisecond)
	if got, _ := rb.keep(); !slices.Equal(got, []string{"f3@a"}) {
		t.Fatalf("after 500ms: %v; want f3@a", got)
	}
	rb.end("f3")
	rb.now = rb.now.Add(500 * time.Millisecond)
	if got, _ := rb.keep(); !slices.Equal(got, []string{"r1@a"}) {
		t.Fatalf("after another 500ms: %v; want the retry r1@a", got)
	}
	if rb.s.rates.waited < time.Second {
		t.Fatalf("rate-limited wait %v; want at least the second f3 and r1 waited", rb.s.rates.waited)
	}
	// Nothing waits: the keeper sleeps its bound.
	if _, sleep := rb.keep(); sleep != time.Second {
		t.Fatalf("idle keeper sleeps %v; want its bound", sleep)
	}
}

// TestRateTokensExpire: tokens a lane took and could not use (its circuit
// closed) are dropped after tokenTTL, and a lane whose limit is removed
// goes at once.
func TestRateTokensExpire(t *testing.T) {
	rb := newRateBed(t, endpoint.RateLimit{PerSecond: 100, Burst: 100})
	rb.offer("a", 0, "f1")
	rb.s.mu.Lock()
	l := rb.s.lanes["a"]
	l.rate = laneRate{tokens: 5, until: rb.now.Add(tokenTTL)}
	if !l.hasToken(rb.now) || l.hasToken(rb.now.Add(tokenTTL)) {
		t.Fatal("tokens are not dropped after tokenTTL")
	}
	l.rate = laneRate{}
	ep := l.ep
	ep.RateLimit = nil
	ep.Version++
	rb.s.adopt(l, ep, rb.now)
	got := startIDs(rb.s.pump(rb.now, nil))
	rb.s.mu.Unlock()
	if !slices.Equal(got, []string{"f1@a"}) {
		t.Fatalf("after the limit was removed: %v; want f1@a", got)
	}
}

// TestLocalBucketsRefillAndCap: a local bucket refills at its rate, never
// beyond its burst, and a full one is dropped.
func TestLocalBucketsRefillAndCap(t *testing.T) {
	lb := newLocalBuckets()
	l := &lane{id: "a"}
	w := []rateWant{{l, 10, endpoint.RateLimit{PerSecond: 4, Burst: 3}}}
	now := ddStart
	for i, want := range []struct {
		after   time.Duration
		granted int
	}{{0, 3}, {0, 0}, {500 * time.Millisecond, 2}, {time.Hour, 3}} {
		now = now.Add(want.after)
		if g := lb.take(w, now); g[0].Granted != want.granted {
			t.Fatalf("take %d: %+v; want %d", i, g, want.granted)
		}
	}
	lb.take(nil, now.Add(time.Hour))
	if len(lb.m) != 0 {
		t.Fatalf("a full bucket is kept: %+v", lb.m)
	}
}

// TestRateWindow: a limited lane takes from the fast path and the loader
// only what its rate sends in rateWindow (at least its burst), so its
// backlog waits in the store, not in the windows the lanes share.
func TestRateWindow(t *testing.T) {
	rb := newRateBed(t, endpoint.RateLimit{PerSecond: 2, Burst: 3})
	ids := []string{"a", "a", "a", "a", "a", "a", "b", "b", "b", "b", "b", "b"}
	granted, _, _ := rb.s.admit(ids)
	n := map[string]int{}
	for i, g := range granted {
		if g {
			n[ids[i]]++
		}
	}
	// 2/s for 2 s is 4, more than the burst; b takes what the test config's
	// EndpointWindow (10) allows.
	if n["a"] != 4 || n["b"] != 6 {
		t.Fatalf("places granted: %v; want a 4, b 6", n)
	}
	rb.s.mu.Lock()
	defer rb.s.mu.Unlock()
	if w := rb.s.lanes["a"].window(512); w != 4 {
		t.Fatalf("the limited lane's window: %d; want 4", w)
	}
	rb.s.lanes["a"].ep.RateLimit = &endpoint.RateLimit{PerSecond: 10_000, Burst: 1}
	if w := rb.s.lanes["a"].window(512); w != 512 {
		t.Fatalf("a fast limit's window: %d; want EndpointWindow", w)
	}
}
