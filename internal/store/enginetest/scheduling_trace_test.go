package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// Trace contexts as tracing.Encode writes them: a traceparent, and one
// with its tracestate.
const (
	traceContextA = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceContextB = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01;congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
)

// testClaimTraceContext: an event's trace context comes back with each of
// its deliveries a claim takes (first attempt and retry), and an event
// published without one (tracing off) gives "". Published in one call,
// so a store that writes a batch's events together keeps each its own.
func testClaimTraceContext(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	c := b.sub("https://c.example/hook")
	evs := []store.NewEvent{b.event(b.now, a), b.event(b.at(time.Second), a, c), b.event(b.at(2*time.Second), a)}
	evs[0].TraceContext, evs[1].TraceContext = traceContextA, traceContextB
	b.publish(evs...)
	now := b.at(time.Minute)
	got := b.claim(a.EndpointID, now, 10)
	equal(t, "claimed", claimedIDs(got), []string{evs[0].Deliveries[0].ID, evs[1].Deliveries[0].ID, evs[2].Deliveries[0].ID})
	equal(t, "trace contexts", []string{got[0].TraceContext, got[1].TraceContext, got[2].TraceContext},
		[]string{traceContextA, traceContextB, ""})
	first := got[0]
	b.record(failed(first.ID, 1, now, now, b.at(90*time.Second)))
	retry := b.claim(a.EndpointID, b.at(2*time.Minute), 10)
	if len(retry) != 1 || retry[0].ID != first.ID || retry[0].TraceContext != traceContextA {
		t.Fatalf("the retry's claim: %+v; want %s with %q", retry, first.ID, traceContextA)
	}
	other := b.claim(c.EndpointID, now, 10)
	if len(other) != 1 || other[0].TraceContext != traceContextB {
		t.Fatalf("the other subscription's claim: %+v; want its delivery with %q", other, traceContextB)
	}
}
