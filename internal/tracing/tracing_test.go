package tracing

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// env returns a LookupEnv holding vars.
func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// TestConfig: the flag, else the traces variable, else the general one,
// turns tracing on; a value that is not an http(s) URL is refused naming
// the flag or variable, with its password hidden; nothing set (or set
// empty) is off.
func TestConfig(t *testing.T) {
	for _, c := range []struct {
		cfg     Config
		on      bool
		refused string // the name the error starts with; "" when valid
	}{
		{Config{}, false, ""},
		{Config{LookupEnv: env(map[string]string{EnvEndpoint: ""})}, false, ""},
		{Config{Endpoint: "http://localhost:4318"}, true, ""},
		{Config{Endpoint: "https://collector.example/otlp/"}, true, ""},
		{Config{Endpoint: "localhost:4318"}, true, "--otel-endpoint"},
		{Config{Endpoint: "ftp://usr:SecretPw@collector.example"}, true, "--otel-endpoint"},
		{Config{Endpoint: "http://collector.example/?a=1"}, true, "--otel-endpoint"},
		{Config{Endpoint: "http://"}, true, "--otel-endpoint"},
		{Config{LookupEnv: env(map[string]string{EnvEndpoint: "http://c:4318"})}, true, ""},
		{Config{LookupEnv: env(map[string]string{EnvTracesEndpoint: "http://c:4318/v1/traces"})}, true, ""},
		{Config{LookupEnv: env(map[string]string{EnvEndpoint: "c:4318"})}, true, EnvEndpoint},
		{Config{LookupEnv: env(map[string]string{EnvEndpoint: "http://c:4318", EnvTracesEndpoint: "grpc://c"})}, true, EnvTracesEndpoint},
		{Config{Endpoint: "http://c:4318", LookupEnv: env(map[string]string{EnvEndpoint: "bogus"})}, true, ""},
		{Config{Endpoint: "http://c:4318"}, true, ""},
	} {
		err := c.cfg.Validate()
		if c.cfg.Enabled() != c.on {
			t.Errorf("%+v: enabled %v; want %v", c.cfg.Endpoint, c.cfg.Enabled(), c.on)
		}
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%q: %v; want it accepted", c.cfg.Endpoint, err)
		case c.refused != "" && (err == nil || !strings.HasPrefix(err.Error(), c.refused+" ")):
			t.Errorf("%q: %v; want an error naming %s", c.cfg.Endpoint, err, c.refused)
		case err != nil && strings.Contains(err.Error(), "SecretPw"):
			t.Errorf("%q: %v shows the password", c.cfg.Endpoint, err)
		}
	}
	if u, _, _ := (Config{Endpoint: "https://collector.example/otlp/"}).target(); u != "https://collector.example/otlp"+TracesPath {
		t.Errorf("traces URL %q; want the base's path followed by %s", u, TracesPath)
	}
}

// TestEncodeDecode: a stored trace context reads back as the span context
// it was made of, tracestate included; what is not one reads as none.
func TestEncodeDecode(t *testing.T) {
	ts, _ := trace.ParseTraceState("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
	for _, sc := range []trace.SpanContext{
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2}, SpanID: trace.SpanID{3}, TraceFlags: trace.FlagsSampled}),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{4}, SpanID: trace.SpanID{5}, TraceState: ts}),
	} {
		s := Encode(sc)
		got, ok := Decode(s)
		if !ok || !got.Equal(sc.WithRemote(true)) {
			t.Errorf("Decode(%q) = %v, %v; want %v", s, got, ok, sc)
		}
	}
	for _, s := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"} {
		if sc, ok := Decode(s); ok {
			t.Errorf("Decode(%q) = %v; want none", s, sc)
		}
	}
	if Encode(trace.SpanContext{}) != "" {
		t.Error("the invalid span context encodes as something")
	}
}

// recorded returns a Tracer whose ended spans sr holds.
func recorded(t *testing.T) (*Tracer, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return NewTracer(tp), sr
}

