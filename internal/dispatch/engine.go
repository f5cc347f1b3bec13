// Package dispatch moves due deliveries from the store to subscribers'
// endpoints and records what happened.
//
// Shape (DESIGN §4): deliveries reach memory two ways — fresh ones straight
// from the publish path after their commit (Reserve/Offer), and everything
// else through the due-window loader, which leases due deliveries from the
// store endpoint by endpoint. Each endpoint has a lane with two queues, fresh
// and retry; the dispatcher serves endpoints round-robin and, within an
// endpoint, fresh before retry, never running more than the endpoint's
// concurrency limit at once. Each attempt's outcome goes through the
// subscription's retry policy and is group-committed by the store.
//
// Bounds: at most Config.FreshWindow deliveries taken from the publish path
// and Config.LoadWindow taken by the loader are held in memory (the loader
// takes at most Config.EndpointWindow per endpoint), and at most
// Config.MaxInFlight attempts run at once. Everything else waits in the store.
//
// Lock order: Engine.mu is the only lock; no store or network call is made
// while holding it.
package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Config configures an Engine. Zero values take the defaults noted.
type Config struct {
	Store   store.Store
	Catalog *catalog.Catalog
	Clock   clock.Clock  // default clock.Real{}
	Logger  *slog.Logger // default discards
	Metrics *Metrics     // default: a Metrics on a private registry
	// Owner names this process in leases; it must be unique among the
	// processes sharing a store (default: host name, process ID and a random
	// suffix).
	Owner string
	// Lease is how long a claimed delivery stays leased (default 30s). The
	// engine renews the leases of everything it holds every Lease/3; on a
	// shared database another node takes over a delivery whose lease
	// expired (SQLite leases never expire: one process owns the file).
	Lease time.Duration
	// FreshWindow bounds deliveries held from the publish path (default 10,000).
	FreshWindow int
	// LoadWindow bounds deliveries held from the loader (default 10,000).
	LoadWindow int
	// EndpointWindow bounds loader-held deliveries per endpoint (default 512).
	EndpointWindow int
	// EndpointConcurrency is the most attempts in flight per endpoint
	// (default 64); InitialConcurrency is where an endpoint's adaptive limit
	// starts (default 8, at most EndpointConcurrency).
	EndpointConcurrency int
	InitialConcurrency  int
	// Health holds the circuit thresholds (default health.DefaultConfig()).
	Health health.Config
	// Notifier hears of circuit transitions and dead letters (optional).
	Notifier Notifier
	// Shared says other processes use the same store (PostgreSQL): then
	// every FlushInterval the engine also adopts endpoint health they
	// changed. One SQLite process owns its store and skips that read.
	Shared bool
	// FlushInterval is how often this node's endpoint outcomes are merged
	// into the store and other nodes' changes adopted (default 1s; a local
	// state change is merged at once).
	FlushInterval time.Duration
	// MaxInFlight bounds attempts in flight across endpoints (default 1,024).
	MaxInFlight int
	// PollInterval is the longest the loader sleeps without looking at the
	// store (default 1s); RefreshInterval is how often it rescans every
	// endpoint for due work (default 30s).
	PollInterval    time.Duration
	RefreshInterval time.Duration
	// Client sends the attempts (default NewHTTPClient()).
	Client *http.Client
	// UserAgent is sent with every attempt (default "Herald").
	UserAgent string
	// Rand returns numbers in [0,1) for jitter (default math/rand/v2).
	Rand func() float64
}

