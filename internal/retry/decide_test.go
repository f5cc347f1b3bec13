package retry

import (
	"math"
	"testing"
	"time"
)

// eventGridGaps are Event Grid's first ten gaps (the last, 12 h, repeats).
var eventGridGaps = []time.Duration{
	10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 10 * time.Minute,
	30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
}

func noJitterEventGrid(t *testing.T) Policy {
	t.Helper()
	zero := 0.0
	return mustResolve(t, Spec{Preset: "eventgrid", Jitter: &zero})
}

func TestEventGridGapsWithoutJitter(t *testing.T) {
	p := noJitterEventGrid(t)
	// With a TTL long enough not to interfere, the ten gaps, then 12 h again.
	p.TTL = 0
	p.MaxAttempts = 13
	steps, final := failAll(t, p, 500, 0, nil)
	want := append(append([]time.Duration{}, eventGridGaps...), 12*time.Hour, 12*time.Hour)
	if len(steps) != len(want) || final.Reason != ReasonMaxAttempts {
		t.Fatalf("%d retries then %+v, want %d", len(steps), final, len(want))
	}
	for k, w := range want {
		if steps[k].gap != w {
			t.Errorf("gap %d = %s, want %s", k+1, steps[k].gap, w)
		}
	}

	// The default 24 h TTL cuts the 12 h repeats: attempt 11 runs at
	// 82,000 s (22.78 h); the next would be at 34.78 h.
	p = noJitterEventGrid(t)
	steps, final = failAll(t, p, 500, 0, nil)
	if len(steps) != 10 {
		t.Fatalf("%d retries, want 10", len(steps))
	}
	if last := steps[9].offset; last != 82000*time.Second {
		t.Errorf("attempt 11 at %s, want 82000s (22.78h)", last)
	}
	if final.Kind != DeadLetter || final.Reason != ReasonTTL {
		t.Errorf("after attempt 11: %+v, want TimeToLiveExceeded", final)
	}
	v := p.Decide(Attempt{Number: 11, StatusCode: 500, Start: t0, Now: t0.Add(82000 * time.Second)}, nil)
	if v.Kind != DeadLetter || v.Reason != ReasonTTL {
		t.Errorf("attempt 11 direct: %+v", v)
	}
}

func TestEventGridJitterBounds(t *testing.T) {
	p := mustResolve(t, Spec{}) // default: eventgrid, ±5 %
	for _, r := range []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999999} {
		rnd := func() float64 { return r }
		for _, code := range []int{0, 500, 408, 503} {
			for k, gap := range eventGridGaps {
				v := p.Decide(Attempt{Number: k + 1, StatusCode: code, Start: t0, Now: t0}, rnd)
				if v.Kind != Retry {
					t.Fatalf("r %g code %d attempt %d: %+v", r, code, k+1, v)
				}
				got := v.At.Sub(t0)
				floor := 10 * time.Second
				switch code {
				case 408:
					floor = 2 * time.Minute
				case 503:
					floor = 30 * time.Second
				}
				lo := max(time.Duration(float64(gap)*0.95), floor)
				hi := max(time.Duration(float64(gap)*1.05), floor)
				if got < lo || got > hi {
					t.Errorf("r %g code %d attempt %d: delay %s outside [%s, %s]", r, code, k+1, got, lo, hi)
				}
			}
		}
	}
	// The exact jitter: rnd 0 is −5 %, rnd 0.5 none, rnd → 1 is +5 %.
	at := func(r float64, n int) time.Duration {
		return p.Decide(Attempt{Number: n, StatusCode: 500, Start: t0, Now: t0}, func() float64 { return r }).At.Sub(t0)
	}
	if got := at(0, 4); got != 285*time.Second {
		t.Errorf("5m −5%% = %s, want 4m45s", got)
	}
	if got := at(0.5, 4); got != 5*time.Minute {
		t.Errorf("5m ±0 = %s", got)
	}
	if got := at(0.75, 4); got != 307500*time.Millisecond {
		t.Errorf("5m +2.5%% = %s, want 5m7.5s", got)
	}
	// The 10 s gap never goes under the 10 s minimum.
	if got := at(0, 1); got != 10*time.Second {
		t.Errorf("10s −5%% = %s, want the 10s minimum", got)
	}
}

