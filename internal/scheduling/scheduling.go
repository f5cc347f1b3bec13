// Package scheduling is the second stage of the delivery path: it decides
// which delivery is attempted when. It holds deliveries in memory in one
// lane per endpoint (lanes.go), starts attempts round-robin across lanes
// within each endpoint's adaptive concurrency limit and circuit gate
// (pump.go) and, for a rate-limited endpoint, with a token of its bucket
// (rate.go), runs each on a worker that hands it to the attempting stage,
// frees its slot when the exchange is over and hands its outcomes to the
// recording stage (run.go), and frees its memory place once the recording
// stage reports its outcome written (finish.go).
//
// Deliveries reach the lanes two ways: fresh ones straight from the
// admission stage after their commit (Reserve, then Reservation.Commit:
// admit.go), and everything else through the due loader (loader.go), which
// leases due deliveries from the store endpoint by endpoint. Background
// services keep the rest true: the health sync (health.go: endpoint health
// merged with the store and the other nodes), the rate keeper (rate.go:
// rate limits' tokens) and, on stores whose leases expire, the lease
// keeper (leases.go).
//
// Bounds: at most Config.FreshWindow deliveries taken from the publish path
// and Config.LoadWindow taken by the loader are held in memory (the loader
// takes at most Config.EndpointWindow per endpoint), and at most
// Config.MaxInFlight attempts run at once. Everything else waits in the
// store. Lanes idle for ten minutes are dropped.
//
// Lock order: the lanes' mutex (scheduler.mu, lanes.go) is a leaf: nothing
// else is locked, and no store, network or blocking channel call is made,
// while it is held; only the scheduler's own methods take it. Catalog.Sync's
// mutex is never taken under it.
package scheduling

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// Store is what the scheduling stage needs of the store.
type Store interface {
	Capabilities() store.Capabilities
	ClaimDue(ctx context.Context, endpointID string, now time.Time, limit int, lease store.Lease) ([]store.Claimed, error)
	DueEndpoints(ctx context.Context) ([]store.EndpointDue, error)
	NextDue(ctx context.Context, endpointID string) (time.Time, bool, error)
	Release(ctx context.Context, deliveryIDs []string, owner string) error
	ExtendLeases(ctx context.Context, deliveryIDs []string, lease store.Lease) ([]string, error)
	GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	EndpointChanges(ctx context.Context, since int64) ([]endpoint.Endpoint, int64, error)
	ModifyEndpoints(ctx context.Context, ids []string, fn func(eps []*endpoint.Endpoint) error) ([]endpoint.Endpoint, error)
	TakeProbe(ctx context.Context, endpointID string, now, hold time.Time) (bool, error)
}

// Subscriptions is the stage's view of the subscriptions: the catalog's
// snapshot, read for a subscription's batch limits.
type Subscriptions interface {
	Get(id string) *catalog.Entry
}

// Attempter makes one attempt: the next stage.
type Attempter interface {
	Attempt(job attempting.Job) attempting.Exchange
}

// Recorder takes outcomes to write: the stage after attempting.
type Recorder interface {
	// Add queues an outcome, waiting for room.
	Add(req recording.Request)
}

// Results are the recording stage's answers: the one way back into this
// stage, read by the finisher (finish.go).
type Results interface {
	Results() <-chan []recording.Result
}

// Notifier hears of circuit transitions. Calls are made outside the
// scheduler's lock and must not block for long.
type Notifier interface {
	// EndpointChanged reports a circuit transition; ep is the endpoint after it.
	EndpointChanged(ep endpoint.Endpoint, tr health.Transition)
}

// Service is the scheduling stage. Create it with New; its lifecycle is
// startstop's (Start, Stop), and its finisher's (Finisher) is stopped after
// the recorder.
type Service struct {
	startstop.Base
	cfg     Config
	caps    store.Capabilities
	log     *slog.Logger
	sched   *scheduler
	run     *runner
	loader  *loader
	health  *healthSync
	keeper  *leaseKeeper
	rate    *rateKeeper
	fin     *Finisher
	workers *workers // the goroutines attempts run on
}

// New returns a scheduling stage that has not started.
func New(cfg Config) *Service {
	cfg.setDefaults(cfg.Store.Capabilities())
	s := &Service{cfg: cfg, caps: cfg.Store.Capabilities(), log: cfg.Logger.With("component", "scheduling"), workers: newWorkers()}
	s.sched = newScheduler(schedConfig{
		FreshWindow: cfg.FreshWindow, LoadWindow: cfg.LoadWindow, EndpointWindow: cfg.EndpointWindow,
		EndpointConcurrency: cfg.EndpointConcurrency, InitialConcurrency: cfg.InitialConcurrency,
		MaxInFlight: cfg.MaxInFlight, Health: cfg.Health,
		Batch: func(id string) (int, int) {
			if sub := cfg.Catalog.Get(id); sub != nil {
				return sub.BatchLimits()
			}
			return 1, 0
		},
	})
	rel := &releaser{store: cfg.Store, owner: cfg.Owner, timeout: cfg.StoreTimeout, log: s.log}
	p := &probes{sched: s.sched, store: cfg.Store, cfg: &s.cfg, log: s.log}
	s.run = &runner{sched: s.sched, attempter: cfg.Attempter, recorder: cfg.Recorder, workers: s.workers, rel: rel, probes: p, clock: cfg.Clock, log: s.log}
	s.loader = newLoader(s.sched, &s.cfg, s.run, rel, p, s.log)
	s.health = newHealthSync(s.sched, &s.cfg, s.run, rel, s.log)
	s.keeper = newLeaseKeeper(s.sched, &s.cfg, s.log)
	s.rate = newRateKeeper(s.sched, &s.cfg, s.run, s.log)
	s.run.loader, s.run.health = s.loader.loop, s.health.loop
	s.health.loader = s.loader.loop
	s.loader.health = s.health.loop
	s.fin = &Finisher{sched: s.sched, results: cfg.Results, rel: rel, loader: s.loader.loop, clock: cfg.Clock}
	return s
}