func (c *Config) setDefaults() {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	if c.Owner == "" {
		c.Owner = DefaultOwner()
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.FreshWindow <= 0 {
		c.FreshWindow = 10_000
	}
	if c.LoadWindow <= 0 {
		c.LoadWindow = 10_000
	}
	if c.EndpointWindow <= 0 {
		c.EndpointWindow = 512
	}
	if c.EndpointConcurrency <= 0 {
		c.EndpointConcurrency = 64
	}
	if c.InitialConcurrency <= 0 {
		c.InitialConcurrency = 8
	}
	if c.InitialConcurrency > c.EndpointConcurrency {
		c.InitialConcurrency = c.EndpointConcurrency
	}
	if c.Health == (health.Config{}) {
		c.Health = health.DefaultConfig()
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = time.Second
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 1024
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = 30 * time.Second
	}
	if c.Client == nil {
		c.Client = NewHTTPClient()
	}
	if c.UserAgent == "" {
		c.UserAgent = "Herald"
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
}

// Engine is the dispatcher. Create it with New, then Start; Stop ends it.
type Engine struct {
	cfg Config

	mu        sync.Mutex
	lanes     map[string]*lane
	running   map[string]struct{} // IDs of deliveries in their attempt
	ready     ring                // endpoints with queued work and a free concurrency slot
	inFlight  int
	freshHeld int // reserved or held from the publish path
	loadHeld  int // held from the loader
	stopping  bool
	started   bool

	kick        chan struct{} // wakes the loader; capacity 1
	flushKick   chan struct{} // wakes the health flusher; capacity 1
	flusherDone chan struct{}
	keeperStop  chan struct{}
	keeperDone  chan struct{}
	// recordQueue feeds the recorder, which writes outcomes in batches.
	recordQueue  chan recordReq
	recorderDone chan struct{}
	attemptsCtx  context.Context
	cancel       context.CancelFunc // cancels attempts still running at a hard stop
	loaderDone   chan struct{}
	attempts     sync.WaitGroup
}

// New returns an engine that has not started. Its recorder runs from now
// until Stop.
func New(cfg Config) *Engine {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		cfg:          cfg,
		lanes:        map[string]*lane{},
		running:      map[string]struct{}{},
		kick:         make(chan struct{}, 1),
		flushKick:    make(chan struct{}, 1),
		flusherDone:  make(chan struct{}),
		keeperStop:   make(chan struct{}),
		keeperDone:   make(chan struct{}),
		recordQueue:  make(chan recordReq, recordQueueSize),
		recorderDone: make(chan struct{}),
		attemptsCtx:  ctx,
		cancel:       cancel,
		loaderDone:   make(chan struct{}),
	}
	go e.recorder()
	return e
}

// Notifier hears what the operators may want to know. Calls are made
// outside the engine's lock and must not block for long.
type Notifier interface {
	// EndpointChanged reports a circuit transition; ep is the endpoint after it.
	EndpointChanged(ep store.Endpoint, tr health.Transition)
	// DeliveryDeadLettered reports a delivery that was dead-lettered.
	DeliveryDeadLettered(c store.Claimed, sub *catalog.Entry, out store.Outcome)
}

// Start loads every endpoint's health and starts the loader and the health
// flusher.
func (e *Engine) Start(ctx context.Context) error {
	eps, err := e.cfg.Store.AllEndpoints(ctx)
	if err != nil {
		return fmt.Errorf("loading endpoint health: %w", err)
	}
	e.mu.Lock()
	for _, ep := range eps {
		e.adopt(e.laneFor(ep.ID), ep)
	}
	e.started = true
	e.mu.Unlock()
	go e.loader()
	go e.flusher()
	if e.cfg.Shared {
		go e.leaseKeeper()
	} else {
		close(e.keeperDone)
	}
	return nil
}

// Stop stops taking new work, waits for attempts in flight until ctx ends,
// then abandons the rest (their deliveries stay leased to this process and are
// released below, so they are attempted again: at-least-once), and releases
// every delivery held in memory but not yet attempted.
func (e *Engine) Stop(ctx context.Context) {
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		return
	}
	e.stopping = true
	started := e.started
	e.mu.Unlock()
	if started {
		e.wake()
		<-e.loaderDone
		e.flushSoon()
		<-e.flusherDone
		close(e.keeperStop)
		<-e.keeperDone
	}

	done := make(chan struct{})
	go func() { e.attempts.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.cancel()
		<-done
	}
	close(e.recordQueue) // every attempt has recorded its outcome
	<-e.recorderDone

	e.mu.Lock()
	var ids []string
	for _, l := range e.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			for q.len() > 0 {
				ids = append(ids, q.pop().c.ID)
			}
		}
	}
	e.mu.Unlock()
	if len(ids) > 0 {
		e.releaseIDs(ids)
	}
	e.flush()
}

// Reserve asks for places for fresh deliveries from the publish path, one
// per endpoint ID given (repeats allowed), and says which it grants: while
// the fast path has room, and only for endpoints whose circuit is open. The
// publisher writes granted deliveries leased to this process and hands them
// over with Offer; the rest it writes unleased, for the loader. Unreserve
// returns places not used.
func (e *Engine) Reserve(endpointIDs []string) []bool {
	granted := make([]bool, len(endpointIDs))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return granted
	}
	inCall := map[string]int{}
	for i, id := range endpointIDs {
		if e.freshHeld >= e.cfg.FreshWindow {
			break
		}
		l := e.lanes[id]
		if l == nil && e.cfg.Shared || l != nil && (!l.known || l.ep.Health.State != health.Enabled) {
			continue
		}
		// One endpoint may not fill the shared fast path: past
		// EndpointWindow queued first attempts (a slow or dead endpoint),
		// its new deliveries wait in the store.
		queued := inCall[id]
		if l != nil {
			queued += l.fresh.len()
		}
		if queued >= e.cfg.EndpointWindow {
			continue
		}
		inCall[id]++
		granted[i] = true
		e.freshHeld++
	}
	return granted
}

// Unreserve gives back n places taken by Reserve and not offered.
func (e *Engine) Unreserve(n int) {
	e.mu.Lock()
	e.freshHeld -= n
	e.mu.Unlock()
}

// Offer hands over committed deliveries leased to this process, for which
// places were reserved.
func (e *Engine) Offer(cs []store.Claimed) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range cs {
		e.enqueue(&item{c: cs[i], fromPublish: true})
	}
	e.pump()
}

// Hint tells the loader that an endpoint has a delivery due at `at` (after a
// redeliver or redrive through the API, for example).
func (e *Engine) Hint(endpointID string, at time.Time) {
	e.mu.Lock()
	l := e.laneFor(endpointID)
	lowered := l.nextDue.IsZero() || at.Before(l.nextDue)
	l.nextDue = earlier(l.nextDue, at)
	l.hinted = earlier(l.hinted, at)
	e.mu.Unlock()
	if lowered {
		e.wake()
	}
}

// Owner is this engine's lease owner (its node name).
func (e *Engine) Owner() string { return e.cfg.Owner }

// Stats is a snapshot of the engine's memory use, for metrics and tests.
type Stats struct {
	FreshHeld, LoadHeld, InFlight, Endpoints int
}

// Stats returns the current counts.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{FreshHeld: e.freshHeld, LoadHeld: e.loadHeld, InFlight: e.inFlight, Endpoints: len(e.lanes)}
}

func (e *Engine) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}
