package attempting

import (
	"net/http"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/tracing"
)

// startSpan starts the span of an attempt of cs (tracing on): a child of
// the first delivery's event's publish span, linked to the other events'
// (a batch), with the delivery's attributes (tracing.Attempt).
func (a *Attempter) startSpan(sub *catalog.Entry, cs []store.Claimed, probe bool) tracing.AttemptSpan {
	at := tracing.Attempt{SubscriptionID: sub.ID, URL: urlOf(sub, &cs[0]), Probe: probe, DeadLetterOf: cs[0].DeadLetterOf,
		DeliveryIDs: make([]string, len(cs)), Parents: make([]string, len(cs))}
	for i := range cs {
		at.DeliveryIDs[i], at.Parents[i] = cs[i].ID, cs[i].TraceContext
		at.Number = max(at.Number, cs[i].Attempts+1)
	}
	return a.cfg.Tracer.StartAttempt(at)
}

// setTraceHeaders sets the push's W3C traceparent (the attempt span) and
// tracestate (the span's, or none), replacing those the subscription's own
// headers set: with tracing on, the trace a receiver continues is always
// the attempt's.
func setTraceHeaders(h http.Header, span tracing.AttemptSpan) {
	h[tracing.HeaderTraceparent] = []string{span.Traceparent}
	if span.Tracestate != "" {
		h[tracing.HeaderTracestate] = []string{span.Tracestate}
	} else {
		delete(h, tracing.HeaderTracestate)
	}
}