const (
	extParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	reqParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// TestPublishParent: the event's traceparent extension parents the publish
// span (the request's header a link); without a valid one, the request's
// header does; without either, the span starts a trace.
func TestPublishParent(t *testing.T) {
	tr, sr := recorded(t)
	req := WithRequest(context.Background(), http.Header{HeaderTraceparent: {reqParent}})
	for _, c := range []struct {
		ctx         context.Context
		ext         string
		wantParent  string // traceparent of the parent; "" for a root
		wantLinkTo  string
		description string
	}{
		{req, extParent, extParent, reqParent, "extension and header"},
		{req, "00-bogus", reqParent, "", "an invalid extension"},
		{req, "", reqParent, "", "the header alone"},
		{context.Background(), extParent, extParent, "", "the extension alone"},
		{context.Background(), "", "", "", "neither"},
	} {
		EndPublish(tr.StartPublish(c.ctx, Event{ID: "e1", Source: "/s", Type: "t", Traceparent: c.ext}), 2, false, nil)
		ended := sr.Ended()
		s := ended[len(ended)-1]
		if got := parentOf(s); got != c.wantParent {
			t.Errorf("%s: parent %q; want %q", c.description, got, c.wantParent)
		}
		var links []string
		for _, l := range s.Links() {
			links = append(links, Encode(l.SpanContext))
		}
		if (c.wantLinkTo == "") != (len(links) == 0) || c.wantLinkTo != "" && links[0] != c.wantLinkTo {
			t.Errorf("%s: links %v; want %q", c.description, links, c.wantLinkTo)
		}
		if s.SpanKind() != trace.SpanKindProducer || !hasAttr(s, attribute.Int(AttrDeliveries, 2)) {
			t.Errorf("%s: kind %v, attributes %v", c.description, s.SpanKind(), s.Attributes())
		}
	}
}

// parentOf is a recorded span's parent as a traceparent ("" for none).
func parentOf(s sdktrace.ReadOnlySpan) string {
	if !s.Parent().IsValid() {
		return ""
	}
	return Encode(s.Parent())
}

func hasAttr(s sdktrace.ReadOnlySpan, kv attribute.KeyValue) bool {
	for _, a := range s.Attributes() {
		if a == kv {
			return true
		}
	}
	return false
}

// TestAttemptOfABatch: a batch's attempt span is the child of its first
// event's publish span and links the others' (an event published while
// tracing was off is neither); its header names it; a failure is an error
// status with the outcome.
func TestAttemptOfABatch(t *testing.T) {
	tr, sr := recorded(t)
	other := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	span := tr.StartAttempt(Attempt{SubscriptionID: "sub_1", DeliveryIDs: []string{"dlv_1", "dlv_2", "dlv_3"},
		Parents: []string{extParent, "", other}, Number: 3, URL: "https://u:p@h.example/hook?k=v#f", Probe: true})
	span.End("timeout", 0, true, "")
	s := sr.Ended()[0]
	if parentOf(s) != extParent || len(s.Links()) != 1 || Encode(s.Links()[0].SpanContext) != other {
		t.Fatalf("parent %q, links %v; want %s and a link to %s", parentOf(s), s.Links(), extParent, other)
	}
	if sc, ok := Parse(span.Traceparent, span.Tracestate); !ok || sc.SpanID() != s.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
		t.Fatalf("header %q names %v; want the span %v", span.Traceparent, sc.SpanID(), s.SpanContext().SpanID())
	}
	for _, kv := range []attribute.KeyValue{attribute.String(AttrDeliveryID, "dlv_1"), attribute.Int(AttrBatchSize, 3),
		attribute.Int(AttrAttempt, 3), attribute.String("url.full", "https://h.example/hook"), attribute.Bool(AttrProbe, true),
		attribute.String(AttrOutcome, "timeout")} {
		if !hasAttr(s, kv) {
			t.Errorf("no %v among %v", kv, s.Attributes())
		}
	}
	if s.Status().Code != codes.Error || s.Status().Description != "timeout" {
		t.Errorf("status %+v; want an error saying timeout", s.Status())
	}
	for _, a := range s.Attributes() {
		if a.Key == AttrStatusCode {
			t.Errorf("a status code %v without a response", a.Value.Emit())
		}
	}
	var off AttemptSpan // tracing off: nothing happens
	off.End("http_200", 200, false, "")
	off.Abandon()
	if len(sr.Ended()) != 1 || off.Traceparent != "" {
		t.Fatal("the zero AttemptSpan recorded something")
	}
}

// TestOff: a nil Provider's tracer is nil, which is off.
func TestOff(t *testing.T) {
	p, err := New(context.Background(), Config{})
	if p != nil || err != nil || p.Tracer().Enabled() || p.ForceFlush(context.Background()) == nil {
		t.Fatalf("New without an endpoint = %v, %v; want nil, off", p, err)
	}
	if _, err := New(context.Background(), Config{Endpoint: "bogus"}); err == nil {
		t.Fatal("New took a bad endpoint")
	}
}

// TestCleanURL: url.full keeps scheme, host, port and path only.
func TestCleanURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@h.example:8443/a/b?token=x#frag": "https://h.example:8443/a/b",
		"http://h.example?":                           "http://h.example",
		"::bad":                                       "",
	} {
		if got := CleanURL(in); got != want {
			t.Errorf("CleanURL(%q) = %q; want %q", in, got, want)
		}
	}
}
