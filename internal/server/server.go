// Package server assembles one Herald process: the store, the subscription
// catalog, the delivery path (internal/pipeline) and the HTTP API, with the
// background work that keeps them current (background.go: catalog reload,
// change feed, retention clean-up). Every long-running part is a
// startstop.Service, started and stopped in one order (services.go).
// cmd/herald's serve command runs it; engine tests build it on a fake
// clock.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/control"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/handshake"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/opevents"
	"github.com/herald-events/herald/internal/pipeline"
	"github.com/herald-events/herald/internal/queue"
	"github.com/herald-events/herald/internal/recovery"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/sourcing"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/tracing"
)

// Config configures a Server. A zero field takes its value from
// DefaultConfig; Validate says whether the result makes sense.
type Config struct {
	// DataDir holds the embedded store's files (default "./herald-data").
	DataDir string
	// Store is "sqlite" (default) or a postgres:// URL; any number of
	// processes may share one PostgreSQL database.
	Store string
	// DBMaxConns and DBStatementTimeout tune the PostgreSQL pool (zero:
	// the store's defaults).
	DBMaxConns         int
	DBStatementTimeout time.Duration
	Clock              clock.Clock  // default clock.Real{}
	Logger             *slog.Logger // default discards
	Version            string
	// DedupRetention is how long a published (source, id) is remembered for
	// duplicate detection; finished events older than this are deleted
	// (default 7 days).
	DedupRetention time.Duration
	// CleanupBatch is the number of old events one round of the retention
	// clean-up deletes, one store write (default 1,000; tests make it small
	// to need many rounds).
	CleanupBatch int
	// RecoverPace is the pause of the job runner between two batches of a
	// recover (internal/recovery; default none: a batch is one store
	// transaction of at most job.BatchSize deliveries, and the runner
	// takes the writer between the pipeline's own writes).
	RecoverPace time.Duration
	// RecoverBatch is the most deliveries one batch of a recover moves
	// (default job.BatchSize; tests make it small to need many batches).
	RecoverBatch int
	// MaxJobsPerAccount is the most jobs (recovers) one account may have
	// running or waiting (store.ErrJobLimit, a 429; 0: no limit, which is
	// also what a zero value means here: DefaultConfig's is 4).
	MaxJobsPerAccount int
	// JobRetention is how long a finished job (done or failed) is kept
	// before the retention clean-up deletes it (default 7 days).
	JobRetention time.Duration
	// CatalogReload is how often the catalog reads subscription changes
	// from the store when nothing announced one (default 10s; the read
	// costs one small query when nothing changed). On PostgreSQL other
	// nodes' changes are announced with LISTEN/NOTIFY and read at once; a
	// publish never depends on either, since the store refuses one matched
	// against an older catalog.
	CatalogReload time.Duration
	// Auth is "on" (the default: every API route but /healthz, /readyz and
	// /openapi.yaml needs an API key) or "off" (every request acts as an
	// admin; for local experiments, logged as a warning).
	Auth string
	// AdminKey, when set (HERALD_ADMIN_KEY), is always accepted as an
	// admin key; it is never stored. Without it, the first start on a
	// store holding no key makes an admin key and writes it to
	// <DataDir>/admin.key (mode 0600).
	AdminKey string
	// PublicURL is Herald's base URL as endpoints reach it: the Event Grid
	// validation URL and the portal's links are built on it (herald
	// serve: http://--addr unless --public-url).
	PublicURL string
	// AuthRecheck is how often cached keys are checked for revocation
	// (auth.DefaultRecheck): a revoked key stops working on every node
	// within this long.
	AuthRecheck time.Duration
	// MaxConnections caps the inbound connections the API holds open at
	// once (default 4,096; herald serve lowers it, with
	// Scheduling.MaxInFlight, to fit the file descriptor limit:
	// FitDescriptors). At the cap the oldest idle connection is closed to
	// make room for a new one, and with none idle the new one is a reserve
	// connection, which answers the probes alone (see api.NewHTTPServer).
	MaxConnections int
	// MaxConnectionsPerClient caps the inbound connections one client
	// address holds open at once (default 256; 0: no limit, also for a
	// zero value); more are closed as soon as they are accepted
	// (api.ConnLimits.PerClient). MaxReceivesPerAccount caps the receives
	// of one account that wait at once (default 64; 0: no limit, also for
	// a zero value); one more answers 429 with Retry-After
	// (api.Server.MaxReceivesPerAccount).
	MaxConnectionsPerClient int
	MaxReceivesPerAccount   int
	// MaxSubscriptionsPerAccount is the most subscriptions one account may
	// hold (store.ErrSubscriptionLimit; 0: no limit, which is also what a
	// zero value means here: DefaultConfig's is 1,000).
	MaxSubscriptionsPerAccount int
	// MaxFanout is the most deliveries one publish request may create
	// (admission.Publisher.MaxFanout; 0: no limit, also for a zero value:
	// DefaultConfig's is 100,000).
	MaxFanout int
	// MaxMatchWork is the most filter tests matching one publish request's
	// events may cost (admission.Publisher.MaxMatchWork; 0: no limit, also
	// for a zero value: DefaultConfig's is DefaultMaxMatchWork).
	MaxMatchWork int
	// MaxSchemaWork is the most schema tests checking one publish
	// request's events against their types' schemas may cost
	// (eventtype.Checker.MaxWork; 0: no limit, also for a zero value:
	// DefaultConfig's is DefaultMaxSchemaWork).
	MaxSchemaWork int
	// Scheduling tunes the scheduling stage (lanes, windows, concurrency,
	// circuits, leases); Attempting the attempts (destinations, client,
	// user agent). What the stages share (store, catalog, clock, logger,
	// metrics) is filled in by New (see internal/pipeline).
	Scheduling scheduling.Config
	Attempting attempting.Config
	// SourcePeriod and SourceTerm are how often this node looks at the
	// broker sources, and how long the lease of a source's consumer lasts
	// (zero: sourcing.DefaultPeriod, sourcing.DefaultTerm).
	SourcePeriod time.Duration
	SourceTerm   time.Duration
	// SourceTestSignals, when set (tests only, initialized), are the
	// sources service's signals (sourcing.TestSignals).
	SourceTestSignals *sourcing.TestSignals
	// Tracing says whether and where OpenTelemetry traces go
	// (--otel-endpoint or the OTEL_EXPORTER_OTLP_* variables; off by
	// default: docs/tracing.md). New fills in its ServiceVersion and
	// Logger.
	Tracing tracing.Config
}