func TestEventGridCodes(t *testing.T) {
	p := noJitterEventGrid(t)
	decide := func(code int, ra time.Duration) Verdict {
		return p.Decide(Attempt{Number: 1, StatusCode: code, RetryAfter: ra, Start: t0, Now: t0}, nil)
	}
	for _, code := range []int{200, 201, 202, 203, 204} {
		if v := decide(code, 0); v.Kind != Delivered {
			t.Errorf("%d: %+v, want Delivered", code, v)
		}
	}
	for _, code := range []int{205, 206, 207, 226, 299, 301, 500, 0} {
		if v := decide(code, 0); v.Kind != Retry {
			t.Errorf("%d: %+v, want Retry", code, v)
		}
	}
	for _, code := range []int{400, 401, 403, 404, 413} {
		v := p.Decide(Attempt{Number: 1, StatusCode: code, Start: t0, Now: t0}, nil)
		if v.Kind != DeadLetter || v.Reason != ReasonNoRetry {
			t.Errorf("%d: %+v, want NonRetriableStatus", code, v)
		}
		// Even with attempts to spare late in the budget.
		v = p.Decide(Attempt{Number: 29, StatusCode: code, Start: t0, Now: t0.Add(time.Hour)}, nil)
		if v.Reason != ReasonNoRetry {
			t.Errorf("%d at attempt 29: %+v", code, v)
		}
	}
	checks := []struct {
		name string
		code int
		ra   time.Duration
		want time.Duration
	}{
		{"408 waits 2m", 408, 0, 2 * time.Minute},
		{"503 waits 30s", 503, 0, 30 * time.Second},
		{"500 keeps 10s", 500, 0, 10 * time.Second},
		{"503 Retry-After 120", 503, 120 * time.Second, 120 * time.Second},
		{"429 Retry-After 90", 429, 90 * time.Second, 90 * time.Second},
		{"500 ignores Retry-After", 500, 120 * time.Second, 10 * time.Second},
		{"Retry-After 7200 capped at 1h", 503, 7200 * time.Second, time.Hour},
		{"Retry-After shorter than the schedule", 503, time.Second, 30 * time.Second},
	}
	for _, c := range checks {
		v := decide(c.code, c.ra)
		if v.Kind != Retry || v.At.Sub(t0) != c.want {
			t.Errorf("%s: %+v (+%s), want retry at +%s", c.name, v, v.At.Sub(t0), c.want)
		}
	}
	// A minimum below the scheduled gap does not shorten it.
	if v := p.Decide(Attempt{Number: 5, StatusCode: 408, Start: t0, Now: t0}, nil); v.At.Sub(t0) != 10*time.Minute {
		t.Errorf("408 at attempt 5: +%s, want 10m", v.At.Sub(t0))
	}
}

func TestEventGridLimits(t *testing.T) {
	// Retry-After that would pass the TTL: the TTL wins.
	p := noJitterEventGrid(t)
	now := t0.Add(23*time.Hour + 30*time.Minute)
	v := p.Decide(Attempt{Number: 3, StatusCode: 503, RetryAfter: time.Hour, Start: t0, Now: now}, nil)
	if v.Kind != DeadLetter || v.Reason != ReasonTTL {
		t.Errorf("Retry-After past ttl: %+v, want TimeToLiveExceeded", v)
	}
	// The same Retry-After earlier in the budget is honoured.
	v = p.Decide(Attempt{Number: 3, StatusCode: 503, RetryAfter: time.Hour, Start: t0, Now: t0}, nil)
	if v.Kind != Retry || v.At.Sub(t0) != time.Hour {
		t.Errorf("Retry-After within ttl: %+v", v)
	}
	// max_attempts override: attempt 3 fails → dead-letter.
	three := 3
	p3 := mustResolve(t, Spec{MaxAttempts: &three})
	steps, final := failAll(t, p3, 500, 0, func() float64 { return 0.5 })
	if len(steps) != 2 || final.Reason != ReasonMaxAttempts {
		t.Errorf("max_attempts 3: %d retries then %+v", len(steps), final)
	}
	// A short ttl override.
	ttl := Duration(2 * time.Minute)
	short := mustResolve(t, Spec{TTL: &ttl, Jitter: new(float64)})
	steps, final = failAll(t, short, 500, 0, nil)
	if len(steps) != 3 || final.Reason != ReasonTTL { // 10s, 40s, 100s; next 400s
		t.Errorf("ttl 2m: %d retries then %+v", len(steps), final)
	}
}

func TestDecideEdges(t *testing.T) {
	p := noJitterEventGrid(t)
	// Number 0 counts as 1; a zero Start counts from now.
	v := p.Decide(Attempt{Number: 0, StatusCode: 500, Now: t0}, nil)
	if v.Kind != Retry || v.At.Sub(t0) != 10*time.Second {
		t.Errorf("zero attempt: %+v", v)
	}
	// An rnd out of range is clamped.
	j := mustResolve(t, Spec{})
	v = j.Decide(Attempt{Number: 4, StatusCode: 500, Start: t0, Now: t0}, func() float64 { return 7 })
	if got := v.At.Sub(t0); got != 315*time.Second {
		t.Errorf("rnd 7: +%s, want +5m15s", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 27, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"0", 0, true},
		{"-5", 0, true},
		{"Wed, 21 Oct 2015 07:28:00 GMT", time.Minute, true},
		{"Wednesday, 21-Oct-15 07:29:00 GMT", 2 * time.Minute, true},
		{"Wed Oct 21 07:30:00 2015", 3 * time.Minute, true},
		{"Wed, 21 Oct 2015 07:00:00 GMT", 0, true},
		{"99999999999999999999", time.Duration(math.MaxInt64), true},
		{"-99999999999999999999", 0, true},
		{"", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"Wed, 21 Oct 2015 07:28:00", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
