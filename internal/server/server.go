// Package server assembles one Herald process: the store, the subscription
// catalog, the dispatcher, the publish path and the HTTP API, with the
// background work that keeps them current (catalog reload, retention
// clean-up). cmd/herald's serve command runs it; engine tests build it on a
// fake clock.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/control"
	"github.com/herald-events/herald/internal/dispatch"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/ingest"
	"github.com/herald-events/herald/internal/opevents"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// Config configures a Server. Zero values take the defaults noted.
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
	// CatalogReload is how often the catalog reads subscription changes
	// from the store when nothing announced one (default 10s; the read
	// costs one small query when nothing changed). On PostgreSQL other
	// nodes' changes are announced with LISTEN/NOTIFY and read at once; a
	// publish never depends on either, since the store refuses one matched
	// against an older catalog.
	CatalogReload time.Duration
	// Dispatch tunes the dispatcher; Store, Catalog, Clock, Logger and Metrics
	// are filled in by New.
	Dispatch dispatch.Config
}

// Server is one running Herald process.
type Server struct {
	cfg      Config
	Store    store.Store
	Catalog  *catalog.Catalog
	Engine   *dispatch.Engine
	Ingester *ingest.Ingester
	Control  *control.Service
	API      *api.Server
	Registry *prometheus.Registry

	handler   http.Handler
	ops       *opevents.Publisher
	opsCancel context.CancelFunc
	stop      chan struct{}
	bg        sync.WaitGroup
	closeOnce sync.Once
}

// New opens the store and builds the process; Start begins dispatching.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = "./herald-data"
	}
	if cfg.Store == "" {
		cfg.Store = "sqlite"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DedupRetention <= 0 {
		cfg.DedupRetention = 7 * 24 * time.Hour
	}
	if cfg.CatalogReload <= 0 {
		cfg.CatalogReload = 10 * time.Second
	}
	if cfg.Dispatch.Owner == "" {
		cfg.Dispatch.Owner = dispatch.DefaultOwner()
	}
	if cfg.Dispatch.Lease <= 0 {
		cfg.Dispatch.Lease = 30 * time.Second
	}

	var st store.Store
	switch {
	case cfg.Store == "sqlite":
		if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		s, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "herald.db"), sqlite.Options{Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("opening the SQLite store: %w", err)
		}
		st = s
	case strings.HasPrefix(cfg.Store, "postgres://") || strings.HasPrefix(cfg.Store, "postgresql://"):
		s, err := postgres.Open(ctx, cfg.Store, postgres.Options{
			Logger: cfg.Logger, Clock: cfg.Clock,
			MaxConns: cfg.DBMaxConns, StatementTimeout: cfg.DBStatementTimeout,
		})
		if err != nil {
			return nil, fmt.Errorf("opening the PostgreSQL store: %w", err)
		}
		st = s
	default:
		return nil, fmt.Errorf("--store %q: want sqlite or a postgres:// URL", cfg.Store)
	}

	if st.Capabilities().LeasesExpire && cfg.Dispatch.RefreshInterval <= 0 {
		// Find deliveries whose lease a dead node left to expire soon.
		cfg.Dispatch.RefreshInterval = 5 * time.Second
	}

	cat := catalog.New(st)
	if err := cat.Sync(ctx); err != nil {
		cfg.Logger.Warn("loading subscriptions", "err", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	dc := cfg.Dispatch
	dc.Store, dc.Catalog, dc.Clock, dc.Logger = st, cat, cfg.Clock, cfg.Logger
	if dc.Health == (health.Config{}) {
		dc.Health = health.DefaultConfig()
	}
	dc.Metrics = dispatch.NewMetrics(reg)
	if dc.UserAgent == "" {
		dc.UserAgent = "Herald/" + cfg.Version
	}
	in := &ingest.Ingester{Store: st, Catalog: cat, Clock: cfg.Clock}
	ops := opevents.New(func(ctx context.Context, evs []event.Event) error {
		_, err := in.Publish(ctx, evs)
		return err
	}, cfg.Clock, cfg.Logger.With("component", "opevents"), reg)
	dc.Notifier = ops
	eng := dispatch.New(dc)
	in.Dispatch = eng
	reg.MustRegister(eng.Collector())
	ctl := &control.Service{Store: st, Catalog: cat, Dispatch: eng, Clock: cfg.Clock, Logger: cfg.Logger.With("component", "control")}
	a := &api.Server{Store: st, Control: ctl, Publisher: in, Live: eng, Clock: cfg.Clock,
		Logger: cfg.Logger.With("component", "api"), Registry: reg, Version: cfg.Version, HealthWindow: dc.Health.Window}
	s := &Server{cfg: cfg, Store: st, Catalog: cat, Engine: eng, Ingester: in, Control: ctl, API: a, Registry: reg, ops: ops, stop: make(chan struct{})}
	s.handler = a.Handler()
	return s, nil
}

// Handler is the HTTP API.
func (s *Server) Handler() http.Handler { return s.handler }

// Start begins dispatching and the background work.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Engine.Start(ctx); err != nil {
		return err
	}
	opsCtx, cancel := context.WithCancel(context.Background())
	s.opsCancel = cancel
	go s.ops.Run(opsCtx)
	s.bg.Add(1)
	go s.background()
	return nil
}