// Auth settings.
const (
	AuthOn  = "on"
	AuthOff = "off"
	// AdminKeyFile is the file in the data directory that holds the admin
	// key made at the first start (without HERALD_ADMIN_KEY).
	AdminKeyFile = "admin.key"
)

// DefaultMaxMatchWork is --max-match-work's default: 10 million filter
// tests, about a fifth of a second of one core. Ordinary publishes stay
// far under it: a request of 100 events each matched against 1,000
// subscriptions with 25 filters on short scalar values costs 2.6 million;
// herald bench's largest (fanout-filtered: 100 events against 1,000
// subscriptions indexed by their StringIn filter) 300
// (TestFilteredRequestFarUnderTheMatchBudget); the server tests all run
// with it.
const DefaultMaxMatchWork = 10_000_000

// DefaultMaxSchemaWork is --max-schema-work's default: 1 million schema
// tests (one value of an event's data checked against one subschema:
// eventtype.Work), about 0.5 to 3 s of one core
// (eventtype.BenchmarkSchemaWork: 500 to 3,000 ns a test on a shared
// 2-core machine), where a 1 MiB request against a schema that branches
// widely would otherwise take minutes. It lets a
// whole 1 MiB request (at most about 500,000 values) through a schema
// that applies at most two subschemas to each value; ordinary publishes
// stay far under it: 100 events of 50 values against a schema applying
// 3 subschemas a value cost 15,000. Its own budget, not the matching's:
// a schema test costs 25 to 150 filter tests (about 20 ns each).
const DefaultMaxSchemaWork = 1_000_000

