// Package pipeline wires the delivery path's four stages in order —
// admission (publish → durable commit), scheduling (lanes, fairness,
// concurrency, circuit gates), attempting (encode, sign, send, decide) and
// recording (group commit of outcomes) — and starts and stops them
// together. No stage calls an earlier one: the scheduler's worker hands an
// attempt to the attempting stage and what it returns (the outcomes) to the
// recording stage, and the one way back is the recorder's Results channel,
// which the scheduler's finisher reads to free memory places. docs/architecture.md follows one event through them.
package pipeline

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/tracing"
)

// Store is what the stages need of the store together.
type Store interface {
	admission.Store
	scheduling.Store
	recording.Store
}

// Notifier hears what operators may want to know from every stage
// (opevents.Publisher implements it).
type Notifier interface {
	scheduling.Notifier
	recording.Notifier
}

// Config configures a Pipeline. Scheduling and Attempting hold each
// stage's own settings (their defaults are theirs); the fields above them
// are given to every stage.
type Config struct {
	Store    Store
	Catalog  *catalog.Catalog
	Clock    clock.Clock           // default clock.Real{}
	Logger   *slog.Logger          // default discards
	Registry prometheus.Registerer // nil: a private registry
	Notifier Notifier              // optional
	// MaxFanout bounds the deliveries one publish may create (see
	// admission.Publisher.MaxFanout; 0: no bound).
	MaxFanout int
	// MaxMatchWork bounds the filter tests matching one publish may cost
	// (see admission.Publisher.MaxMatchWork; 0: no bound).
	MaxMatchWork int
	// Tracer, when tracing is on (nil: off), is given to admission and
	// attempting: publish and attempt spans (internal/tracing).
	Tracer     *tracing.Tracer
	Scheduling scheduling.Config
	Attempting attempting.Config
}

// Pipeline is the delivery path of one process, a startstop.Service.
type Pipeline struct {
	startstop.Base
	Admission *admission.Publisher
	Scheduler *scheduling.Service
	Attempter *attempting.Attempter
	Recorder  *recording.Recorder
	// Finished counts the deliveries that reach a final status
	// (herald_deliveries_finished_total): the recorder's outcomes, and
	// what the other ways of finishing one report to it (queue.New).
	Finished *recording.Metrics
}

// New wires the stages; nothing runs until Start.
func New(cfg Config) *Pipeline {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	sc, ac := cfg.Scheduling, cfg.Attempting
	if sc.StoreTimeout <= 0 {
		sc.StoreTimeout = scheduling.DefaultConfig().StoreTimeout
	}
	ac.StoreTimeout = sc.StoreTimeout
	sc.Store, sc.Catalog, sc.Clock, sc.Logger = cfg.Store, cfg.Catalog, cfg.Clock, cfg.Logger
	if sc.Owner == "" {
		sc.Owner = scheduling.DefaultOwner()
	}
	finished := recording.NewMetrics(cfg.Registry)
	rc := recording.Config{Store: cfg.Store, Catalog: cfg.Catalog, Clock: cfg.Clock, Logger: cfg.Logger,
		Metrics: finished, StoreTimeout: sc.StoreTimeout}
	if cfg.Notifier != nil {
		sc.Notifier, rc.Notifier = cfg.Notifier, cfg.Notifier
	}
	rec := recording.New(rc)
	ac.Catalog, ac.Clock, ac.Logger, ac.Owner = cfg.Catalog, cfg.Clock, cfg.Logger, sc.Owner
	ac.Metrics, ac.Tracer = attempting.NewMetrics(cfg.Registry), cfg.Tracer
	if ac.MaxIdleConns == 0 {
		ac.MaxIdleConns = sc.MaxInFlight
	}
	att := attempting.New(ac)
	sc.Attempter, sc.Recorder, sc.Results = att, rec, rec
	sc.Metrics = scheduling.NewMetrics(cfg.Registry)
	sched := scheduling.New(sc)
	cfg.Registry.MustRegister(sched.Collector())
	// Heavy matching takes turns on fewer cores than the process has
	// (filter.NewGate's default), so light publishes always find one.
	pub := &admission.Publisher{Store: cfg.Store, Catalog: cfg.Catalog, Scheduler: sched, Clock: cfg.Clock, MaxFanout: cfg.MaxFanout,
		MaxMatchWork: cfg.MaxMatchWork, Gate: filter.NewGate(0), Tracer: cfg.Tracer}
	return &Pipeline{Admission: pub, Scheduler: sched, Attempter: att, Recorder: rec, Finished: finished}
}

// Start starts the stages from the last to the first: the finisher, the
// recorder, then the scheduler (which loads endpoint health and begins
// loading due deliveries). Cancelling ctx stops them as Stop does.
func (p *Pipeline) Start(ctx context.Context) error {
	ctx, shouldStart, started, stopped := p.StartInit(ctx)
	if !shouldStart {
		return nil
	}
	if err := p.startStages(ctx); err != nil {
		p.stopStages()
		stopped()
		return err
	}
	go func() {
		defer stopped()
		started()
		<-ctx.Done()
		p.stopStages()
	}()
	return nil
}

func (p *Pipeline) startStages(ctx context.Context) error {
	if err := p.Scheduler.Finisher().Start(ctx); err != nil {
		return err
	}
	if err := p.Recorder.Start(ctx); err != nil {
		return err
	}
	return p.Scheduler.Start(ctx)
}

// Stop stops the stages in order: the scheduler first (it starts nothing
// more, waits for the attempts in flight — Abandon cuts them short — and
// gives back what it held unattempted), then the recorder once every
// outcome is written (or, after Abandon, given up), then the finisher once
// it has freed every place. Stop without Start stops what New made.
func (p *Pipeline) Stop() {
	p.Base.Stop()
	p.stopStages() // when it never started; else they have stopped
}

func (p *Pipeline) stopStages() {
	p.Scheduler.Stop()
	p.Recorder.Stop()
	p.Scheduler.Finisher().Stop()
	p.Attempter.CloseBrokers() // no attempt runs any more
}

// Loops are the pipeline's periodic services (the scheduler's).
func (p *Pipeline) Loops() []*startstop.Loop { return p.Scheduler.Loops() }

// Abandon is the hard stop: attempts in flight are cut short (their
// deliveries given back, to be attempted again) and outcome writes that
// keep failing are given up. Call it when a graceful Stop runs out of time.
func (p *Pipeline) Abandon() {
	p.Attempter.Abandon()
	p.Recorder.GiveUp()
}
