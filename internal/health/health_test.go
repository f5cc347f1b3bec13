package health

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// run applies outcomes given as a string of S (success) and F (failure), one
// every step, starting at `from`, and returns the time after the last one.
func run(c Config, h *Health, pattern string, from time.Time, step time.Duration) (time.Time, Transition) {
	at := from
	var last Transition
	for _, r := range pattern {
		last = c.Observe(h, Outcome{At: at, Success: r == 'S'})
		at = at.Add(step)
	}
	return at, last
}

func fails(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'F'
	}
	return string(b)
}

// spread returns n outcomes with `f` failures, never more than four
// failures in a row (so that probation, 10 in a row, stays out of the way),
// ending on a failure.
func spread(n, f int) string {
	b := make([]byte, 0, n)
	run := 0
	for len(b) < n {
		if f > 0 && run < 4 {
			b = append(b, 'F')
			f--
			run++
			continue
		}
		b = append(b, 'S')
		run = 0
	}
	if f > 0 {
		panic("pattern cannot hold that many failures")
	}
	// End on a failure: the rate rule is evaluated when a failure arrives.
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func TestConsecutiveDisableEdge(t *testing.T) {
	c := DefaultConfig()
	// One failure a minute keeps the window under 100 attempts, so only the
	// consecutive rule can disable.
	for _, tc := range []struct {
		n    int
		want State
	}{{1999, Probation}, {2000, Disabled}} {
		h := &Health{}
		run(c, h, fails(tc.n), t0, time.Minute)
		if h.State != tc.want || h.ConsecutiveFailures != int64(tc.n) {
			t.Errorf("%d consecutive failures: %s (%d), want %s", tc.n, h.State, h.ConsecutiveFailures, tc.want)
		}
	}
}

func TestFailureRateEdges(t *testing.T) {
	c := DefaultConfig()
	cases := []struct {
		name               string
		attempts, failures int
		want               State
	}{
		{"100 attempts at 71%", 100, 71, Enabled},
		{"101 attempts at 71%", 101, 72, Disabled},
		{"101 attempts at 69.3% (70 failures)", 101, 70, Enabled},
		{"101 attempts at 70.3% (71 failures)", 101, 71, Disabled},
	}
	for _, tc := range cases {
		h := &Health{}
		// All within one minute: well inside the hour's window.
		_, tr := run(c, h, spread(tc.attempts, tc.failures), t0, 100*time.Millisecond)
		if h.State != tc.want {
			a, f := h.Window.Counts(c.Window, t0.Add(time.Minute))
			t.Errorf("%s: %s (window %d/%d), want %s", tc.name, h.State, f, a, tc.want)
		}
		if tc.want == Disabled && h.DisabledAt.IsZero() {
			t.Errorf("%s: DisabledAt unset (%+v)", tc.name, tr)
		}
	}
}

func TestWindowForgetsOldAttempts(t *testing.T) {
	c := DefaultConfig()
	h := &Health{}
	// 90 failures-heavy attempts, then an hour and a minute later 20 more:
	// the window holds only the 20, so the rate rule does not fire.
	at, _ := run(c, h, spread(90, 60), t0, time.Second)
	run(c, h, spread(20, 13), at.Add(61*time.Minute), time.Second)
	if h.State != Enabled {
		t.Fatalf("state %s; old attempts should have left the window", h.State)
	}
	a, _ := h.Window.Counts(c.Window, at.Add(62*time.Minute))
	if a != 20 {
		t.Fatalf("window holds %d attempts, want 20", a)
	}
}

func TestStaleFreezeEdge(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		sinceSuccess time.Duration
		want         State
	}{{72 * time.Hour, Disabled}, {72*time.Hour + time.Millisecond, Frozen}} {
		h := &Health{}
		c.Observe(h, Outcome{At: t0, Success: true})
		// 2,000 failures a minute apart: disabled by the consecutive rule.
		run(c, h, fails(2000), t0.Add(time.Minute), time.Minute)
		if h.State != Disabled {
			t.Fatalf("after 2000 failures: %s", h.State)
		}
		// The 2,001st (a failed probe) at sinceSuccess after the last success.
		tr := c.Observe(h, Outcome{At: t0.Add(tc.sinceSuccess), Probe: true})
		if h.State != tc.want {
			t.Errorf("2001 failures, last success %s ago: %s, want %s", tc.sinceSuccess, h.State, tc.want)
		}
		if tc.want == Frozen && (tr.From != Disabled || h.FrozenAt.IsZero()) {
			t.Errorf("freeze transition %+v", tr)
		}
	}
}