// DefaultConfig returns a server's defaults, the stages' included: the
// one place they are set (herald serve's flags take theirs from here).
func DefaultConfig() Config {
	return Config{
		DataDir:        "./herald-data",
		Store:          "sqlite",
		DedupRetention: 7 * 24 * time.Hour,
		CleanupBatch:   1000,
		RecoverBatch:   job.BatchSize,
		CatalogReload:  10 * time.Second,
		Auth:           AuthOn,
		AuthRecheck:    auth.DefaultRecheck,
		MaxConnections: 4096,
		Scheduling:     scheduling.DefaultConfig(),
		Attempting:     attempting.DefaultConfig(),

		MaxSubscriptionsPerAccount: 1000,
		MaxFanout:                  100_000,
		MaxConnectionsPerClient:    256,
		MaxReceivesPerAccount:      64,

		MaxJobsPerAccount: 4,
		JobRetention:      7 * 24 * time.Hour,
		MaxMatchWork:      DefaultMaxMatchWork,
		MaxSchemaWork:     DefaultMaxSchemaWork,
	}
}

// Validate reports the first setting that makes no sense, naming it as
// herald serve's flag does. It checks the settings as given, before New
// fills zero fields from DefaultConfig (which it leaves to programmatic
// callers): a zero or negative value that New would silently replace is
// refused here, and so is an empty Scheduling.Owner (see scheduling.Config).
func (c Config) Validate() error {
	storeErr := checkStore(c.Store)
	switch {
	case unknownStore(storeErr):
		return storeErr
	case c.DataDir == "":
		return errors.New("--data must name a directory")
	case c.DedupRetention < time.Minute:
		return fmt.Errorf("--dedup-retention %v: must be at least 1m", c.DedupRetention)
	case c.DBMaxConns < 0 || c.DBMaxConns > 0 && c.DBMaxConns < postgres.MinMaxConns:
		return fmt.Errorf("--db-max-conns %d: must be 0 (max(8, 2×CPUs)) or at least %d", c.DBMaxConns, postgres.MinMaxConns)
	case c.DBStatementTimeout <= 0:
		return fmt.Errorf("--db-statement-timeout %v: must be positive", c.DBStatementTimeout)
	case c.CatalogReload <= 0:
		return errors.New("the catalog reload interval must be positive")
	case c.Auth != AuthOn && c.Auth != AuthOff:
		return fmt.Errorf("--auth %q: want on or off", c.Auth)
	case c.AdminKey != "" && len(c.AdminKey) < auth.MinAdminKeyLen:
		return fmt.Errorf("HERALD_ADMIN_KEY: must be at least %d characters (it opens every account)", auth.MinAdminKeyLen)
	case c.AdminKey != "" && len(c.AdminKey) > auth.MaxKeyLen:
		return fmt.Errorf("HERALD_ADMIN_KEY: must be at most %d characters", auth.MaxKeyLen)
	case c.AuthRecheck <= 0:
		return errors.New("the auth recheck interval must be positive")
	case c.MaxConnections < 1:
		return fmt.Errorf("--max-connections %d: must be at least 1", c.MaxConnections)
	case c.MaxSubscriptionsPerAccount < 0:
		return fmt.Errorf("--max-subscriptions-per-account %d: must be 0 (no limit) or positive", c.MaxSubscriptionsPerAccount)
	case c.MaxFanout < 0:
		return fmt.Errorf("--max-fanout %d: must be 0 (no limit) or positive", c.MaxFanout)
	case c.MaxConnectionsPerClient < 0:
		return fmt.Errorf("--max-connections-per-client %d: must be 0 (no limit) or positive", c.MaxConnectionsPerClient)
	case c.MaxReceivesPerAccount < 0:
		return fmt.Errorf("--max-receives-per-account %d: must be 0 (no limit) or positive", c.MaxReceivesPerAccount)
	case c.MaxJobsPerAccount < 0:
		return fmt.Errorf("--max-jobs-per-account %d: must be 0 (no limit) or positive", c.MaxJobsPerAccount)
	case c.JobRetention < time.Minute:
		return fmt.Errorf("--job-retention %v: must be at least 1m", c.JobRetention)
	case c.MaxMatchWork < 0:
		return fmt.Errorf("--max-match-work %d: must be 0 (no limit) or positive", c.MaxMatchWork)
	case c.MaxSchemaWork < 0:
		return fmt.Errorf("--max-schema-work %d: must be 0 (no limit) or positive", c.MaxSchemaWork)
	}
	if storeErr != nil {
		return storeErr // a malformed URL
	}
	if err := c.Tracing.Validate(); err != nil {
		return err
	}
	if err := c.Attempting.Validate(); err != nil {
		return err
	}
	return c.Scheduling.Validate()
}

