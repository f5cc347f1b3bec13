package tracing

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The W3C Trace Context header names (canonical), and the CloudEvents
// Distributed Tracing extension's attribute names, which are the same in
// lower case (also the propagator's carrier keys).
const (
	HeaderTraceparent = "Traceparent"
	HeaderTracestate  = "Tracestate"
	ExtTraceparent    = "traceparent"
	ExtTracestate     = "tracestate"
)

// propagator reads and writes W3C traceparent and tracestate.
var propagator = propagation.TraceContext{}

// WithRequest returns ctx carrying the remote span context of a
// request's traceparent and tracestate headers, the parent of the spans
// started in it (ctx as it is when h has no valid traceparent).
func WithRequest(ctx context.Context, h http.Header) context.Context {
	if len(h[HeaderTraceparent]) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Parse reads a W3C traceparent and tracestate (a tracestate that does
// not parse is left out); ok is false when traceparent is not valid.
func Parse(traceparent, tracestate string) (sc trace.SpanContext, ok bool) {
	if traceparent == "" {
		return trace.SpanContext{}, false
	}
	c := propagation.MapCarrier{ExtTraceparent: traceparent}
	if tracestate != "" {
		c[ExtTracestate] = tracestate
	}
	sc = trace.SpanContextFromContext(propagator.Extract(context.Background(), c))
	return sc, sc.IsValid()
}

// Encode is how a span context is stored with its event (and read back
// by Decode): its W3C traceparent, followed by ";" and its tracestate when
// it has one. A traceparent never holds a ";".
func Encode(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tp, ts := Header(sc)
	if ts == "" {
		return tp
	}
	return tp + ";" + ts
}

// Decode reads what Encode wrote; ok is false for "" or anything else
// that is not a valid span context.
func Decode(s string) (sc trace.SpanContext, ok bool) {
	tp, ts, _ := strings.Cut(s, ";")
	sc, ok = Parse(tp, ts)
	if ok {
		sc = sc.WithRemote(true)
	}
	return sc, ok
}

// Header returns the W3C traceparent and tracestate ("" for none) that
// name sc as the parent of what a request leads to.
func Header(sc trace.SpanContext) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c[ExtTraceparent], c[ExtTracestate]
}
