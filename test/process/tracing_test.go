package process

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/tracing"
	"github.com/herald-events/herald/internal/tracing/tracingtest"
)

// The tests in this file follow one trace across a SIGKILL: a publisher's
// span, the publish span and the failed first attempt's span exported by
// the process that is killed, and the retry's attempt span exported by the
// process that takes over (a restart on the same data directory, or
// another PostgreSQL node), which must descend from the publish span
// through the trace context stored with the event (docs/tracing.md).

// traceRetryDelay is the subscription's one retry delay. The killed
// process exports its spans within tracing.BatchTimeout (a fixed
// interval: the OTEL_BSP_* variables do not change it), and the test
// kills it only then, so the retry must come later; a few seconds more
// leave room for a loaded machine.
const traceRetryDelay = 2*tracing.BatchTimeout + 2*time.Second

// traceExportWait bounds the wait for a process's spans at the collector:
// one export interval and one export.
const traceExportWait = tracing.BatchTimeout + tracing.ExportTimeout

// traceEventID is the id of the one event these tests publish.
const traceEventID = "traced-1"

// find returns the spans c received named name whose attribute key is
// value, each with its place in the order of arrival.
func find(c *tracingtest.Collector, name, key string, value any) (spans []*tracepb.Span, at []int) {
	for i, s := range c.Spans() {
		if s.Span.GetName() == name && tracingtest.Attrs(s.Span.GetAttributes())[key] == value {
			spans, at = append(spans, s.Span), append(at, i)
		}
	}
	return spans, at
}

// waitSpan waits (traceExportWait at most) for exactly one span named
// name whose attribute key is value, and returns it with its place in the
// order of arrival.
func waitSpan(t *testing.T, c *tracingtest.Collector, what, name, key string, value any) (*tracepb.Span, int) {
	t.Helper()
	var spans []*tracepb.Span
	var at []int
	waitFor(t, traceExportWait, what+" at the collector", func() (bool, string) {
		spans, at = find(c, name, key, value)
		return len(spans) > 0, fmt.Sprintf("%d spans received, none %s with %s=%v", c.Count(), name, key, value)
	})
	if len(spans) != 1 {
		t.Fatalf("%d spans %s with %s=%v; want 1 (%s)", len(spans), name, key, value, what)
	}
	return spans[0], at[0]
}

// tracedPush is what the trace receiver kept of one push.
type tracedPush struct {
	header  http.Header
	attempt string // herald-delivery-attempt
}

// traceReceiver is a subscriber endpoint on loopback that answers the
// first push 500 and every later one 200, keeping each push's headers.
type traceReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	pushes []tracedPush
}

