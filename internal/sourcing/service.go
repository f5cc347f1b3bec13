// Package sourcing runs the consumers of the broker sources
// (internal/source, docs/sources.md): each source's consumer runs on the
// one node that holds its lease, reads its broker's messages, publishes
// them through admission and acknowledges them only once they are
// committed.
//
// The Service is one startstop.Loop: every Period (and at once when
// kicked after a change on this node) it reads every source, takes or
// renews the lease of each that is not paused (TryLead, role
// store.SourceLeaderRole, for Term), and starts, restarts (a new revision)
// or stops consumers to match. A consumer whose lease could not be
// renewed stops when it runs out, so that two nodes never both consume a
// source for longer than the clocks' disagreement.
package sourcing

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/testsignal"
)

// Store is what the consumers need of the store.
type Store interface {
	AllSources(ctx context.Context) ([]source.Source, error)
	TryLead(ctx context.Context, name, owner string, now, until time.Time) (bool, error)
	ReportSource(ctx context.Context, id string, r source.Report) error
	AddSourceDeadLetter(ctx context.Context, dl source.DeadLetter) error
}

// Publisher is the publish path (admission.Publisher).
type Publisher interface {
	Publish(ctx context.Context, accountID string, evs []event.Event) ([]admission.Result, error)
}

// Defaults of Config.
const (
	// DefaultPeriod is how often a node looks at the sources and renews
	// its leases.
	DefaultPeriod = 5 * time.Second
	// DefaultTerm is a lease's length: a node that dies loses its sources
	// this long after its last renewal at most.
	DefaultTerm = 15 * time.Second
	// DefaultMaxInFlight bounds the messages one consumer holds
	// unacknowledged (JetStream MaxAckPending, AMQP prefetch, MQTT receive
	// maximum, Kafka records per poll), and so one publish call's events.
	DefaultMaxInFlight = 100
	// callTimeout bounds each store call and each publish.
	callTimeout = 30 * time.Second
	// dialTimeout bounds a consumer's connection to its broker.
	dialTimeout = 10 * time.Second
)

// Config configures a Service.
type Config struct {
	Store     Store
	Publisher Publisher
	Clock     clock.Clock
	Logger    *slog.Logger
	// Owner names this node in the leases (scheduling.Config.Owner).
	Owner string
	// Destinations judges every connection to a broker
	// (destination.Dialer).
	Destinations destination.Guard
	// Period, Term and MaxInFlight: zero takes the defaults above.
	Period      time.Duration
	Term        time.Duration
	MaxInFlight int
	// TestSignals, when set (tests only, initialized before Start), are
	// what the service tells tests.
	TestSignals *TestSignals
}

// TestSignals are what the service tells tests: the id of a source whose
// consumer started on this node, connected to its broker (subscribed),
// stopped (its goroutine ended), or whose broker-side state was forgotten
// after its deletion.
type TestSignals struct {
	Started   testsignal.Signal[string]
	Connected testsignal.Signal[string]
	Stopped   testsignal.Signal[string]
	// Forgotten: a deleted source's state at its broker was removed (or
	// its removal failed, logged): see forgetters.
	Forgotten testsignal.Signal[string]
}

// Service runs this node's consumers. Its Loop is what tests watch.
type Service struct {
	cfg  Config
	loop *startstop.Loop

	mu   sync.Mutex
	runs map[string]*run // by source id
	// forgets are the forget calls running (Stop waits for them); stopped:
	// Stop has begun (s.mu), no forget starts after.
	forgets sync.WaitGroup
	stopped bool

	// deletedMu guards deleted: the paused sources deleted on this node
	// that the next round forgets (Deleted; drained by every round).
	deletedMu sync.Mutex
	deleted   []source.Source
}