func TestStaleFreezeWithoutSuccessUsesFirstAttempt(t *testing.T) {
	c := DefaultConfig()
	h := &Health{}
	run(c, h, fails(2001), t0, time.Second) // first attempt at t0, no success
	if h.State != Disabled {
		t.Fatalf("state %s", h.State)
	}
	c.Observe(h, Outcome{At: t0.Add(73 * time.Hour)})
	if h.State != Frozen {
		t.Fatalf("no success and first attempt 73 h ago: %s, want frozen", h.State)
	}
}

func TestFreezeConsecutiveEdge(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		n    int
		want State
	}{{49999, Disabled}, {50000, Frozen}} {
		h := &Health{}
		c.Observe(h, Outcome{At: t0, Success: true})
		// All within 50 s of a success: the stale rule cannot fire.
		run(c, h, fails(tc.n), t0, time.Millisecond)
		if h.State != tc.want {
			t.Errorf("%d consecutive failures: %s, want %s", tc.n, h.State, tc.want)
		}
	}
}

func TestProbationDoublesAndEnds(t *testing.T) {
	c := DefaultConfig()
	h := &Health{}
	at, tr := run(c, h, fails(10), t0, time.Second)
	if h.State != Probation || tr.From != Enabled || h.ProbationDelay != 10*time.Second {
		t.Fatalf("after 10 failures: %+v %+v", h, tr)
	}
	last := at.Add(-time.Second)
	if !h.NextProbeAt.Equal(last.Add(10 * time.Second)) {
		t.Fatalf("first probe at %s, want 10 s after the 10th failure", h.NextProbeAt.Sub(last))
	}
	if c.Gate(h, h.NextProbeAt.Add(-time.Millisecond)) != Closed || c.Gate(h, h.NextProbeAt) != ProbeNow {
		t.Fatal("probation gate")
	}
	for _, want := range []time.Duration{20, 40, 80, 160, 300, 300} {
		probe := h.NextProbeAt
		c.Observe(h, Outcome{At: probe.Add(-time.Millisecond)}) // in flight before probation: no effect
		c.Observe(h, Outcome{At: probe, Probe: true})
		if h.State != Probation || h.ProbationDelay != want*time.Second || !h.NextProbeAt.Equal(probe.Add(want*time.Second)) {
			t.Fatalf("after a failed probe: delay %s next +%s, want %ds", h.ProbationDelay, h.NextProbeAt.Sub(probe), want)
		}
	}
	tr = c.Observe(h, Outcome{At: h.NextProbeAt, Success: true})
	if h.State != Enabled || tr.To != Enabled || h.ConsecutiveFailures != 0 || c.Gate(h, h.NextProbeAt) != Open {
		t.Fatalf("a successful probe ends probation: %+v", h)
	}
}

func TestGoneDisablesAtOnce(t *testing.T) {
	c := DefaultConfig()
	h := &Health{}
	tr := c.Observe(h, Outcome{At: t0, Gone: true})
	if h.State != Disabled || tr.Reason != "410 Gone" || !h.NextProbeAt.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("410: %+v %+v", h, tr)
	}
}

func TestDisabledProbesEveryIntervalAndReenables(t *testing.T) {
	c := DefaultConfig()
	h := &Health{}
	c.Observe(h, Outcome{At: t0, Gone: true})
	for i := 1; i <= 3; i++ {
		probe := h.NextProbeAt
		if !probe.Equal(t0.Add(time.Duration(i) * 10 * time.Minute)) {
			t.Fatalf("probe %d at +%s", i, probe.Sub(t0))
		}
		if c.Gate(h, probe.Add(-time.Second)) != Closed || c.Gate(h, probe) != ProbeNow {
			t.Fatalf("gate around probe %d", i)
		}
		c.Observe(h, Outcome{At: probe, Probe: true})
	}
	c.Observe(h, Outcome{At: h.NextProbeAt, Success: true})
	if h.State != Enabled {
		t.Fatalf("a successful probe re-enables: %s", h.State)
	}
}

func TestFrozenGetsNothingUntilEnabled(t *testing.T) {
	c := DefaultConfig()
	h := &Health{}
	c.Observe(h, Outcome{At: t0, Success: true})
	run(c, h, fails(50000), t0, time.Millisecond)
	if h.State != Frozen || c.Gate(h, t0.Add(1000*time.Hour)) != Closed {
		t.Fatalf("frozen: %s", h.State)
	}
	// A late outcome (in flight when it froze) does not unfreeze.
	c.Observe(h, Outcome{At: t0.Add(time.Hour), Success: true})
	if h.State != Frozen {
		t.Fatal("a late success unfroze the endpoint")
	}
	tr := c.Enable(h)
	if h.State != Enabled || h.ConsecutiveFailures != 0 || tr.From != Frozen || !h.FrozenAt.IsZero() {
		t.Fatalf("enable: %+v", h)
	}
	if a, _ := h.Window.Counts(c.Window, t0.Add(time.Hour)); a != 0 {
		t.Fatal("enable keeps the window")
	}
}
