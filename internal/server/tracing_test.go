package server_test

import (
	"context"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/tracing"
	"github.com/herald-events/herald/internal/tracing/tracingtest"
)

// traced sets up a server exporting its traces to a new collector.
func traced(t *testing.T) (*bundle, *tracingtest.Collector) {
	col := tracingtest.NewCollector(t)
	return setup(t, func(c *server.Config) { c.Tracing.Endpoint = col.URL }), col
}

// flush exports every span the server ended so far: when it returns, the
// collector holds them.
func (b *bundle) flush() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tracing.ExportTimeout)
	defer cancel()
	if err := b.srv.Tracing.ForceFlush(ctx); err != nil {
		b.t.Fatalf("flushing the spans: %v", err)
	}
}

// headerParent reads the span context a request's W3C traceparent and
// tracestate name, as a receiver using the OpenTelemetry SDK does.
func headerParent(h http.Header) trace.SpanContext {
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h)))
}

func spanID(b []byte) string  { return hex.EncodeToString(b) }
func traceID(b []byte) string { return hex.EncodeToString(b) }

// TestTraceFromPublisherThroughRetriesToReceiver: a publisher traced with
// the OpenTelemetry SDK injects its span's traceparent into a publish; the
// endpoint fails the first attempt and accepts the retry. The collector gets
// one trace: the publisher's span → Herald's publish span → two attempt
// spans (500 then 200, with the delivery's attributes, the URL without its
// userinfo and query), and each push's traceparent names its attempt span,
// replacing the subscription's own traceparent header.
func TestTraceFromPublisherThroughRetriesToReceiver(t *testing.T) {
	b, col := traced(t)
	rc := newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	hook := strings.Replace(rc.URL, "http://", "http://user:pw@", 1) + "/hook?token=s3cret"
	sub := b.subscribe(map[string]any{"name": "traced", "url": hook,
		"headers": map[string]string{"traceparent": "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01", "tracestate": "sub=1"}})

	publisher := sdktrace.NewTracerProvider()
	defer func() { _ = publisher.Shutdown(context.Background()) }()
	ctx, pubSpan := publisher.Tracer("checkout").Start(context.Background(), "checkout.publish", trace.WithSpanKind(trace.SpanKindProducer))
	h := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json",
		"Traceparent": h.Get("Traceparent")}, `{"specversion":"1.0","id":"evt-1","source":"/shop","type":"order.paid","data":{"n":1}}`)
	pubSpan.End()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, raw)
	}
	d := b.waitDelivery(sub, "the first attempt", func(d delivery) bool { return d.Attempts == 1 && d.NextAttemptAt != nil })
	b.clk.Set(*d.NextAttemptAt)
	d = b.waitDelivery(sub, "the retry's success", func(d delivery) bool { return d.Status == "delivered" })
	b.flush()

	want := pubSpan.SpanContext()
	pubs := col.Named(tracing.SpanPublish)
	if len(pubs) != 1 {
		t.Fatalf("%d publish spans; want 1", len(pubs))
	}
	pub := pubs[0]
	if traceID(pub.Span.GetTraceId()) != want.TraceID().String() || spanID(pub.Span.GetParentSpanId()) != want.SpanID().String() {
		t.Fatalf("publish span in trace %x under %x; want trace %s under the publisher's span %s",
			pub.Span.GetTraceId(), pub.Span.GetParentSpanId(), want.TraceID(), want.SpanID())
	}
	pa := tracingtest.Attrs(pub.Span.GetAttributes())
	if pub.Span.GetKind() != tracepb.Span_SPAN_KIND_PRODUCER || pa["cloudevents.event_id"] != "evt-1" || pa["cloudevents.event_source"] != "/shop" ||
		pa[tracing.AttrDeliveries] != int64(1) || pa[tracing.AttrDuplicate] != false {
		t.Fatalf("publish span: kind %v, attributes %v", pub.Span.GetKind(), pa)
	}
	if pub.Resource["service.name"] != "herald" || pub.Resource["service.version"] != "test" {
		t.Fatalf("resource %v; want service.name herald, service.version test", pub.Resource)
	}

	atts := col.Named(tracing.SpanAttempt)
	if len(atts) != 2 || col.Count() != 3 {
		t.Fatalf("%d attempt spans of %d spans; want 2 of 3", len(atts), col.Count())
	}
	sort.Slice(atts, func(i, j int) bool {
		return tracingtest.Attrs(atts[i].Span.GetAttributes())[tracing.AttrAttempt].(int64) < tracingtest.Attrs(atts[j].Span.GetAttributes())[tracing.AttrAttempt].(int64)
	})
	for i, a := range atts {
		at, code := tracingtest.Attrs(a.Span.GetAttributes()), []int64{500, 200}[i]
		wantAttrs := map[string]any{tracing.AttrSubscriptionID: sub, tracing.AttrDeliveryID: d.ID, tracing.AttrAttempt: int64(i + 1),
			tracing.AttrStatusCode: code, tracing.AttrOutcome: []string{"http_500", "http_200"}[i], "url.full": rc.URL + "/hook",
			"http.request.method": "POST"}
		for k, v := range wantAttrs {
			if at[k] != v {
				t.Errorf("attempt %d: %s = %v; want %v (all: %v)", i+1, k, at[k], v, at)
			}
		}
		if traceID(a.Span.GetTraceId()) != want.TraceID().String() || spanID(a.Span.GetParentSpanId()) != spanID(pub.Span.GetSpanId()) ||
			a.Span.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
			t.Fatalf("attempt %d: trace %x under %x, kind %v; want the publish span's child, a client span",
				i+1, a.Span.GetTraceId(), a.Span.GetParentSpanId(), a.Span.GetKind())
		}
		wantStatus := []tracepb.Status_StatusCode{tracepb.Status_STATUS_CODE_ERROR, tracepb.Status_STATUS_CODE_UNSET}[i]
		if got := a.Span.GetStatus().GetCode(); got != wantStatus {
			t.Errorf("attempt %d: status %v; want %v", i+1, got, wantStatus)
		}
		got := rc.request(i).header
		if sc := headerParent(got); sc.TraceID().String() != want.TraceID().String() || sc.SpanID().String() != spanID(a.Span.GetSpanId()) {
			t.Errorf("push %d: traceparent %q names %s/%s; want attempt span %x", i+1, got.Get("Traceparent"), sc.TraceID(), sc.SpanID(), a.Span.GetSpanId())
		}
		if v := got.Values("Tracestate"); len(v) != 0 {
			t.Errorf("push %d: tracestate %q; want none (the attempt span has none, the subscription's is replaced)", i+1, v)
		}
	}
}

