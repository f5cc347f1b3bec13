package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/certfile"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/profiling"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres"
)

// runServe runs the server until ctx ends (SIGINT or SIGTERM), then shuts
// down: it stops accepting requests, lets publishes in progress commit,
// gives attempts in flight --shutdown-grace to finish (the rest are
// attempted again after restart), flushes the store and exits 0. Every
// setting is checked before anything starts: a bad one exits 2.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := newServeFlags(stderr)
	fromEnv, code, ok := parseFlags(fs, args, stdout, stderr, true)
	if !ok {
		return code
	}
	cfg, err := o.config()
	if err != nil {
		return usageError(stderr, fs.Name(), err, fromEnv)
	}
	logger, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return usageError(stderr, fs.Name(), err, fromEnv)
	}
	fit, err := fitDescriptors(&cfg, logger)
	if err != nil {
		return usageError(stderr, fs.Name(), err, fromEnv)
	}

	build := currentBuild()
	cfg.Logger, cfg.Version = logger, build.short()
	srv, err := server.New(ctx, cfg)
	if err != nil {
		logger.Error("starting", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		logger.Error("listening", "addr", o.addr, "err", err)
		_ = srv.Close(context.Background())
		return 1
	}
	hs := api.NewHTTPServer(srv.Handler(), srv.API.Logger, api.ConnLimits{Max: fit.MaxConnections, PerClient: cfg.MaxConnectionsPerClient})
	if o.tls != nil {
		hs.TLSConfig = o.tls.TLSConfig()
		reloadOnHangup(ctx, o.tls, logger)
	}
	if o.pprofAddr != "" {
		pln, err := net.Listen("tcp", o.pprofAddr)
		if err != nil {
			logger.Error("listening", "pprof", o.pprofAddr, "err", err)
			_ = srv.Close(context.Background())
			return 1
		}
		go servePprof(pln, logger)
	}
	// The services run until Close, which stops them in order; ctx ends
	// at the signal, before the HTTP server has drained.
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		logger.Error("starting", "err", err)
		_ = srv.Close(context.Background())
		return 1
	}
	logger.Info("herald listening", "addr", ln.Addr().String(), "store", storeName(cfg.Store), "data", cfg.DataDir,
		"node", srv.Pipeline.Scheduler.Config().Owner, "version", build.Version, "revision", build.Revision)
	base := o.scheme() + "://" + ln.Addr().String()
	fmt.Fprintf(stdout, "herald listening on %s\nconsole at %s/console/ (sign in with an API key)\n", base, base)

	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	code = 0
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-serveErr:
		logger.Error("http server", "err", err)
		code = 1
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	srv.StopWaiting() // long-polling consumers answer now, not at their max_wait
	if err := hs.Shutdown(shutCtx); err != nil {
		logger.Warn("closing HTTP connections", "err", err)
	}
	if err := srv.Close(shutCtx); err != nil {
		logger.Error("closing the store", "err", err)
		code = 1
	}
	logger.Info("stopped")
	return code
}

// fitDescriptors gives attempts in flight and inbound connections what the
// process's file descriptor limit leaves after the store and the process:
// both lowered (cfg's MaxInFlight, and the connections returned), with one
// warning, rather than refused, so that the defaults run under a low limit
// too. It fails when not even the fewest fit.
func fitDescriptors(cfg *server.Config, logger *slog.Logger) (server.DescriptorFit, error) {
	limit := descriptorLimit()
	fit, err := cfg.FitDescriptors(limit)
	if err != nil || !fit.Lowered {
		return fit, err
	}
	logger.Warn("--max-in-flight and --max-connections lowered to fit the file descriptor limit (three descriptors per attempt in flight, one per connection)",
		"max_in_flight", fit.MaxInFlight, "max_in_flight_asked", cfg.Scheduling.MaxInFlight,
		"max_connections", fit.MaxConnections, "max_connections_asked", cfg.MaxConnections, "descriptor_limit", limit)
	cfg.Scheduling.MaxInFlight = fit.MaxInFlight
	return fit, nil
}

// serveOptions holds the values of herald serve's flags: the server's
// configuration, and what only the command uses.
type serveOptions struct {
	server                               server.Config
	window                               int // both of the scheduler's windows
	addr, logFormat, logLevel, pprofAddr string
	grace                                time.Duration
	// tlsCert and tlsKey are the API's certificate and key files (both
	// or neither); tls is their pair once config has loaded it.
	tlsCert, tlsKey string
	tls             *certfile.Pair
	// outboundCA is --outbound-ca-file: CA certificates trusted for
	// pushes besides the system's (Attempting.RootCAs).
	outboundCA string
}