// setDefaults fills zero fields from DefaultConfig.
func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.DataDir == "" {
		c.DataDir = d.DataDir
	}
	if c.Store == "" {
		c.Store = d.Store
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.DedupRetention <= 0 {
		c.DedupRetention = d.DedupRetention
	}
	if c.CleanupBatch <= 0 {
		c.CleanupBatch = d.CleanupBatch
	}
	if c.RecoverBatch <= 0 {
		c.RecoverBatch = d.RecoverBatch
	}
	if c.JobRetention <= 0 {
		c.JobRetention = d.JobRetention
	}
	if c.CatalogReload <= 0 {
		c.CatalogReload = d.CatalogReload
	}
	if c.Auth == "" {
		c.Auth = d.Auth
	}
	if c.AuthRecheck <= 0 {
		c.AuthRecheck = d.AuthRecheck
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = d.MaxConnections
	}
	if c.Scheduling.Owner == "" {
		c.Scheduling.Owner = scheduling.DefaultOwner()
	}
}

// Server is one running Herald process.
type Server struct {
	cfg     Config
	Store   store.Store
	Catalog *catalog.Catalog
	// Pipeline is the delivery path: admission, scheduling, attempting,
	// recording.
	Pipeline *pipeline.Pipeline
	Control  *control.Service
	API      *api.Server
	Registry *prometheus.Registry
	// Auth authenticates API keys (nil with Auth off).
	Auth *auth.Authenticator
	// accounts caches the accounts the publish path reads (their schema
	// settings, wireEventTypes): Auth, or with Auth off an authenticator
	// used for its account cache alone (it holds no key and accepts none),
	// flushed by the account writes and kept current like Auth.
	accounts *auth.Authenticator
	// Validator runs endpoint validation handshakes.
	Validator *handshake.Validator
	// Queue serves the consumers of queued deliveries.
	Queue *queue.Service
	// Sources runs this node's broker sources' consumers.
	Sources *sourcing.Service
	// Jobs is this node's job runner (recovers).
	Jobs *recovery.Runner
	// EventTypes is the event-type catalog as publishes check it,
	// compiled (refreshed every Config.AuthRecheck).
	EventTypes *eventtype.Catalog
	// Tracing is the tracer provider (nil with tracing off): the first
	// service started and the last stopped, flushing the last spans.
	Tracing *tracing.Provider

	handler   http.Handler
	ops       *opevents.Publisher
	svcs      []startstop.Service // in start order (services.go)
	closeOnce sync.Once
}

