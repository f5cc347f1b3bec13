// Package tracingtest is an OTLP/HTTP trace collector for tests: what an
// OpenTelemetry collector would receive from `herald serve --otel-endpoint`
// (internal/tracing), decoded and kept in order of arrival.
package tracingtest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/herald-events/herald/internal/tracing"
)

// maxExport bounds one export request's body as sent (16 MiB) and
// unzipped (64 MiB); the exporter's batches are far smaller.
const (
	maxExport         = 16 << 20
	maxExportUnzipped = 64 << 20
)

// Collector is an OTLP/HTTP trace receiver on 127.0.0.1 (its URL is the
// endpoint to give Herald): it decodes each export request (protobuf,
// gzip or not, at tracing.TracesPath), answers as a collector does and
// keeps every span with its resource's attributes. It is closed when the
// test ends.
type Collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []Collected
}

// Collected is one received span and its resource's attributes.
type Collected struct {
	Span     *tracepb.Span
	Resource map[string]any
}

// NewCollector starts a Collector.
func NewCollector(t testing.TB) *Collector {
	c := &Collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != tracing.TracesPath || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	var body io.Reader = io.LimitReader(r.Body, maxExport)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = io.LimitReader(zr, maxExportUnzipped)
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		res := Attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				c.spans = append(c.spans, Collected{Span: sp, Resource: res})
			}
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far, in order of arrival.
func (c *Collector) Spans() []Collected {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Collected(nil), c.spans...)
}

// Named returns the spans received so far with this name, in order of
// arrival.
func (c *Collector) Named(name string) []Collected {
	var out []Collected
	for _, s := range c.Spans() {
		if s.Span.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// Count is how many spans have arrived so far.
func (c *Collector) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.spans)
}

// Attrs reads OTLP attributes: strings, ints and bools as themselves,
// anything else (arrays, maps) as its protobuf text.
func Attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = v.BoolValue
		default:
			m[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return m
}
