package tracing

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span names (docs/tracing.md).
const (
	SpanPublish = "herald.publish"
	SpanAttempt = "herald.attempt"
)

// Attribute keys Herald sets besides the OpenTelemetry semantic
// conventions' (cloudevents.*, http.*, url.full).
const (
	AttrAccountID      = "herald.account_id"
	AttrSubscriptionID = "herald.subscription_id"
	AttrDeliveryID     = "herald.delivery_id"
	AttrDeliveryIDs    = "herald.delivery_ids"
	AttrAttempt        = "herald.attempt"
	AttrOutcome        = "herald.outcome"
	AttrDeliveries     = "herald.deliveries"
	AttrDuplicate      = "herald.duplicate"
	AttrBatchSize      = "herald.batch_size"
	AttrProbe          = "herald.probe"
	AttrDeadLetterOf   = "herald.dead_letter_of"
	AttrStatusCode     = "http.response.status_code"
)

// Tracer starts the delivery path's spans. A nil *Tracer is tracing off:
// Enabled is false and nothing else may be called on it.
type Tracer struct {
	tracer trace.Tracer
}

// NewTracer returns a Tracer starting its spans with tp (Provider makes
// the server's; tests give an SDK provider of their own).
func NewTracer(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer("github.com/herald-events/herald")}
}

// Enabled reports whether t traces (false for nil): callers check it
// before they build anything a span needs.
func (t *Tracer) Enabled() bool { return t != nil }

// Event is what a publish span says of its event.
type Event struct {
	AccountID, ID, Source, Type, Subject string
	// Traceparent and Tracestate are the event's CloudEvents Distributed
	// Tracing extension attributes ("" when it has none).
	Traceparent, Tracestate string
}

// StartPublish starts the publish span (kind producer) of ev. Its parent
// is the span context of ev's traceparent extension when that is valid
// (then the request's, if it has one of its own, is a link), else ctx's
// (WithRequest: the request's traceparent header), else none: a new
// trace. End it with EndPublish; Encode(span.SpanContext()) is what the
// attempts of ev's deliveries descend from.
func (t *Tracer) StartPublish(ctx context.Context, ev Event) trace.Span {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String(AttrAccountID, ev.AccountID),
		attribute.String("cloudevents.event_id", ev.ID),
		attribute.String("cloudevents.event_source", ev.Source),
		attribute.String("cloudevents.event_type", ev.Type))}
	if ev.Subject != "" {
		opts = append(opts, trace.WithAttributes(attribute.String("cloudevents.event_subject", ev.Subject)))
	}
	if sc, ok := Parse(ev.Traceparent, ev.Tracestate); ok {
		if req := trace.SpanContextFromContext(ctx); req.IsValid() && !req.Equal(sc) {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: req}))
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc.WithRemote(true))
	}
	_, span := t.tracer.Start(ctx, SpanPublish, opts...)
	return span
}

// EndPublish ends a publish span: the event was stored with deliveries
// deliveries, or was a duplicate of one stored before (nothing written),
// or err refused it (nothing stored).
func EndPublish(span trace.Span, deliveries int, duplicate bool, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(attribute.Int(AttrDeliveries, deliveries), attribute.Bool(AttrDuplicate, duplicate))
	}
	span.End()
}

// Attempt is what an attempt span says of its attempt.
type Attempt struct {
	SubscriptionID string
	// DeliveryIDs are the deliveries the request carries (several in a
	// batch), with the stored span contexts of their events' publish spans
	// (Encode; "" for an event published while tracing was off).
	DeliveryIDs []string
	Parents     []string
	// Number is the attempt's number (a batch's highest, as the
	// herald-delivery-attempt header says).
	Number int
	URL    string
	Probe  bool
	// DeadLetterOf is the dead-lettered delivery a dead letter's push
	// carries ("" for any other).
	DeadLetterOf string
}

// AttemptSpan is a started attempt span. The zero AttemptSpan (tracing
// off) does nothing and names no parent.
type AttemptSpan struct {
	span trace.Span
	// Traceparent and Tracestate name the span as the parent of the push
	// (its W3C headers; "" for none).
	Traceparent, Tracestate string
}

// StartAttempt starts an attempt span (kind client). Its parent is the
// publish span of the first delivery's event, and the other deliveries'
// events' publish spans are links (a batch); an event published while
// tracing was off makes it a new trace.
func (t *Tracer) StartAttempt(a Attempt) AttemptSpan {
	ctx := context.Background()
	var links []trace.Link
	for i, p := range a.Parents {
		sc, ok := Decode(p)
		switch {
		case !ok:
		case i == 0:
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		default:
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrSubscriptionID, a.SubscriptionID),
		attribute.String(AttrDeliveryID, a.DeliveryIDs[0]),
		attribute.Int(AttrAttempt, a.Number),
		attribute.String("http.request.method", "POST"),
		attribute.String("url.full", CleanURL(a.URL)),
	}
	if len(a.DeliveryIDs) > 1 {
		attrs = append(attrs, attribute.Int(AttrBatchSize, len(a.DeliveryIDs)), attribute.StringSlice(AttrDeliveryIDs, a.DeliveryIDs))
	}
	if a.Probe {
		attrs = append(attrs, attribute.Bool(AttrProbe, true))
	}
	if a.DeadLetterOf != "" {
		attrs = append(attrs, attribute.String(AttrDeadLetterOf, a.DeadLetterOf))
	}
	_, span := t.tracer.Start(ctx, SpanAttempt, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...), trace.WithLinks(links...))
	s := AttemptSpan{span: span}
	s.Traceparent, s.Tracestate = Header(span.SpanContext())
	return s
}

// End ends the span with the attempt's outcome (http_NNN, timeout, …),
// its response's status code (0: no response) and, when it failed, the
// error: its status is then an error.
func (s AttemptSpan) End(outcome string, status int, failed bool, errText string) {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(attribute.String(AttrOutcome, outcome))
	if status > 0 {
		s.span.SetAttributes(attribute.Int(AttrStatusCode, status))
	}
	if failed {
		if errText == "" {
			errText = outcome
		}
		s.span.SetStatus(codes.Error, errText)
	}
	s.span.End()
}

// Abandon ends the span of an attempt cut short (a hard stop, or its
// subscription's attempts stopped): nothing was recorded of it.
func (s AttemptSpan) Abandon() {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(attribute.String(AttrOutcome, "abandoned"))
	s.span.SetStatus(codes.Error, "the attempt was cut short; its delivery will be attempted again")
	s.span.End()
}

// CleanURL is url.full as a span shows it: the URL without its userinfo,
// query and fragment (which may hold credentials); "" for a URL that does
// not parse.
func CleanURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
