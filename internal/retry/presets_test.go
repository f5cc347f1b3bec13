package retry

import (
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// retryStep is one retry Decide scheduled: its offset from the first
// attempt and its gap from the end of the attempt before it.
type retryStep struct {
	offset, gap time.Duration
}

// failAll drives p through Decide as the engine does: the first attempt
// starts and fails at t0 (the budget start), and every later attempt runs
// late after its scheduled time and fails with code at once. It returns the
// retries scheduled and the final verdict.
func failAll(t *testing.T, p Policy, code int, late time.Duration, rnd func() float64) ([]retryStep, Verdict) {
	t.Helper()
	var (
		steps []retryStep
		first time.Time
		now   = t0
	)
	for n := 1; n < 100000; n++ {
		v := p.Decide(Attempt{Number: n, StatusCode: code, Start: t0, FirstFailure: first, Now: now}, rnd)
		if v.Kind != Retry {
			return steps, v
		}
		if v.At.Before(now) {
			t.Fatalf("attempt %d: retry at %s is before now %s", n, v.At, now)
		}
		if first.IsZero() {
			first = now
		}
		steps = append(steps, retryStep{offset: v.At.Sub(t0), gap: v.At.Sub(now)})
		now = v.At.Add(late)
	}
	t.Fatal("policy never ended")
	return nil, Verdict{}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// workfrontOffsets are Workfront's retry times: (2^k − 1) × 84.8 s for
// k = 1..11.
var workfrontOffsets = []time.Duration{
	ms(84_800), ms(254_400), ms(593_600), ms(1_272_000), ms(2_628_800), ms(5_342_400),
	ms(10_769_600), ms(21_624_000), ms(43_332_800), ms(86_750_400), ms(173_585_600),
}

func TestWorkfront(t *testing.T) {
	p := mustResolve(t, Spec{Preset: "workfront"})
	// Anchored to t0: attempts that run 7 s late do not shift later retries.
	for _, late := range []time.Duration{0, 7 * time.Second} {
		steps, final := failAll(t, p, 500, late, nil)
		if len(steps) != 11 {
			t.Fatalf("late %s: %d retries, want 11", late, len(steps))
		}
		for k, s := range steps {
			if s.offset != workfrontOffsets[k] {
				t.Errorf("late %s: retry %d at %s (%.1f s), want %.1f s", late, k+1, s.offset, s.offset.Seconds(), workfrontOffsets[k].Seconds())
			}
		}
		if final.Kind != DeadLetter || final.Reason != ReasonMaxAttempts {
			t.Errorf("late %s: after attempt 12: %+v, want MaxDeliveryAttemptsExceeded", late, final)
		}
	}
	// Retry 11 at ≈ 48.2 h: past 48 h, which is why the preset has no TTL.
	if h := workfrontOffsets[10].Hours(); h < 48.2 || h > 48.3 {
		t.Errorf("retry 11 at %.3f h", h)
	}
	// With a 48 h TTL override, retry 11 is not scheduled.
	ttl := Duration(48 * time.Hour)
	capped := mustResolve(t, Spec{Preset: "workfront", TTL: &ttl})
	steps, final := failAll(t, capped, 500, 0, nil)
	if len(steps) != 10 || final.Reason != ReasonTTL {
		t.Errorf("ttl 48h: %d retries, then %+v; want 10 then TimeToLiveExceeded", len(steps), final)
	}
}

func TestWorkfrontDecideDirect(t *testing.T) {
	p := mustResolve(t, Spec{Preset: "workfront"})
	for k, off := range workfrontOffsets {
		// The failure of attempt k+1 (k+1 ≥ 2) is observed 3 minutes after t0
		// plus the previous offset; the retry stays at t0 + offset.
		now := t0.Add(time.Second)
		if k > 0 {
			now = t0.Add(workfrontOffsets[k-1] + 3*time.Second)
		}
		v := p.Decide(Attempt{Number: k + 1, StatusCode: 503, Start: t0, FirstFailure: t0, Now: now}, nil)
		if v.Kind != Retry || !v.At.Equal(t0.Add(off)) {
			t.Errorf("attempt %d: %+v, want retry at t0+%s", k+1, v, off)
		}
	}
	// Attempt 12 fails: dead-letter.
	v := p.Decide(Attempt{Number: 12, StatusCode: 500, Start: t0, FirstFailure: t0, Now: t0.Add(workfrontOffsets[10])}, nil)
	if v.Kind != DeadLetter || v.Reason != ReasonMaxAttempts {
		t.Errorf("attempt 12: %+v, want MaxDeliveryAttemptsExceeded", v)
	}
	// 4xx are retried: no code is exempt.
	for _, code := range []int{0, 400, 401, 403, 404, 410, 413, 429} {
		v := p.Decide(Attempt{Number: 1, StatusCode: code, Start: t0, Now: t0}, nil)
		if v.Kind != Retry || !v.At.Equal(t0.Add(workfrontOffsets[0])) {
			t.Errorf("code %d: %+v, want retry at +84.8s", code, v)
		}
	}
	// A very late attempt whose next slot has passed is retried at once.
	late := t0.Add(workfrontOffsets[3])
	v = p.Decide(Attempt{Number: 2, StatusCode: 500, Start: t0, FirstFailure: t0, Now: late}, nil)
	if v.Kind != Retry || !v.At.Equal(late) {
		t.Errorf("late attempt: %+v, want retry now (%s)", v, late)
	}
}

func TestWorkfrontLegacy(t *testing.T) {
	p := mustResolve(t, Spec{Preset: "workfront-legacy"})
	steps, final := failAll(t, p, 500, 0, nil)
	if len(steps) != 12 {
		t.Fatalf("%d retries, want 12", len(steps))
	}
	for k, s := range steps {
		if s.gap != 600*time.Second || s.offset != time.Duration(k+1)*600*time.Second {
			t.Errorf("retry %d: gap %s offset %s, want 10m and %s", k+1, s.gap, s.offset, time.Duration(k+1)*10*time.Minute)
		}
	}
	if final.Kind != DeadLetter || final.Reason != ReasonMaxAttempts {
		t.Errorf("after attempt 13: %+v", final)
	}
	if total := steps[len(steps)-1].offset; total < 2*time.Hour {
		t.Errorf("retries span %s, want ≥ 2h", total)
	}
	// Not anchored: a late attempt pushes the next one back.
	steps, _ = failAll(t, p, 500, time.Minute, nil)
	if steps[1].offset != 21*time.Minute {
		t.Errorf("late: retry 2 at %s, want 21m", steps[1].offset)
	}
}

func TestPubSub(t *testing.T) {
	p := mustResolve(t, Spec{Preset: "pubsub"})
	steps, final := failAll(t, p, 500, 0, nil)
	want := []time.Duration{10, 20, 40, 80, 160, 320, 600, 600, 600}
	for k, w := range want {
		if steps[k].gap != w*time.Second {
			t.Errorf("gap %d = %s, want %ds", k+1, steps[k].gap, w)
		}
	}
	for k := len(want); k < len(steps); k++ {
		if steps[k].gap != 600*time.Second {
			t.Fatalf("gap %d = %s, want 600s", k+1, steps[k].gap)
		}
	}
	// 630 s of growing gaps, then 600 s each while before 24 h.
	if final.Kind != DeadLetter || final.Reason != ReasonTTL {
		t.Errorf("final %+v, want TimeToLiveExceeded", final)
	}
	last := steps[len(steps)-1].offset
	if len(steps) != 148 || last != 85830*time.Second {
		t.Errorf("%d retries, last at %s; want 148, last at 85830s", len(steps), last)
	}

	// max_attempts 5: the 5th attempt's failure dead-letters.
	five := 5
	p5 := mustResolve(t, Spec{Preset: "pubsub", MaxAttempts: &five})
	steps, final = failAll(t, p5, 500, 0, nil)
	if len(steps) != 4 || final.Reason != ReasonMaxAttempts {
		t.Errorf("max_attempts 5: %d retries then %+v", len(steps), final)
	}
}

func TestSAP(t *testing.T) {
	p := mustResolve(t, Spec{Preset: "sap"})
	want := []time.Duration{8, 64, 512, 4096, 32768}
	for _, late := range []time.Duration{0, 2 * time.Second} {
		steps, final := failAll(t, p, 502, late, nil)
		if len(steps) != len(want) {
			t.Fatalf("late %s: %d retries, want 5", late, len(steps))
		}
		for k, w := range want {
			if steps[k].offset != w*time.Second {
				t.Errorf("late %s: retry %d at %s, want %ds after t0", late, k+1, steps[k].offset, w)
			}
		}
		if final.Kind != DeadLetter || final.Reason != ReasonMaxAttempts {
			t.Errorf("after attempt 6: %+v", final)
		}
	}
}

func TestCustom(t *testing.T) {
	p := mustResolve(t, parseSpec(t, `{"preset":"custom","delays":["100ms","1s"],"max_attempts":5}`))
	steps, final := failAll(t, p, 500, 0, nil)
	wantGaps := []time.Duration{100 * time.Millisecond, time.Second, time.Second, time.Second}
	if len(steps) != len(wantGaps) || final.Reason != ReasonMaxAttempts {
		t.Fatalf("%d retries then %+v, want 4 then MaxDeliveryAttemptsExceeded", len(steps), final)
	}
	for k, w := range wantGaps {
		if steps[k].gap != w {
			t.Errorf("gap %d = %s, want %s", k+1, steps[k].gap, w)
		}
	}

	b := mustResolve(t, parseSpec(t, `{"preset":"custom","backoff":{"initial":"1s","multiplier":3,"max":"20s"},"max_attempts":7}`))
	steps, _ = failAll(t, b, 500, 0, nil)
	wantGaps = []time.Duration{1, 3, 9, 20, 20, 20}
	for k, w := range wantGaps {
		if steps[k].gap != w*time.Second {
			t.Errorf("backoff gap %d = %s, want %ds", k+1, steps[k].gap, w)
		}
	}

	// ttl bounds a custom policy without max_attempts.
	d := mustResolve(t, parseSpec(t, `{"preset":"custom","delays":["1m"],"ttl":"10m"}`))
	steps, final = failAll(t, d, 500, 0, nil)
	if len(steps) != 9 || final.Reason != ReasonTTL {
		t.Errorf("ttl 10m with 1m gaps: %d retries then %+v, want 9 then TimeToLiveExceeded", len(steps), final)
	}

	// Jitter on custom is ±fraction of the gap.
	j := mustResolve(t, parseSpec(t, `{"preset":"custom","delays":["10s"],"max_attempts":3,"jitter":0.5}`))
	v := j.Decide(Attempt{Number: 1, StatusCode: 500, Start: t0, Now: t0}, func() float64 { return 0 })
	if !v.At.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("jitter 0.5, rnd 0: at %s, want +5s", v.At.Sub(t0))
	}
}

func TestNamedPresetWithDelaysOverride(t *testing.T) {
	p := mustResolve(t, parseSpec(t, `{"preset":"workfront","delays":["1m"],"no_retry_codes":[410],"success_codes":[200]}`))
	if p.Schedule.Anchored || p.MaxAttempts != 12 {
		t.Fatalf("schedule %+v, attempts %d; want gaps of 1m and 12 attempts", p.Schedule, p.MaxAttempts)
	}
	steps, final := failAll(t, p, 201, 0, nil) // 201 is not success any more
	if len(steps) != 11 || steps[10].offset != 11*time.Minute || final.Reason != ReasonMaxAttempts {
		t.Errorf("%d retries, last at %s, then %+v", len(steps), steps[len(steps)-1].offset, final)
	}
	if v := p.Decide(Attempt{Number: 1, StatusCode: 410, Start: t0, Now: t0}, nil); v.Reason != ReasonNoRetry {
		t.Errorf("410: %+v, want NonRetriableStatus", v)
	}
	// eventgrid keeps its per-code minimums under a delays override.
	eg := mustResolve(t, parseSpec(t, `{"delays":["1s"],"jitter":0}`))
	if v := eg.Decide(Attempt{Number: 1, StatusCode: 500, Start: t0, Now: t0}, nil); !v.At.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("eventgrid delays 1s: at +%s, want +10s", v.At.Sub(t0))
	}
}