// New opens the store and builds the process; Start begins delivering.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg.setDefaults()

	// The store announces receivable deliveries to the consumers waiting
	// in this process (the queue service, made below once the store is).
	var waiters atomic.Pointer[queue.Service]
	onQueued := func(ids []string) {
		if q := waiters.Load(); q != nil {
			q.Notify(ids)
		}
	}
	st, err := openStore(ctx, cfg, onQueued)
	if err != nil {
		return nil, err
	}

	cat := catalog.New(st)
	if err := cat.Sync(ctx); err != nil {
		cfg.Logger.Warn("loading subscriptions", "err", err)
	}

	tc := cfg.Tracing
	tc.ServiceVersion, tc.Logger = cfg.Version, cfg.Logger.With("component", "tracing")
	prov, err := tracing.New(ctx, tc)
	if err != nil {
		_ = st.Close()
		return nil, err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	if cfg.Attempting.UserAgent == "" {
		cfg.Attempting.UserAgent = "Herald/" + cfg.Version
	}
	var pipe *pipeline.Pipeline
	ops := opevents.New(func(ctx context.Context, account string, evs []event.Event) error {
		_, err := pipe.Admission.Publish(ctx, account, evs)
		return err
	}, cfg.Clock, cfg.Logger.With("component", "opevents"), reg)
	pipe = pipeline.New(pipeline.Config{Store: st, Catalog: cat, Clock: cfg.Clock, Logger: cfg.Logger, Registry: reg,
		Notifier: ops, MaxFanout: cfg.MaxFanout, MaxMatchWork: cfg.MaxMatchWork, Tracer: prov.Tracer(), Scheduling: cfg.Scheduling, Attempting: cfg.Attempting})
	sched, att := pipe.Scheduler, pipe.Attempter
	ctl := &control.Service{Store: st, Catalog: cat, Scheduler: sched, Attempts: att, Deactivations: pipe.Recorder,
		Clock: cfg.Clock, Logger: cfg.Logger.With("component", "control"), Notifier: ops, MaxJobsPerAccount: cfg.MaxJobsPerAccount}
	q := queue.New(st, cfg.Clock, reg, pipe.Finished, cfg.Logger.With("component", "queue"))
	waiters.Store(q)
	accounts := &control.Accounts{Store: st, Clock: cfg.Clock}
	a := &api.Server{Store: st, Control: ctl, Accounts: accounts, Publisher: pipe.Admission, Live: sched, Clock: cfg.Clock,
		Logger: cfg.Logger.With("component", "api"), Registry: reg, Version: cfg.Version, HealthWindow: sched.Config().Health.Window,
		Destinations: destination.Guard{Policy: att.Config().Destinations, Resolver: att.Config().Resolver}, Queue: q,
		Tracing: prov != nil, MaxReceivesPerAccount: cfg.MaxReceivesPerAccount}
	s := &Server{cfg: cfg, Store: st, Catalog: cat, Pipeline: pipe, Control: ctl, API: a, Registry: reg, ops: ops, Tracing: prov, Queue: q}
	s.Jobs = recovery.New(st, ctl, cfg.Clock, cfg.Scheduling.Owner, cfg.RecoverBatch, cfg.RecoverPace, cfg.Logger.With("component", "jobs"))
	ctl.Jobs = s.Jobs
	s.Validator = &handshake.Validator{Store: st, Catalog: cat, Activate: ctl, Client: att.Config().Client, Clock: cfg.Clock,
		Logger: cfg.Logger.With("component", "handshake"), PublicURL: cfg.PublicURL, UserAgent: att.Config().UserAgent}
	a.Validator = s.Validator
	if cfg.Auth == AuthOff {
		cfg.Logger.Warn("authentication is off (--auth=off): anyone who reaches this port can read every event, change every subscription and make Herald send requests; use it only for local experiments")
	} else {
		s.Auth = auth.New(st, auth.Options{AdminKey: cfg.AdminKey, Recheck: cfg.AuthRecheck, Clock: cfg.Clock,
			Logger: cfg.Logger.With("component", "auth")})
		a.Auth = s.Auth
		accounts.Auth = s.Auth
		if err := s.bootstrapKey(ctx); err != nil {
			if prov != nil {
				prov.Stop()
			}
			_ = st.Close()
			return nil, err
		}
	}
	s.wireEventTypes(cfg, reg)
	s.wireSources(cfg)
	con := &console.Console{Store: st, Control: ctl, Publisher: pipe.Admission, Destinations: a.Destinations, EventTypes: a.EventTypes,
		Sources: a.Sources, Accounts: accounts, Live: sched, HealthWindow: a.HealthWindow, Health: sched.Config().Health, Clock: cfg.Clock, Logger: cfg.Logger.With("component", "console")}
	if s.Auth != nil {
		con.Auth = s.Auth
	}
	a.Console = con.Handler()
	portal := &console.Portal{Store: st, Control: ctl, Publisher: a.Publisher, Destinations: a.Destinations, EventTypes: a.EventTypes,
		PublicURL: cfg.PublicURL, Live: sched, Clock: cfg.Clock, Logger: cfg.Logger.With("component", "portal")}
	if s.Auth != nil {
		portal.Auth = s.Auth
	}
	a.Portal, a.PortalLinks = portal.Handler(), portal
	s.handler, s.svcs = a.Handler(), s.services()
	return s, nil
}

