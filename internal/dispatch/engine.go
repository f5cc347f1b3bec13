// Package dispatch moves due deliveries from the store to subscribers'
// endpoints and records what happened.
//
// Deliveries reach memory two ways: fresh ones straight from the publish
// path after their commit (Admit, then Admission.Commit), and everything
// else through the due loader (loader.go), which leases due deliveries from
// the store endpoint by endpoint. The scheduler (sched.go) keeps one lane
// per endpoint with two queues, fresh and retry, serves lanes round-robin
// and, within a lane, fresh before retry, never running more than the
// endpoint's concurrency limit at once. Each attempt (attempt.go, send.go)
// goes through the subscription's retry policy; its outcome is written by
// the recorder (recorder.go) in batches. Background services share one
// shape (loop.go): the loader, the health sync (health.go: endpoint health
// merged with the store and the other nodes), and on stores whose leases
// expire the lease keeper (leases.go).
//
// Bounds: at most Config.FreshWindow deliveries taken from the publish path
// and Config.LoadWindow taken by the loader are held in memory (the loader
// takes at most Config.EndpointWindow per endpoint), and at most
// Config.MaxInFlight attempts run at once. Everything else waits in the
// store. Lanes idle for ten minutes are dropped.
//
// Lock order: the scheduler's mutex and the attempt registry's mutex are
// leaves: nothing else is locked, and no store, network or blocking channel
// call is made, while either is held. Catalog.Sync's mutex is never taken
// under them.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Store is what the engine needs of the store.
type Store interface {
	Capabilities() store.Capabilities
	ClaimDue(ctx context.Context, endpointID string, now time.Time, limit int, lease store.Lease) ([]store.Claimed, error)
	DueEndpoints(ctx context.Context) ([]store.EndpointDue, error)
	NextDue(ctx context.Context, endpointID string) (time.Time, bool, error)
	Release(ctx context.Context, deliveryIDs []string, owner string) error
	ExtendLeases(ctx context.Context, deliveryIDs []string, lease store.Lease) ([]string, error)
	Record(ctx context.Context, outcomes []store.Outcome) error
	GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	EndpointChanges(ctx context.Context, since int64) ([]endpoint.Endpoint, int64, error)
	ModifyEndpoints(ctx context.Context, ids []string, fn func(eps []*endpoint.Endpoint) error) ([]endpoint.Endpoint, error)
	TakeProbe(ctx context.Context, endpointID string, now, hold time.Time) (bool, error)
}

// Subscriptions is the engine's view of the subscriptions: the catalog.
type Subscriptions interface {
	Get(id string) *catalog.Entry
	// Sync catches up with the store (a delivery whose subscription is not
	// known may be for one created since the last sync).
	Sync(ctx context.Context) error
}

// Engine is the dispatcher. Create it with New, then Start; Stop ends it.
type Engine struct {
	cfg   Config
	caps  store.Capabilities
	log   *slog.Logger
	sched *scheduler
	rec   *recorder
	// Background services (loop.go). keeper runs only on stores whose
	// leases expire.
	loader, health, keeper *loop
	loadState              loaderState // the loader's, used by its goroutine only
	healthState            healthState // the health sync's, used by its goroutine only
	running                attemptSet
	workers                *workers      // the goroutines attempts run on
	announce               announcements // deactivations announced

	startMu sync.Mutex // orders Start and Stop
	started bool
	stopped bool

	attemptsCtx context.Context
	cancel      context.CancelFunc // cancels attempts still running at a hard stop
}

// New returns an engine that has not started. Its recorder runs from now
// until Stop.
func New(cfg Config) *Engine {
	cfg.setDefaults(cfg.Store.Capabilities())
	ctx, cancel := context.WithCancel(context.Background())
	log := cfg.Logger.With("component", "dispatch")
	e := &Engine{
		cfg:  cfg,
		caps: cfg.Store.Capabilities(),
		log:  log,
		sched: newScheduler(schedConfig{
			FreshWindow: cfg.FreshWindow, LoadWindow: cfg.LoadWindow, EndpointWindow: cfg.EndpointWindow,
			EndpointConcurrency: cfg.EndpointConcurrency, InitialConcurrency: cfg.InitialConcurrency,
			MaxInFlight: cfg.MaxInFlight, Health: cfg.Health,
			Batch: func(id string) (int, int) {
				if sub := cfg.Catalog.Get(id); sub != nil {
					return sub.BatchLimits()
				}
				return 1, 0
			},
		}),
		attemptsCtx: ctx,
		cancel:      cancel,
		workers:     newWorkers(),
	}
	e.running.init()
	e.rec = newRecorder(cfg.Store.Record, cfg.Clock, cfg.Logger.With("component", "recorder"), cfg.StoreTimeout)
	e.loader = newLoop(cfg.Clock, e.loadRound)
	e.health = newLoop(cfg.Clock, e.healthRound)
	e.keeper = newLoop(cfg.Clock, e.renewLeases)
	return e
}