func newTraceReceiver(t *testing.T) *traceReceiver {
	r := &traceReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		r.pushes = append(r.pushes, tracedPush{header: req.Header.Clone(), attempt: req.Header.Get("herald-delivery-attempt")})
		first := len(r.pushes) == 1
		r.mu.Unlock()
		if first {
			http.Error(w, "first attempt refused by the test", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *traceReceiver) got() []tracedPush {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tracedPush(nil), r.pushes...)
}

// waitPushes waits (within timeout) until n pushes have arrived and
// returns them.
func (r *traceReceiver) waitPushes(t *testing.T, n int, timeout time.Duration, what string) []tracedPush {
	t.Helper()
	waitFor(t, timeout, what, func() (bool, string) {
		return len(r.got()) >= n, fmt.Sprintf("%d pushes arrived, want %d", len(r.got()), n)
	})
	return r.got()
}

// publishTraced publishes the event traceEventID through h with the
// traceparent of a span the publisher (the OpenTelemetry SDK) starts, and
// returns that span's context.
func publishTraced(t *testing.T, h *herald) trace.SpanContext {
	t.Helper()
	publisher := sdktrace.NewTracerProvider()
	defer func() { _ = publisher.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx, span := publisher.Tracer("checkout").Start(ctx, "checkout.publish", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/shop","type":"order.paid","data":{"n":1}}`, traceEventID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/v1/events", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/cloudevents+json")
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %s %s", resp.Status, raw)
	}
	return span.SpanContext()
}

// getJSON GETs path from h (within 5 s) and decodes the answer into out.
func (h *herald) getJSON(path string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := h.do(ctx, http.MethodGet, path, "", nil, out)
	return err
}

// waitFailedAttempt waits until Herald lists the delivery's first attempt,
// answered 500, and returns when the retry is due (next_attempt_at).
func waitFailedAttempt(t *testing.T, h *herald, deliveryID string) time.Time {
	t.Helper()
	waitFor(t, 10*time.Second, "the failed first attempt in the attempt log", func() (bool, string) {
		var page struct {
			Data []struct {
				Number     int    `json:"number"`
				StatusCode *int   `json:"status_code"`
				Outcome    string `json:"outcome"`
			} `json:"data"`
		}
		if err := h.getJSON("/v1/deliveries/"+deliveryID+"/attempts", &page); err != nil {
			return false, err.Error()
		}
		a := page.Data
		return len(a) == 1 && a[0].Number == 1 && a[0].StatusCode != nil && *a[0].StatusCode == 500 && a[0].Outcome == "http_500",
			fmt.Sprintf("attempts %+v", a)
	})
	var d delivery
	if err := h.getJSON("/v1/deliveries/"+deliveryID, &d); err != nil {
		t.Fatalf("reading delivery %s: %v", deliveryID, err)
	}
	due, err := time.Parse(time.RFC3339Nano, d.NextAttemptAt)
	if d.Status != "pending" || err != nil {
		t.Fatalf("delivery %s after its failed attempt: %+v (next_attempt_at: %v); want pending with a retry due", deliveryID, d, err)
	}
	return due
}

// waitDelivered waits until Herald lists the delivery as delivered at its
// second attempt.
func waitDelivered(t *testing.T, h *herald, deliveryID string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the delivery recorded as delivered", func() (bool, string) {
		var d delivery
		if err := h.getJSON("/v1/deliveries/"+deliveryID, &d); err != nil {
			return false, err.Error()
		}
		return d.Status == "delivered" && d.Attempts == 2, fmt.Sprintf("%+v", d)
	})
}

// TestTraceSurvivesSIGKILL: the publish span's context stored with the
// event parents the retry made after a SIGKILL and a restart on the same
// data directory.
func TestTraceSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	dataDir := t.TempDir()
	traceAcrossKill(t, func(name string, extra ...string) *herald { return startHerald(t, name, dataDir, extra...) })
}

// TestTraceSurvivesSIGKILLAcrossNodes is TestTraceSurvivesSIGKILL on
// PostgreSQL: node-1 makes the failed attempt and is killed; node-2,
// started on the same schema, takes the retry once node-1's lease (3 s)
// has ended and the retry is due.
func TestTraceSurvivesSIGKILLAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	dbURL := pgtest.SchemaURL(t)
	traceAcrossKill(t, func(name string, extra ...string) *herald {
		return startNode(t, name, dbURL, append([]string{"--lease", "3s"}, extra...)...)
	})
}

