package admission

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/tracing"
)

// startSpans starts the publish span of each event (tracing on) and
// gives each stored event its span's context (store.NewEvent.TraceContext).
// An event's parent is its traceparent extension (CloudEvents Distributed
// Tracing) when valid, else ctx's (the request's traceparent header:
// tracing.WithRequest), else none.
func (in *Publisher) startSpans(ctx context.Context, evs []event.Event, news []store.NewEvent) []trace.Span {
	spans := make([]trace.Span, len(news))
	for i := range news {
		ne := &news[i]
		te := tracing.Event{AccountID: ne.AccountID, ID: ne.ID, Source: ne.Source, Type: ne.Type, Subject: ne.Subject}
		te.Traceparent, _ = evs[i].Extensions[tracing.ExtTraceparent].(string)
		te.Tracestate, _ = evs[i].Extensions[tracing.ExtTracestate].(string)
		spans[i] = in.Tracer.StartPublish(ctx, te)
		ne.TraceContext = tracing.Encode(spans[i].SpanContext())
	}
	return spans
}

// endSpans ends the publish spans of a call: each with its event's
// result, or all with err.
func endSpans(spans []trace.Span, res []Result, err error) {
	for i, span := range spans {
		if err != nil {
			tracing.EndPublish(span, 0, false, err)
			continue
		}
		tracing.EndPublish(span, res[i].Deliveries, res[i].Duplicate, nil)
	}
}