// TestTraceParentFromEventExtensionIsStored: an event's traceparent
// extension (CloudEvents Distributed Tracing) parents its publish span,
// the request's own traceparent header becoming a link; the publish
// span's context is stored with the event and comes back with the claim
// of its retry (which another node, or this one after a restart, makes);
// the attempt span descends from it, and the pushed event keeps its own
// traceparent extension.
func TestTraceParentFromEventExtensionIsStored(t *testing.T) {
	b, col := traced(t)
	rc := newReceiver(t, status(http.StatusServiceUnavailable))
	sub := b.subscribe(map[string]any{"name": "ext", "url": rc.URL})
	const ext = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json", "Traceparent": header,
		"Tracestate": "vendor=1"},
		`{"specversion":"1.0","id":"evt-1","source":"/shop","type":"order.paid","traceparent":"`+ext+`","tracestate":"congo=t61","data":{}}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, raw)
	}
	d := b.waitDelivery(sub, "the first attempt", func(d delivery) bool { return d.Attempts == 1 && d.NextAttemptAt != nil })
	b.settle()
	b.flush()

	pubs, atts := col.Named(tracing.SpanPublish), col.Named(tracing.SpanAttempt)
	if len(pubs) != 1 || len(atts) != 1 {
		t.Fatalf("%d publish and %d attempt spans; want 1 and 1", len(pubs), len(atts))
	}
	pub := pubs[0].Span
	if traceID(pub.GetTraceId()) != "4bf92f3577b34da6a3ce929d0e0e4736" || spanID(pub.GetParentSpanId()) != "00f067aa0ba902b7" ||
		pub.GetTraceState() != "congo=t61" {
		t.Fatalf("publish span in trace %x under %x (tracestate %q); want the event's traceparent's", pub.GetTraceId(), pub.GetParentSpanId(), pub.GetTraceState())
	}
	if l := pub.GetLinks(); len(l) != 1 || traceID(l[0].GetTraceId()) != "0af7651916cd43dd8448eb211c80319c" || spanID(l[0].GetSpanId()) != "b7ad6b7169203331" {
		t.Fatalf("publish span links %v; want the request's traceparent", l)
	}
	if a := atts[0].Span; spanID(a.GetParentSpanId()) != spanID(pub.GetSpanId()) || traceID(a.GetTraceId()) != traceID(pub.GetTraceId()) {
		t.Fatalf("attempt span under %x in %x; want the publish span %x", a.GetParentSpanId(), a.GetTraceId(), pub.GetSpanId())
	}
	if got := rc.request(0); headerParent(got.header).SpanID().String() != spanID(atts[0].Span.GetSpanId()) ||
		!strings.Contains(string(got.body), `"traceparent":"`+ext+`"`) {
		t.Fatalf("push: traceparent %q, body %s; want the attempt span's header and the event's own extension", got.header.Get("Traceparent"), got.body)
	}

	// The retry, claimed from the store as another node would: the
	// publish span's context came with it.
	cs := claimRetry(b, sub, d)
	sc, ok := tracing.Decode(cs.TraceContext)
	if !ok || sc.TraceID().String() != traceID(pub.GetTraceId()) || sc.SpanID().String() != spanID(pub.GetSpanId()) ||
		sc.TraceState().String() != "congo=t61" {
		t.Fatalf("claimed trace context %q; want the publish span %x with its tracestate", cs.TraceContext, pub.GetSpanId())
	}
}

// claimRetry claims the pending retry of d (the subscription's one
// delivery) from the store, leased to a test owner, past its due time.
func claimRetry(b *bundle, sub string, d delivery) store.Claimed {
	b.t.Helper()
	b.settle()
	cs, err := b.srv.Store.ClaimDue(context.Background(), b.endpointOf(sub), d.NextAttemptAt.Add(time.Hour), 10,
		store.Lease{Owner: "test-claimer", Until: d.NextAttemptAt.Add(24 * time.Hour)})
	if err != nil || len(cs) != 1 || cs[0].ID != d.ID {
		b.t.Fatalf("claiming the retry: %+v, %v", cs, err)
	}
	return cs[0]
}

// TestTracingOffAddsNothing: without an endpoint no provider runs, a
// publish with traceparent headers and extension stores no trace context,
// and the push carries no traceparent but the subscription's own.
func TestTracingOffAddsNothing(t *testing.T) {
	b := setup(t)
	if b.srv.Tracing != nil || b.srv.Pipeline.Admission.Tracer.Enabled() {
		t.Fatal("a tracer provider runs without an endpoint")
	}
	plain := newReceiver(t, status(http.StatusServiceUnavailable))
	own := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "plain", "url": plain.URL, "event_types": []string{"order.paid"}})
	const ownTP = "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"
	b.subscribe(map[string]any{"name": "own", "url": own.URL, "event_types": []string{"order.paid"}, "headers": map[string]string{"traceparent": ownTP}})
	resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json",
		"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		`{"specversion":"1.0","id":"evt-1","source":"/shop","type":"order.paid","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","data":{}}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, raw)
	}
	d := b.waitDelivery(sub, "the first attempt", func(d delivery) bool { return d.Attempts == 1 && d.NextAttemptAt != nil })
	eventually(t, "the other subscription's push", func() bool { return own.count() == 1 })
	if v := plain.request(0).header.Values("Traceparent"); len(v) != 0 {
		t.Fatalf("push with tracing off: traceparent %q; want none", v)
	}
	if v := own.request(0).header.Values("Traceparent"); len(v) != 1 || v[0] != ownTP {
		t.Fatalf("push with tracing off: traceparent %q; want the subscription's own %q", v, ownTP)
	}
	if cs := claimRetry(b, sub, d); cs.TraceContext != "" {
		t.Fatalf("stored trace context %q with tracing off; want none", cs.TraceContext)
	}
}