// config returns the server's configuration from the flags as given, or
// the first bad value among them (the server's, checked by
// server.Config.Validate, and the command's own).
func (o *serveOptions) config() (server.Config, error) {
	cfg := o.server
	cfg.Scheduling.FreshWindow, cfg.Scheduling.LoadWindow = o.window, o.window
	// Not a flag: a key on the command line is visible to every user of
	// the machine.
	cfg.AdminKey = os.Getenv("HERALD_ADMIN_KEY")
	cfg.Tracing.LookupEnv = os.LookupEnv // the standard OTEL_EXPORTER_OTLP_* variables

	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if err := checkAddr("--addr", o.addr); err != nil {
		return cfg, err
	}
	if o.pprofAddr != "" {
		if err := checkAddr("--pprof", o.pprofAddr); err != nil {
			return cfg, err
		}
	}
	if o.grace <= 0 {
		return cfg, fmt.Errorf("--shutdown-grace %v: must be positive", o.grace)
	}
	if err := o.loadTLS(); err != nil {
		return cfg, err
	}
	if o.outboundCA != "" {
		pool, err := certfile.LoadPool(o.outboundCA)
		if err != nil {
			return cfg, fmt.Errorf("--outbound-ca-file: %v", err)
		}
		cfg.Attempting.RootCAs = pool
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = defaultPublicURL(o.addr, o.tls != nil)
	} else if u, err := url.Parse(cfg.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("--public-url %q: want an http:// or https:// URL", redact.URL(cfg.PublicURL))
	}
	return cfg, nil
}

// loadTLS loads --tls-cert and --tls-key, which go together: one without
// the other, or a pair that does not load, is a bad setting naming the
// flag or the file.
func (o *serveOptions) loadTLS() error {
	switch {
	case o.tlsCert == "" && o.tlsKey == "":
		return nil
	case o.tlsKey == "":
		return fmt.Errorf("--tls-cert %q needs --tls-key: give both, or neither to serve plain HTTP", o.tlsCert)
	case o.tlsCert == "":
		return fmt.Errorf("--tls-key %q needs --tls-cert: give both, or neither to serve plain HTTP", o.tlsKey)
	}
	p, err := certfile.Load(o.tlsCert, o.tlsKey)
	if err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %v", err)
	}
	o.tls = p
	return nil
}

// scheme is the API's URL scheme: https with --tls-cert.
func (o *serveOptions) scheme() string {
	if o.tls != nil {
		return "https"
	}
	return "http"
}

// defaultPublicURL is http:// (https:// with TLS) and the listening
// address, localhost for an address without a host (":8080").
func defaultPublicURL(addr string, tls bool) string {
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + addr
	}
	if host == "" {
		host = "localhost"
	}
	return scheme + net.JoinHostPort(host, port)
}

// reloadOnHangup re-reads the TLS pair on each SIGHUP until ctx ends: new
// connections get the new pair, open ones keep theirs; a pair that does
// not load is logged and the one in use stays.
func reloadOnHangup(ctx context.Context, pair *certfile.Pair, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := pair.Reload(); err != nil {
					logger.Warn("TLS certificate not reloaded; the previous one is still served", "err", err)
					continue
				}
				var about []any
				if leaf := pair.Certificate().Leaf; leaf != nil {
					about = []any{"subject", leaf.Subject.String(), "not_after", leaf.NotAfter}
				}
				logger.Info("TLS certificate reloaded", about...)
			}
		}
	}()
}