// Handler is the HTTP API, with the console at /console/.
func (s *Server) Handler() http.Handler { return s.handler }

// StopWaiting ends the receives waiting for queued deliveries (they answer
// with what they have) and makes later ones answer at once: call it before
// shutting the HTTP server down, which waits for requests in progress.
func (s *Server) StopWaiting() { s.Queue.Close() }

// Close stops delivering (attempts in flight get until ctx ends to finish;
// the rest are given back to the store), stops the background work and
// closes the store. Stop the HTTP server first so no publish is in progress.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		s.Queue.Close() // the receives waiting end first
		// Attempts in flight get until ctx ends; then they are cut short
		// and their deliveries given back (at-least-once).
		stopHard := context.AfterFunc(ctx, s.Pipeline.Abandon)
		stopAll(s.svcs) // in order: see services
		stopHard()
		err = s.Store.Close()
	})
	return err
}

// wireSources makes the broker sources' consumers (internal/sourcing),
// publishing through the pipeline's admission, and their writes in the
// API, which kick them after each change.
func (s *Server) wireSources(cfg Config) {
	s.Sources = sourcing.New(sourcing.Config{Store: s.Store, Publisher: s.Pipeline.Admission, Clock: cfg.Clock,
		Logger: cfg.Logger.With("component", "sources"), Owner: cfg.Scheduling.Owner, Destinations: s.API.Destinations,
		Period: cfg.SourcePeriod, Term: cfg.SourceTerm, TestSignals: cfg.SourceTestSignals})
	s.API.Sources = &control.Sources{Store: s.Store, Clock: cfg.Clock, Destinations: s.API.Destinations, Changed: s.Sources.Kick,
		Deleted: s.Sources.Deleted}
}

// wireEventTypes makes the event-type catalog and its check, and hands
// them to the publish path, the control plane and the API. An account's
// settings are read through the authenticator's account cache (with
// authentication off, one kept for accounts alone: Server.accounts), so a
// publish reads no account from the store while it is cached.
func (s *Server) wireEventTypes(cfg Config, reg *prometheus.Registry) {
	s.accounts = s.Auth
	if s.accounts == nil {
		s.accounts = auth.New(s.Store, auth.Options{Recheck: cfg.AuthRecheck, Clock: cfg.Clock, Logger: cfg.Logger.With("component", "accounts")})
		s.API.Accounts.Auth = s.accounts // account writes flush it
	}
	s.EventTypes = eventtype.NewCatalog(s.Store, cfg.Clock, cfg.AuthRecheck, cfg.Logger.With("component", "eventtypes"))
	if err := s.EventTypes.Refresh(context.Background()); err != nil {
		cfg.Logger.Warn("reading the event types", "err", err)
	}
	settings := func(ctx context.Context, id string) (string, bool, error) {
		a, err := s.accounts.Account(ctx, id)
		return a.Settings.Validation(), a.Settings.CatalogOnly, err
	}
	check := eventtype.NewChecker(s.EventTypes, settings, reg, cfg.Logger.With("component", "eventtypes"))
	check.MaxWork, check.Clock = cfg.MaxSchemaWork, cfg.Clock
	s.Pipeline.Admission.Schemas = check
	s.Control.Types = check
	s.API.EventTypes = &control.EventTypes{Store: s.Store, Clock: cfg.Clock, Cache: s.EventTypes}
}