// Close stops dispatching (attempts in flight get until ctx ends to finish;
// the rest are given back to the store), stops the background work and
// closes the store. Stop the HTTP server first so no publish is in progress.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		s.bg.Wait()
		s.Engine.Stop(ctx)
		if s.opsCancel != nil {
			// Operational events from the last attempts are published before
			// the store closes.
			s.opsCancel()
			<-s.ops.Done()
		}
		err = s.Store.Close()
	})
	return err
}

// changeFeed is implemented by stores that announce other processes'
// writes (PostgreSQL, with LISTEN/NOTIFY).
type changeFeed interface {
	SubscriptionsChanged() <-chan struct{}
	EndpointsChanged() <-chan struct{}
}

// background keeps the catalog current (at once when the store announces a
// change, else every CatalogReload), passes endpoint health announcements
// to the engine, and deletes old finished events once a minute on one node
// (times read from the injected clock).
func (s *Server) background() {
	defer s.bg.Done()
	log := s.cfg.Logger.With("component", "background")
	const cleanupEvery = time.Minute
	nextCleanup := s.cfg.Clock.Now().Add(cleanupEvery)
	var subsChanged, healthChanged <-chan struct{}
	if f, ok := s.Store.(changeFeed); ok {
		subsChanged, healthChanged = f.SubscriptionsChanged(), f.EndpointsChanged()
	}
	for {
		t := s.cfg.Clock.NewTimer(s.cfg.CatalogReload)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-healthChanged:
			t.Stop()
			s.Engine.HealthChanged()
			continue
		case <-subsChanged:
			t.Stop()
		case <-t.C():
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := s.Catalog.Sync(ctx); err != nil {
			log.Warn("reading subscription changes", "err", err)
		}
		if now := s.cfg.Clock.Now(); !now.Before(nextCleanup) && s.lead(ctx, "cleanup", now, 2*cleanupEvery) {
			nextCleanup = now.Add(cleanupEvery)
			// At most 100 × 1,000 events per round keeps each round short.
			for i := 0; i < 100; i++ {
				n, err := s.Store.Cleanup(ctx, now.Add(-s.cfg.DedupRetention), 1000)
				if err != nil {
					log.Warn("deleting old events", "err", err)
					break
				}
				if n < 1000 {
					break
				}
			}
		}
		cancel()
	}
}

// lead reports whether this process holds the named cluster-wide role for
// the next term (taking it if it is free), so that periodic work runs on one
// node only.
func (s *Server) lead(ctx context.Context, role string, now time.Time, term time.Duration) bool {
	ok, err := s.Store.TryLead(ctx, role, s.cfg.Dispatch.Owner, now, now.Add(term))
	if err != nil {
		s.cfg.Logger.Warn("taking a cluster role", "role", role, "err", err)
	}
	return ok && err == nil
}