// Start loads every endpoint's health and starts the background services.
func (s *Service) Start(ctx context.Context) error {
	ctx, shouldStart, started, stopped := s.StartInit(ctx)
	if !shouldStart {
		return nil
	}
	if err := s.health.loadAll(ctx); err != nil {
		stopped()
		return fmt.Errorf("loading endpoint health: %w", err)
	}
	for _, l := range s.Loops() {
		if err := l.Start(ctx); err != nil {
			stopped()
			return err
		}
	}
	started()
	go func() {
		defer stopped()
		<-ctx.Done()
		s.shutdown()
	}()
	return nil
}

// shutdown stops taking new work, waits for the attempts in flight (their
// outcomes are then with the recorder; a hard stop cuts them short: see
// attempting.Attempter.Abandon), gives back every delivery held in memory
// but not yet attempted, and saves endpoint health.
func (s *Service) shutdown() {
	s.sched.stop()
	s.loader.loop.Stop()
	s.keeper.loop.Stop()
	s.rate.loop.Stop()
	s.sched.attempts.Wait()
	s.workers.stop()
	s.health.loop.Stop()
	s.run.rel.release(s.sched.drain())
	s.health.flush()
}

// Loops are the stage's periodic services, which sleep on its clock
// between rounds: the loader, the health sync, the rate keeper (rate.go)
// and, on stores whose leases expire, the lease keeper.
func (s *Service) Loops() []*startstop.Loop {
	loops := []*startstop.Loop{s.loader.loop, s.health.loop, s.rate.loop}
	if s.caps.LeasesExpire {
		loops = append(loops, s.keeper.loop)
	}
	return loops
}

// Finisher is the service that frees the memory places of recorded
// deliveries. Start it before the recorder and stop it after.
func (s *Service) Finisher() *Finisher { return s.fin }

// Released tells the stage that deliveries of an endpoint were made due at
// `at` by an operator (a redeliver or redrive through the API): the loader
// looks for them at once. An operator's action is also the sign that the
// endpoint is fixed: when its circuit is in probation or disabled, the
// first delivery released goes now, as its probe, without waiting for the
// cool-down (a frozen endpoint still waits for Enable).
func (s *Service) Released(ctx context.Context, endpointID string, at time.Time) error {
	err := s.health.probeNow(ctx, endpointID)
	if s.sched.hint(endpointID, at) || err == nil {
		s.loader.loop.Kick()
	}
	return err
}

// Enable re-enables a disabled, frozen or probation endpoint (the API's
// POST /v1/endpoints/{id}/enable): its counters are reset in the store
// before Enable returns, and its backlog flows again on every node.
// store.ErrNotFound when the endpoint does not exist.
func (s *Service) Enable(ctx context.Context, id string) (endpoint.Endpoint, error) {
	return s.health.enable(ctx, id)
}

// Freeze freezes an endpoint by hand (the API's POST
// /v1/endpoints/{id}/freeze): the frozen health is in the store before
// Freeze returns, this node gives back the deliveries it holds for the
// endpoint and starts no attempt there, and every other node does the same
// once it adopts the change (at once when the store announces it,
// HealthChanged; else within a FlushInterval). Attempts in flight finish,
// and their outcomes leave it frozen. Nothing thaws it but Enable: it gets
// no probe. An endpoint already frozen is left as it is.
// store.ErrNotFound when the endpoint does not exist.
func (s *Service) Freeze(ctx context.Context, id string) (endpoint.Endpoint, error) {
	return s.health.freeze(ctx, id)
}

// SetRateLimit sets an endpoint's rate limit (nil: removes it; the
// API's PATCH /v1/endpoints/{id}): it is in the store, at a new endpoint
// version, before SetRateLimit returns and governs this node's lane at
// once; every other node adopts it as it adopts health (at once when the
// store announces it, HealthChanged; else within a FlushInterval). rl must
// be valid (endpoint.RateLimit.Check). store.ErrNotFound when the endpoint
// does not exist.
func (s *Service) SetRateLimit(ctx context.Context, id string, rl *endpoint.RateLimit) (endpoint.Endpoint, error) {
	return s.health.setRateLimit(ctx, id, rl)
}

// HealthChanged tells the stage that the store announced endpoint health
// written by another node: it is adopted at once.
func (s *Service) HealthChanged() { s.health.loop.Kick() }

// Endpoint returns the live view of an endpoint's health (at most about one
// FlushInterval ahead of the store's), with its current concurrency limit
// and attempts in flight. ok is false for an endpoint this node does not
// hold.
func (s *Service) Endpoint(id string) (ep endpoint.Endpoint, limit, inFlight int, ok bool) {
	return s.health.endpoint(id)
}

// Config returns the stage's configuration, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// Stats returns the current counts.
func (s *Service) Stats() Stats { return s.sched.stats() }

// releaser gives deliveries back to the store, unattempted.
type releaser struct {
	store   Store
	owner   string
	timeout time.Duration
	log     *slog.Logger
}

func (r *releaser) release(ids []string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	if err := r.store.Release(ctx, ids, r.owner); err != nil {
		r.log.Warn("releasing deliveries", "count", len(ids), "err", err)
	}
}

// lease returns a lease from now for this node.
func (c *Config) lease(now time.Time) store.Lease {
	return store.Lease{Owner: c.Owner, Until: now.Add(c.Lease)}
}

// storeCtx bounds one store call.
func (c *Config) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.StoreTimeout)
}