// TestTraceOfABatch: a push of several events (a batch) is one attempt
// span, the child of one event's publish span and linked to the other's,
// each event in the trace its publisher began; the push names that span.
func TestTraceOfABatch(t *testing.T) {
	col := tracingtest.NewCollector(t)
	b := setup(t, oneAtATime, func(c *server.Config) { c.Tracing.Endpoint = col.URL })
	rc, open := gatedReceiver(t, func(int) int { return 200 })
	b.subscribe(map[string]any{"name": "batched", "url": rc.URL, "max_events_per_batch": 3})
	b.publish("lone", "t")
	eventually(t, "the lone event sent", func() bool { return rc.count() == 1 })
	parents := map[string]string{"a": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"b": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	for id, tp := range parents {
		resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json", "Traceparent": tp},
			`{"specversion":"1.0","id":"`+id+`","source":"/s","type":"t","data":{}}`)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish %s: %d %s", id, resp.StatusCode, raw)
		}
	}
	open()
	eventually(t, "the batch sent", func() bool { return rc.count() == 2 })
	b.settle()
	b.flush()

	pubOf := map[string]string{} // publish span id → the traceparent its event's publisher sent
	for _, p := range col.Named(tracing.SpanPublish) {
		if id := tracingtest.Attrs(p.Span.GetAttributes())["cloudevents.event_id"].(string); id != "lone" {
			if wantTrace := parents[id][3:35]; traceID(p.Span.GetTraceId()) != wantTrace {
				t.Fatalf("event %s published in trace %x; want %s", id, p.Span.GetTraceId(), wantTrace)
			}
			pubOf[spanID(p.Span.GetSpanId())] = id
		}
	}
	var batch *tracepb.Span
	for _, a := range col.Named(tracing.SpanAttempt) {
		if tracingtest.Attrs(a.Span.GetAttributes())[tracing.AttrBatchSize] == int64(2) {
			batch = a.Span
		}
	}
	if batch == nil || len(pubOf) != 2 {
		t.Fatalf("no attempt span of a batch of 2 (publish spans %v)", pubOf)
	}
	first, ok := pubOf[spanID(batch.GetParentSpanId())]
	links := batch.GetLinks()
	if !ok || len(links) != 1 || pubOf[spanID(links[0].GetSpanId())] == "" || pubOf[spanID(links[0].GetSpanId())] == first {
		t.Fatalf("batch span under %x with links %v; want one event's publish span and a link to the other's (%v)", batch.GetParentSpanId(), links, pubOf)
	}
	if sc := headerParent(rc.request(1).header); sc.SpanID().String() != spanID(batch.GetSpanId()) {
		t.Fatalf("the batch's push names %s; want its attempt span %x", sc.SpanID(), batch.GetSpanId())
	}
}