// run is one consumer running.
type run struct {
	src    source.Source
	rev    int64
	until  time.Time // the lease's end as last taken
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a service that has not started.
func New(cfg Config) *Service {
	cfg.Period = cmp.Or(cfg.Period, DefaultPeriod)
	cfg.Term = cmp.Or(cfg.Term, DefaultTerm)
	cfg.MaxInFlight = cmp.Or(cfg.MaxInFlight, DefaultMaxInFlight)
	if cfg.TestSignals == nil {
		cfg.TestSignals = &TestSignals{} // off
	}
	s := &Service{cfg: cfg, runs: map[string]*run{}}
	s.loop = startstop.NewLoop("sources", cfg.Clock, s.round)
	return s
}

// Start starts the loop; its first round runs at once.
func (s *Service) Start(ctx context.Context) error { return s.loop.Start(ctx) }

// Started is closed once the service runs.
func (s *Service) Started() <-chan struct{} { return s.loop.Started() }

// Stopped is closed once the loop has stopped.
func (s *Service) Stopped() <-chan struct{} { return s.loop.Stopped() }

// Stop stops the loop and every consumer; messages read and not yet
// committed stay unacknowledged (the broker delivers them again).
func (s *Service) Stop() {
	s.loop.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for id := range s.runs {
		s.stopRun(id)
	}
	s.forgets.Wait()
}

// Kick makes the service look at the sources as soon as it can (after a
// change made on this node).
func (s *Service) Kick() { s.loop.Kick() }

// Loops returns the service's loop (tests read its signals).
func (s *Service) Loops() []*startstop.Loop { return []*startstop.Loop{s.loop} }

// round matches the running consumers to the sources and the leases.
func (s *Service) round(ctx context.Context) time.Duration {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	srcs, err := s.cfg.Store.AllSources(sctx)
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetDeleted(ctx)
	if err != nil {
		s.cfg.Logger.Warn("reading the sources", "err", err)
		s.stopExpired(now)
		return s.cfg.Period
	}
	seen := make(map[string]bool, len(srcs))
	for _, src := range srcs {
		seen[src.ID] = true
		if src.Paused {
			s.stopRun(src.ID)
			continue
		}
		s.lead(ctx, sctx, src, now)
	}
	for id, r := range s.runs {
		if !seen[id] {
			s.stopRun(id) // deleted
			s.forget(ctx, r.src)
		}
	}
	return s.cfg.Period
}

// lead takes or renews src's lease and starts, restarts or stops its
// consumer to match (s.mu held).
func (s *Service) lead(ctx, sctx context.Context, src source.Source, now time.Time) {
	until := now.Add(s.cfg.Term)
	won, err := s.cfg.Store.TryLead(sctx, store.SourceLeaderRole(src.ID), s.cfg.Owner, now, until)
	r := s.runs[src.ID]
	switch {
	case err != nil:
		s.cfg.Logger.Warn("renewing a source's lease", "source", src.ID, "err", err)
		if r != nil && !now.Before(r.until) {
			s.stopRun(src.ID)
		}
		return
	case !won:
		s.stopRun(src.ID) // another node's
		return
	case r != nil && r.rev == src.Revision:
		r.until = until
		return
	}
	s.stopRun(src.ID)
	rctx, cancel := context.WithCancel(ctx)
	r = &run{src: src, rev: src.Revision, until: until, cancel: cancel, done: make(chan struct{})}
	s.runs[src.ID] = r
	c := newConsumer(s, src)
	s.cfg.TestSignals.Started.Signal(src.ID)
	go func() {
		defer close(r.done)
		c.run(rctx)
	}()
}

// forgetters remove the state a deleted source leaves at its broker:
// NATS's durable consumer when Herald named it, MQTT's persistent session.
// AMQP keeps none of Herald's (the queue is the user's); Kafka keeps the
// consumer group's committed offsets, which the broker expires itself
// (offsets.retention.minutes).
var forgetters = map[string]func(ctx context.Context, c *consumer) error{
	source.TypeNATS: forgetNATS,
	source.TypeMQTT: forgetMQTT,
}

// Deleted is told of a source deleted on this node (control.Sources),
// as it was just before. A paused source has no consumer, so no round
// would forget it: this node's next round (kicked now) does, unless its
// consumer still runs here (the pause not yet seen: the round stops it
// and forgets it as any deleted source's). A node whose consumer of it
// had not yet seen the pause forgets it too once it stops it (forgetting
// twice does no harm). A source deleted while running but with no node
// holding its lease is not forgotten: docs/sources.md says what it
// leaves.
func (s *Service) Deleted(src source.Source) {
	if !src.Paused {
		return
	}
	s.deletedMu.Lock()
	s.deleted = append(s.deleted, src)
	s.deletedMu.Unlock()
	s.loop.Kick()
}

// forgetDeleted forgets the paused sources Deleted was told of that have
// no consumer on this node (s.mu held).
func (s *Service) forgetDeleted(ctx context.Context) {
	s.deletedMu.Lock()
	deleted := s.deleted
	s.deleted = nil
	s.deletedMu.Unlock()
	for _, src := range deleted {
		if s.runs[src.ID] == nil {
			s.forget(ctx, src)
		}
	}
}

// forget removes a deleted source's state at its broker, in the
// background and within dialTimeout (s.mu held): once its consumer
// stopped on this node (the node that held its lease), or when it was
// deleted paused on this node (Deleted, forgetDeleted); a failure is
// logged. Once Stop
// has begun nothing is forgotten.
func (s *Service) forget(ctx context.Context, src source.Source) {
	f := forgetters[src.Type]
	if s.stopped {
		return
	}
	if f == nil {
		s.cfg.TestSignals.Forgotten.Signal(src.ID)
		return
	}
	s.forgets.Add(1)
	go func() {
		defer s.forgets.Done()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dialTimeout)
		defer cancel()
		if err := f(fctx, newConsumer(s, src)); err != nil {
			s.cfg.Logger.Warn("forgetting a deleted source at its broker", "source", src.ID, "type", src.Type, "err", redact.Error(err))
		}
		s.cfg.TestSignals.Forgotten.Signal(src.ID)
	}()
}

// stopExpired stops the consumers whose lease ran out (s.mu held).
func (s *Service) stopExpired(now time.Time) {
	for id, r := range s.runs {
		if !now.Before(r.until) {
			s.stopRun(id)
		}
	}
}

// stopRun stops source id's consumer, if it runs, and waits for it (s.mu
// held).
func (s *Service) stopRun(id string) {
	r := s.runs[id]
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
	delete(s.runs, id)
	s.cfg.TestSignals.Stopped.Signal(id)
}
