package retry

import (
	"math"
	"testing"
	"time"
)

func TestTimetable(t *testing.T) {
	tests := []struct {
		preset  string
		offsets []time.Duration // of attempts 2, 3, …
	}{
		{"workfront", workfrontOffsets},
		{"sap", []time.Duration{8 * time.Second, 64 * time.Second, 512 * time.Second, 4096 * time.Second, 32768 * time.Second}},
		{"eventgrid", cumulative(eventGridGaps[:9], 12*time.Hour)},
		{"workfront-legacy", cumulative(repeat(10*time.Minute, 12))},
	}
	for _, tt := range tests {
		rows := mustResolve(t, Spec{Preset: tt.preset}).Timetable()
		if len(rows) != len(tt.offsets)+1 {
			t.Errorf("%s: %d rows, want %d", tt.preset, len(rows), len(tt.offsets)+1)
			continue
		}
		if rows[0] != (Row{Attempt: 1}) {
			t.Errorf("%s: first row %+v", tt.preset, rows[0])
		}
		prev := time.Duration(0)
		for k, off := range tt.offsets {
			r := rows[k+1]
			if r.Attempt != k+2 || !near(r.OffsetSeconds, off.Seconds()) || !near(r.DelaySeconds, (off-prev).Seconds()) {
				t.Errorf("%s: row %d = %+v, want offset %gs delay %gs", tt.preset, k+2, r, off.Seconds(), (off - prev).Seconds())
			}
			prev = off
		}
	}
}

func TestTimetableSpotValues(t *testing.T) {
	wf := mustResolve(t, Spec{Preset: "workfront"}).Timetable()
	if r := wf[1]; !near(r.OffsetSeconds, 84.8) || !near(r.DelaySeconds, 84.8) {
		t.Errorf("workfront retry 1: %+v", r)
	}
	if r := wf[11]; r.Attempt != 12 || !near(r.OffsetSeconds, 173585.6) || !near(r.DelaySeconds, 86835.2) {
		t.Errorf("workfront retry 11: %+v", r)
	}
	eg := mustResolve(t, Spec{}).Timetable()
	if last := eg[len(eg)-1]; last.Attempt != 11 || !near(last.OffsetSeconds, 82000) {
		t.Errorf("eventgrid last row %+v, want attempt 11 at 82000s", last)
	}
	ps := mustResolve(t, Spec{Preset: "pubsub"}).Timetable()
	if len(ps) != 149 || !near(ps[148].OffsetSeconds, 85830) {
		t.Errorf("pubsub: %d rows, last %+v", len(ps), ps[len(ps)-1])
	}
}

func TestTimetableBounded(t *testing.T) {
	p := mustResolve(t, parseSpec(t, `{"preset":"custom","delays":["100ms"],"ttl":"720h"}`))
	if rows := p.Timetable(); len(rows) != MaxTimetableRows {
		t.Errorf("%d rows, want the %d cap", len(rows), MaxTimetableRows)
	}
}

func cumulative(gaps []time.Duration, extra ...time.Duration) []time.Duration {
	var out []time.Duration
	var sum time.Duration
	for _, g := range append(append([]time.Duration{}, gaps...), extra...) {
		sum += g
		out = append(out, sum)
	}
	return out
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