// traceAcrossKill runs the tests above; start starts a herald (the first
// and then the one after the kill) with the extra flags given.
func traceAcrossKill(t *testing.T, start func(name string, extra ...string) *herald) {
	t.Helper()
	// The default sampler, whatever the developer's environment says.
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	col, rcv := tracingtest.NewCollector(t), newTraceReceiver(t)
	h1 := start("herald-1", "--otel-endpoint", col.URL)
	policy := map[string]any{"preset": "custom", "delays": []string{traceRetryDelay.String()}, "max_attempts": 0, "ttl": "1h"}
	h1.createSubscriptionWith(t, "traced", rcv.srv.URL+"/hook", map[string]any{"retry_policy": policy})
	publisher := publishTraced(t, h1)

	first := rcv.waitPushes(t, 1, 10*time.Second, "the first push")[0]
	deliveryID := first.header.Get("webhook-id")
	due := waitFailedAttempt(t, h1, deliveryID)
	pub, pubAt := waitSpan(t, col, "herald-1's publish span", tracing.SpanPublish, "cloudevents.event_id", traceEventID)
	att1, att1At := waitSpan(t, col, "herald-1's first attempt span", tracing.SpanAttempt, tracing.AttrDeliveryID, deliveryID)
	if left := time.Until(due); left < time.Second || len(rcv.got()) != 1 {
		t.Fatalf("herald-1's spans came %s before its retry was due, with %d pushes made: too late to kill it before the retry (traceRetryDelay %s)",
			left, len(rcv.got()), traceRetryDelay)
	}
	t.Logf("herald-1 recorded the failed attempt and exported its spans; SIGKILL %s before its retry was due", time.Until(due).Round(time.Millisecond))
	h1.kill()
	atKill := col.Count()
	if n := len(rcv.got()); n != 1 || pubAt >= atKill || att1At >= atKill {
		t.Fatalf("at the SIGKILL: %d pushes (want 1), publish and attempt spans at %d and %d of %d received", n, pubAt, att1At, atKill)
	}

	h2 := start("herald-2", "--otel-endpoint", col.URL)
	second := rcv.waitPushes(t, 2, traceRetryDelay+30*time.Second, "the retry from herald-2")[1]
	waitDelivered(t, h2, deliveryID)
	att2, att2At := waitSpan(t, col, "herald-2's attempt span", tracing.SpanAttempt, tracing.AttrAttempt, int64(2))
	if att2At < atKill {
		t.Fatalf("the second attempt's span arrived before herald-1 was killed")
	}
	checkTraceAcrossKill(t, publisher, pub, []*tracepb.Span{att1, att2}, []tracedPush{first, second})
	if pubs, _ := find(col, tracing.SpanPublish, "cloudevents.event_id", traceEventID); len(pubs) != 1 {
		t.Errorf("%d publish spans of %s; want the one herald-1 made", len(pubs), traceEventID)
	}
}

// checkTraceAcrossKill requires the publish span to be the publisher's
// child, each attempt span (the first herald-1's, the second herald-2's)
// the publish span's child in the publisher's trace, with the attempt's
// number and outcome, and each push's traceparent to name its attempt span.
func checkTraceAcrossKill(t *testing.T, publisher trace.SpanContext, pub *tracepb.Span, atts []*tracepb.Span, pushes []tracedPush) {
	t.Helper()
	wantTrace := publisher.TraceID().String()
	if hexID(pub.GetTraceId()) != wantTrace || hexID(pub.GetParentSpanId()) != publisher.SpanID().String() {
		t.Fatalf("publish span in trace %x under %x; want trace %s under the publisher's span %s",
			pub.GetTraceId(), pub.GetParentSpanId(), wantTrace, publisher.SpanID())
	}
	for i, a := range atts {
		n, code, outcome := int64(i+1), []int64{500, 200}[i], []string{"http_500", "http_200"}[i]
		if hexID(a.GetTraceId()) != wantTrace || hexID(a.GetParentSpanId()) != hexID(pub.GetSpanId()) {
			t.Errorf("attempt %d's span in trace %x under %x; want trace %s under the publish span %x",
				n, a.GetTraceId(), a.GetParentSpanId(), wantTrace, pub.GetSpanId())
		}
		if tracingtest.Attrs(a.GetAttributes())[tracing.AttrAttempt] != n || tracingtest.Attrs(a.GetAttributes())[tracing.AttrStatusCode] != code || tracingtest.Attrs(a.GetAttributes())[tracing.AttrOutcome] != outcome {
			t.Errorf("attempt %d's span: attempt %v, status %v, outcome %v; want %d, %d, %s", n,
				tracingtest.Attrs(a.GetAttributes())[tracing.AttrAttempt], tracingtest.Attrs(a.GetAttributes())[tracing.AttrStatusCode], tracingtest.Attrs(a.GetAttributes())[tracing.AttrOutcome], n, code, outcome)
		}
		p := pushes[i]
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(p.header)))
		if p.attempt != fmt.Sprint(n) || sc.TraceID().String() != wantTrace || sc.SpanID().String() != hexID(a.GetSpanId()) {
			t.Errorf("push %d (herald-delivery-attempt %s): traceparent %q; want attempt %d's span %s-%x",
				i+1, p.attempt, p.header.Get("Traceparent"), n, wantTrace, a.GetSpanId())
		}
	}
}

func hexID(b []byte) string { return hex.EncodeToString(b) }