// newServeFlags returns herald serve's flag set, writing usage and errors to
// stderr, and the options its flags set. The server's flags default to
// server.DefaultConfig() (the node's name to scheduling.DefaultOwner()); the
// command's own are set here.
func newServeFlags(stderr io.Writer) (*flag.FlagSet, *serveOptions) {
	o := &serveOptions{server: server.DefaultConfig()}
	sc, dc, ac := &o.server, &o.server.Scheduling, &o.server.Attempting
	o.window, dc.Owner = dc.FreshWindow, scheduling.DefaultOwner()
	fs := flag.NewFlagSet("herald serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address the API listens on")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS (HTTP/2) with this PEM certificate `file` (the chain, leaf first); needs --tls-key; both re-read on SIGHUP")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the PEM private key `file` of --tls-cert")
	fs.StringVar(&o.outboundCA, "outbound-ca-file", "", "trust the PEM CA certificates in this `file` besides the system's, for pushes, OAuth2 token fetches and handshakes (receivers with a private CA)")
	fs.StringVar(&sc.DataDir, "data", sc.DataDir, "directory of the embedded store")
	fs.StringVar(&sc.Store, "store", sc.Store, "store: sqlite (embedded, in --data) or a postgres:// URL shared by any number of nodes")
	fs.IntVar(&sc.DBMaxConns, "db-max-conns", sc.DBMaxConns, fmt.Sprintf("PostgreSQL connection pool size: 0 for max(8, 2×CPUs), or at least %d", postgres.MinMaxConns))
	fs.DurationVar(&sc.DBStatementTimeout, "db-statement-timeout", postgres.DefaultStatementTimeout, "PostgreSQL statement timeout")
	fs.DurationVar(&dc.Lease, "lease", dc.Lease, "how long a node's claim on a delivery lasts unrenewed (renewed every third of it); with PostgreSQL, other nodes take over a dead node's deliveries this long after it died")
	fs.StringVar(&dc.Owner, "node-id", dc.Owner, "this process's name in leases, unique among nodes sharing a database; unless given, the host name, the process ID and a random suffix")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug (adds a line per API request), info (what happens to deliveries), warn or error")
	fs.DurationVar(&sc.DedupRetention, "dedup-retention", sc.DedupRetention, "how long a published (source, id) is remembered as a duplicate; finished events older than this are deleted")
	fs.IntVar(&dc.EndpointConcurrency, "endpoint-max-concurrency", dc.EndpointConcurrency, "attempts in flight per endpoint (URL) at most")
	fs.IntVar(&dc.MaxInFlight, "max-in-flight", dc.MaxInFlight, "attempts in flight across all endpoints at most; lowered with --max-connections, with a warning, to fit the file descriptor limit")
	fs.IntVar(&sc.MaxConnections, "max-connections", sc.MaxConnections, "inbound API connections open at once at most (at the cap the oldest idle one is closed for a new one; with none idle, a few more answer only /healthz and /readyz); lowered with --max-in-flight, with a warning, to fit the file descriptor limit (three descriptors per attempt in flight, one per connection)")
	fs.IntVar(&sc.MaxConnectionsPerClient, "max-connections-per-client", sc.MaxConnectionsPerClient, "inbound API connections one client address holds open at once at most (0: no limit); at it a new one closes the address's oldest idle one, or, with none idle, is closed as soon as it is accepted. Behind a proxy every client has the proxy's address: raise it, or 0")
	fs.IntVar(&sc.MaxReceivesPerAccount, "max-receives-per-account", sc.MaxReceivesPerAccount, "receives of one account that wait at once at most, on this node, on either API (0: no limit); one more answers 429 with Retry-After")
	fs.IntVar(&o.window, "window", o.window, "deliveries held in memory per source (publish fast path, due loader) at most")
	fs.IntVar(&sc.MaxSubscriptionsPerAccount, "max-subscriptions-per-account", sc.MaxSubscriptionsPerAccount, "subscriptions one account may hold at most (0: no limit); one more is refused with 409")
	fs.IntVar(&sc.MaxFanout, "max-fanout", sc.MaxFanout, "deliveries one publish request may create at most (0: no limit); more is refused with 413 and nothing is stored")
	fs.IntVar(&sc.MaxJobsPerAccount, "max-jobs-per-account", sc.MaxJobsPerAccount, "recover jobs one account may have running or waiting at most (0: no limit); one more is refused with 429 and Retry-After, and nothing is stored")
	fs.DurationVar(&sc.JobRetention, "job-retention", sc.JobRetention, "how long a finished recover job (done or failed) is kept before it is deleted; at least 1m")
	fs.IntVar(&sc.MaxMatchWork, "max-match-work", sc.MaxMatchWork, "filter tests matching one publish request's events may cost at most (0: no limit; a test is one value of the event compared with one value of a filter: docs/subscriptions.md#what-matching-costs); more is refused with 413 and nothing is stored")
	fs.IntVar(&sc.MaxSchemaWork, "max-schema-work", sc.MaxSchemaWork, "schema tests checking one publish request's events against their types' schemas may cost at most (0: no limit; a test is one value of an event's data checked against one subschema: docs/event-types.md#what-checking-costs); more is refused with 413 and nothing is stored")
	fs.DurationVar(&o.grace, "shutdown-grace", 30*time.Second, "how long attempts in flight may finish at shutdown")
	fs.StringVar(&o.pprofAddr, "pprof", "", "serve net/http/pprof on this address (for profiling; off when empty)")
	fs.StringVar(&sc.Tracing.Endpoint, "otel-endpoint", "", "export OpenTelemetry traces over OTLP/HTTP to the collector at this base `URL` (http:// or https://; /v1/traces is appended); without it, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT turn tracing on; off when none is set (docs/tracing.md)")
	fs.StringVar(&sc.PublicURL, "public-url", "", "Herald's base URL as endpoints and browsers reach it, for the Event Grid validation URL and the portal's links (default http://--addr, https:// with --tls-cert)")
	fs.StringVar(&sc.Auth, "auth", sc.Auth, "on: every API route but /healthz, /readyz and /openapi.yaml needs an API key (Authorization: Bearer; the first admin key is HERALD_ADMIN_KEY, else made into <data>/admin.key); off: no key is needed, for local experiments only")
	fs.BoolVar(&ac.Destinations.AllowPrivate, "allow-private-destinations", ac.Destinations.AllowPrivate,
		"deliver to loopback, private (RFC 1918) and unique local (fc00::/7) addresses too; by default only public addresses are delivered to (link-local, metadata and the other ranges need --allow-destinations)")
	fs.Var(prefixesValue{&ac.Destinations.Allow}, "allow-destinations",
		"deliver to these address `ranges` too, whatever their class: CIDR ranges or addresses separated by commas (10.1.0.0/16,fd00::/8,169.254.10.1)")
	hc := &dc.Health
	fs.DurationVar(&hc.Window, "health-window", hc.Window, "rolling window of the endpoint failure-rate rule")
	fs.IntVar(&hc.MinAttempts, "health-min-attempts", hc.MinAttempts, "the failure-rate rule needs more attempts than this in the window")
	floatVar(fs, &hc.FailureRate, "health-failure-rate", "an endpoint is disabled when its failure rate in the window is above this `fraction` (above 0, at most 1)")
	fs.Int64Var(&hc.DisableConsecutive, "health-disable-consecutive", hc.DisableConsecutive, "an endpoint is disabled at this many consecutive failures")
	fs.Int64Var(&hc.FreezeStaleConsecutive, "health-freeze-stale-consecutive", hc.FreezeStaleConsecutive, "an endpoint is frozen above this many consecutive failures when its last success is older than --health-freeze-stale-after")
	fs.DurationVar(&hc.FreezeStaleAfter, "health-freeze-stale-after", hc.FreezeStaleAfter, "see --health-freeze-stale-consecutive")
	fs.Int64Var(&hc.FreezeConsecutive, "health-freeze-consecutive", hc.FreezeConsecutive, "an endpoint is frozen at this many consecutive failures")
	fs.DurationVar(&hc.ProbeInterval, "health-probe-interval", hc.ProbeInterval, "a disabled endpoint gets one probe delivery this often")
	fs.Int64Var(&hc.ProbationAfter, "probation-after", hc.ProbationAfter, "an endpoint goes on probation (delayed delivery) at this many consecutive failures; 0 turns probation off")
	fs.DurationVar(&hc.ProbationInitial, "probation-initial", hc.ProbationInitial, "first probation cool-down; it doubles after each failed probe")
	fs.DurationVar(&hc.ProbationMax, "probation-max", hc.ProbationMax, "longest probation cool-down")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: herald serve [flags]\n\nEvery flag can also be set in the environment as HERALD_<FLAG>, e.g. HERALD_ADDR.\n\n")
		fs.PrintDefaults()
	}
	return fs, o
}

// prefixesValue is --allow-destinations: address ranges (see
// destination.ParsePrefixes).
type prefixesValue struct{ p *[]netip.Prefix }

func (v prefixesValue) String() string {
	if v.p == nil {
		return ""
	}
	return destination.FormatPrefixes(*v.p)
}

func (v prefixesValue) Set(s string) error {
	ps, err := destination.ParsePrefixes(s)
	if err != nil {
		return err
	}
	*v.p = ps
	return nil
}

// logLevels are --log-level's values (slog's names of its levels, without
// its offsets such as info+2).
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

// newLogger returns the server's logger: --log-format's handler on w at
// --log-level. Each API request is a line at debug; what happens to
// deliveries is at info and warn (docs/monitoring.md#the-log).
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	lv, ok := logLevels[strings.ToLower(level)]
	if !ok {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

func servePprof(ln net.Listener, logger *slog.Logger) {
	logger.Info("pprof listening", "addr", ln.Addr().String())
	// Idle connections close as the API's do.
	if err := profiling.Serve(ln, api.IdleTimeout); err != nil {
		logger.Warn("pprof server", "err", err)
	}
}

// storeName is the store for logs: a PostgreSQL URL without its password.
func storeName(s string) string { return redact.URL(s) }
