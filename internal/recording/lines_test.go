package recording

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// summaries decodes the summary lines of a JSON log.
func summaries(t *testing.T, log *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(log.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// expireNow fails the test unless the budget's timer has fired (the fake
// clock fires a timer in the Advance that reaches it), then expires.
func expireNow(t *testing.T, b *lineBudget) {
	t.Helper()
	select {
	case <-b.due():
	default:
		t.Fatal("the budget's timer has not fired")
	}
	b.expire()
}

// TestLineBudget: each endpoint has its own linesPerEndpoint a
// linesInterval; the interval's end (its timer, on the clock) writes one
// summary of what was left out, by kind, for each endpoint that left
// something out; the next line starts a new interval; stop writes what is
// left.
func TestLineBudget(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	var log bytes.Buffer
	b := newLineBudget(clk, slog.New(slog.NewJSONHandler(&log, nil)))
	allowed := func(ep string, kind lineKind, n int) (yes int) {
		for range n {
			if b.allow(ep, kind) {
				yes++
			}
		}
		return yes
	}
	if n := allowed("ep_a", lineFailed, 15) + allowed("ep_a", lineDeadLettered, 3); n != linesPerEndpoint {
		t.Fatalf("ep_a: %d lines allowed, want %d", n, linesPerEndpoint)
	}
	clk.Advance(30 * time.Second)
	if n := allowed("ep_b", lineBlocked, 4); n != 4 {
		t.Fatalf("ep_b: %d of 4 lines allowed", n)
	}
	select {
	case <-b.due():
		t.Fatal("the timer fired before the first interval ended")
	default:
	}
	clk.Advance(30 * time.Second) // ep_a's interval ends
	expireNow(t, b)
	got := summaries(t, &log)
	if len(got) != 1 || got[0]["endpoint_id"] != "ep_a" || got[0]["more"] != 8.0 || got[0]["failed_attempts"] != 5.0 ||
		got[0]["dead_lettered"] != 3.0 || got[0]["logged"] != float64(linesPerEndpoint) || got[0]["blocked"] != nil {
		t.Fatalf("summaries %v, want one for ep_a: 8 more, 5 failed attempts, 3 dead letters", got)
	}
	if n := allowed("ep_a", lineFailed, 1); n != 1 {
		t.Fatal("ep_a's next interval refused its first line")
	}
	clk.Advance(30 * time.Second) // ep_b's ends with nothing left out
	expireNow(t, b)
	if _, open := b.windows["ep_b"]; open || len(summaries(t, &log)) != 1 {
		t.Fatalf("ep_b's interval: open %v, log %s", open, log.String())
	}
	allowed("ep_a", lineDropped, linesPerEndpoint)
	b.stop()
	got = summaries(t, &log)
	if len(got) != 2 || got[1]["dropped"] != 1.0 || got[1]["more"] != 1.0 || b.due() != nil || len(b.windows) != 0 {
		t.Fatalf("after stop: %v, timer %v, windows %d; want ep_a's 1 dropped line counted", got, b.due(), len(b.windows))
	}
}