// Notifier hears what the operators may want to know. Calls are made
// outside the engine's locks and must not block for long.
type Notifier interface {
	// EndpointChanged reports a circuit transition; ep is the endpoint after it.
	EndpointChanged(ep endpoint.Endpoint, tr health.Transition)
	// DeliveryDeadLettered reports a delivery that was dead-lettered.
	DeliveryDeadLettered(c store.Claimed, sub *catalog.Entry, out store.Outcome)
	// SubscriptionDeactivated reports a push subscription deactivated by
	// the failed push of delivery c (its events are queued from now on).
	SubscriptionDeactivated(sub *catalog.Entry, c store.Claimed, out store.Outcome)
}

// Start loads every endpoint's health and starts the background services.
func (e *Engine) Start(ctx context.Context) error {
	eps, v, err := e.cfg.Store.EndpointChanges(ctx, 0)
	if err != nil {
		return fmt.Errorf("loading endpoint health: %w", err)
	}
	e.healthState.version = v
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if e.stopped {
		return errors.New("dispatch: Start after Stop")
	}
	s := e.sched
	s.mu.Lock()
	for _, ep := range eps {
		s.adopt(s.laneFor(ep.ID), ep, e.cfg.Clock.Now())
	}
	s.mu.Unlock()
	e.started = true
	e.loader.start()
	e.health.start()
	if e.caps.LeasesExpire {
		e.keeper.start()
	}
	return nil
}

// Stop stops taking new work, waits for attempts in flight until ctx ends,
// then abandons the rest (their deliveries stay leased to this process and
// are released below, so they are attempted again: at-least-once), writes
// every outcome, gives back every delivery held in memory but not yet
// attempted, and saves endpoint health.
func (e *Engine) Stop(ctx context.Context) {
	e.startMu.Lock()
	if e.stopped {
		e.startMu.Unlock()
		return
	}
	e.stopped = true
	started := e.started
	e.startMu.Unlock()

	e.sched.stop()
	e.loader.stop(started)
	e.keeper.stop(started && e.caps.LeasesExpire)

	done := make(chan struct{})
	go func() { e.sched.attempts.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.cancel()
		<-done
	}
	e.workers.stop()
	e.rec.stop(ctx) // every attempt has queued its outcome
	e.health.stop(started)
	if ids := e.sched.drain(); len(ids) > 0 {
		e.releaseIDs(ids)
	}
	e.flush()
}

// launch runs the attempts the scheduler started (pump counted each in
// scheduler.attempts).
func (e *Engine) launch(starts []start) {
	for _, st := range starts {
		l, items := st.l, st.items()
		e.workers.run(func() { e.run(l, items) })
	}
}

// Released tells the engine that deliveries of an endpoint were made due at
// `at` by an operator (a redeliver or redrive through the API): the loader
// looks for them at once. An operator's action is also the sign that the
// endpoint is fixed: when its circuit is in probation or disabled, the
// first delivery released goes now, as its probe, without waiting for the
// cool-down (a frozen endpoint still waits for Enable).
func (e *Engine) Released(ctx context.Context, endpointID string, at time.Time) error {
	err := e.probeNow(ctx, endpointID)
	if e.sched.hint(endpointID, at) || err == nil {
		e.loader.kick()
	}
	return err
}

// Config returns the engine's configuration, defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Owner is this engine's lease owner (its node name).
func (e *Engine) Owner() string { return e.cfg.Owner }

// Stats returns the current counts.
func (e *Engine) Stats() Stats { return e.sched.stats() }

// Sleepers is how many of the engine's goroutines sleep on its clock
// between rounds once started (the loader, the health sync and, on stores
// whose leases expire, the lease keeper). A test driving a fake clock waits
// for that many timers before it moves the time, so no round misses it.
func (e *Engine) Sleepers() int {
	if e.caps.LeasesExpire {
		return 3
	}
	return 2
}

// lease returns a lease from now for this engine.
func (e *Engine) lease(now time.Time) store.Lease {
	return store.Lease{Owner: e.cfg.Owner, Until: now.Add(e.cfg.Lease)}
}

// storeCtx bounds one store call.
func (e *Engine) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.cfg.StoreTimeout)
}

// releaseIDs gives deliveries back to the store, unattempted.
func (e *Engine) releaseIDs(ids []string) {
	ctx, cancel := e.storeCtx()
	defer cancel()
	if err := e.cfg.Store.Release(ctx, ids, e.cfg.Owner); err != nil {
		e.log.Warn("releasing deliveries", "count", len(ids), "err", err)
	}
}
