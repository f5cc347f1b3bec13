// Package tracing exports OpenTelemetry traces of the delivery path over
// OTLP/HTTP (docs/tracing.md): a publish span per published event and an
// attempt span per try, the push carrying the attempt span's W3C
// traceparent. It owns the tracer provider (Provider, a
// startstop.Service that flushes at its stop) and the one type the stages
// use (Tracer), which is nil when tracing is off: every method of a nil
// *Tracer does nothing, and callers check Enabled before they build
// anything for a span, so that tracing off costs one nil check.
//
// Bounds: at most MaxQueueSize finished spans wait for export (more are
// dropped); an export request carries at most MaxExportBatchSize spans
// and is sent at least every BatchTimeout; an export (the exporter's
// retries included) lasts at most ExportTimeout; the flush at shutdown at
// most ShutdownTimeout.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/startstop"
)

// The batch span processor's bounds (see the package documentation).
const (
	MaxQueueSize       = 8192
	MaxExportBatchSize = 512
	BatchTimeout       = 5 * time.Second
	ExportTimeout      = 10 * time.Second
	ShutdownTimeout    = 15 * time.Second
)

// The standard variables that turn tracing on without --otel-endpoint
// (the exporter reads them, and the other OTEL_EXPORTER_OTLP_* ones:
// headers, certificates, compression).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// TracesPath is the path OTLP/HTTP receivers take traces at, appended to
// --otel-endpoint's (as the exporter appends it to EnvEndpoint's).
const TracesPath = "/v1/traces"

// ServiceName is the service.name of every span's resource.
const ServiceName = "herald"

// Config says whether and where traces go.
type Config struct {
	// Endpoint is --otel-endpoint: the OTLP/HTTP collector's base URL
	// (http:// or https://); spans are POSTed to its path followed by
	// TracesPath. Empty: see LookupEnv.
	Endpoint string
	// LookupEnv, when set and Endpoint is empty, is how EnvTracesEndpoint
	// and EnvEndpoint are read: tracing is on when either is set and not
	// empty, and the exporter takes its URL from them (herald serve gives
	// os.LookupEnv; nil: tracing is on only with Endpoint).
	LookupEnv func(string) (string, bool)
	// ServiceVersion is the resource's service.version.
	ServiceVersion string
	// Logger hears export errors (default discards).
	Logger *slog.Logger
}

// Enabled reports whether c turns tracing on.
func (c Config) Enabled() bool {
	_, _, on := c.target()
	return on
}

// target is where traces go: the flag's URL with TracesPath, or the
// variable that set it (the exporter reads it), and whether tracing is on.
func (c Config) target() (endpointURL, envName string, on bool) {
	if c.Endpoint != "" {
		return strings.TrimSuffix(c.Endpoint, "/") + TracesPath, "", true
	}
	if c.LookupEnv == nil {
		return "", "", false
	}
	for _, name := range []string{EnvTracesEndpoint, EnvEndpoint} {
		if v, ok := c.LookupEnv(name); ok && v != "" {
			return v, name, true
		}
	}
	return "", "", false
}

// Validate reports a setting that cannot be exported to, naming the flag
// or variable: an endpoint that is not an http:// or https:// URL with a
// host.
func (c Config) Validate() error {
	u, env, on := c.target()
	if !on {
		return nil
	}
	name, value := "--otel-endpoint", c.Endpoint
	if env != "" {
		name, value = env, u
	}
	p, err := url.Parse(value)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" {
		return fmt.Errorf("%s %q: want an http:// or https:// URL of an OTLP/HTTP collector (such as http://localhost:4318)", name, redact.URL(value))
	}
	return nil
}

// Provider is the tracer provider, a startstop.Service: its spans are
// exported in batches from New on, and Stop flushes them and shuts the
// exporter down (at most ShutdownTimeout). Start it first and stop it last
// (internal/server's services), so the spans of the last attempts go out.
type Provider struct {
	startstop.Base
	tp       *sdktrace.TracerProvider
	tracer   *Tracer
	log      *slog.Logger
	shutOnce sync.Once
}

// New returns the provider cfg asks for, or nil when cfg leaves tracing
// off (Tracer and the lifecycle of a nil *Provider do nothing). It sends
// nothing before the first span ends.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	u, env, on := cfg.target()
	if !on {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(ExportTimeout)}
	if env == "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", ServiceName),
		attribute.String("service.version", cfg.ServiceVersion))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp,
		sdktrace.WithMaxQueueSize(MaxQueueSize), sdktrace.WithMaxExportBatchSize(MaxExportBatchSize),
		sdktrace.WithBatchTimeout(BatchTimeout), sdktrace.WithExportTimeout(ExportTimeout)))
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The exporter reports a failed export (the collector down) to
	// OpenTelemetry's global handler, which would write to stderr past
	// the server's log: one warning per failed export.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("exporting traces", "err", err) }))
	return &Provider{tp: tp, tracer: NewTracer(tp), log: log}, nil
}

// Tracer returns the stages' tracer: nil (tracing off) for a nil Provider.
func (p *Provider) Tracer() *Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Start runs the provider until ctx ends or Stop, then flushes it.
func (p *Provider) Start(ctx context.Context) error {
	p.StartGo(ctx, func(ctx context.Context) {
		<-ctx.Done()
		p.shutdown()
	})
	return nil
}

// Stop flushes the spans not yet exported and shuts the exporter down
// (also when it was never started); spans that end later are dropped.
func (p *Provider) Stop() {
	p.Base.Stop()
	p.shutdown()
}

func (p *Provider) shutdown() {
	p.shutOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := p.tp.Shutdown(ctx); err != nil {
			p.log.Warn("flushing traces at shutdown", "err", err)
		}
	})
}

// ForceFlush exports every span ended so far and returns when the
// collector has answered (or ctx ended).
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return errors.New("tracing is off")
	}
	return p.tp.ForceFlush(ctx)
}
