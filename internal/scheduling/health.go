package scheduling

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// Endpoint health is shared through the store, so that every node sending to
// a URL agrees on its circuit:
//
//   - Each lane applies its own attempts' outcomes to its local view at once,
//     so that a 410 or a burst of failures closes the circuit here without
//     waiting, and queues the outcomes.
//   - Every FlushInterval (and at once after a local state change) the
//     health sync merges the queued outcomes into the stored health inside
//     ModifyEndpoints, which locks the endpoint's row: the store's health is
//     the result of every node's outcomes, replayed in the order they were
//     merged. A state change found by that replay is the one reported
//     (operational event, metric, log), so it is reported once in the
//     cluster.
//   - The same round reads the endpoints whose stored health changed since
//     the version it last read (EndpointChanges) and adopts them, so a
//     change made by another node (or by the API there) governs here at
//     once when the store announces it (HealthChanged) and within a
//     FlushInterval otherwise. On a store of its own this finds the rows
//     made anew: an endpoint deleted with its last subscription and
//     subscribed again starts from fresh health, here too.
//   - A lane new to this node (an endpoint first used since the start, or
//     one dropped after ten idle minutes) sends nothing until the round has
//     read its stored health.
//   - A closed circuit's probe is taken with TakeProbe, which only one node
//     wins.

// maxQueuedOutcomes bounds the outcomes a lane keeps for the next merge; past
// it the health sync is kicked, and past twice it the oldest are dropped (the
// local view has them already; the stored counters then lag).
const maxQueuedOutcomes = 10_000

// healthSync is the health sync's state and work.
type healthSync struct {
	loop     *startstop.Loop
	sched    *scheduler
	cfg      *Config
	run      *runner
	rel      *releaser
	log      *slog.Logger
	loader   *startstop.Loop // kicked when adopted health lets work through
	reported *Metrics

	version int64 // endpoints version of the last EndpointChanges read; the loop's goroutine's
}

func newHealthSync(s *scheduler, cfg *Config, run *runner, rel *releaser, log *slog.Logger) *healthSync {
	hs := &healthSync{sched: s, cfg: cfg, run: run, rel: rel, log: log, reported: cfg.Metrics}
	hs.loop = startstop.NewLoop("health", cfg.Clock, hs.round)
	return hs
}

// round is one round of the health sync.
func (hs *healthSync) round(context.Context) time.Duration {
	hs.flush()
	hs.readUnknown()
	hs.adoptChanges()
	if n := hs.sched.evictIdle(hs.cfg.Clock.Now()); n > 0 {
		hs.log.Debug("idle lanes dropped", "count", n)
	}
	return hs.cfg.FlushInterval
}

// loadAll adopts every endpoint's stored health (at Start, before the
// loop runs).
func (hs *healthSync) loadAll(ctx context.Context) error {
	eps, v, err := hs.cfg.Store.EndpointChanges(ctx, 0)
	if err != nil {
		return err
	}
	hs.version = v
	s := hs.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ep := range eps {
		s.adopt(s.laneFor(ep.ID), ep, hs.cfg.Clock.Now())
	}
	return nil
}

// endpoint returns the lanes' view of an endpoint (see Service.Endpoint).
func (hs *healthSync) endpoint(id string) (ep endpoint.Endpoint, limit, inFlight int, ok bool) {
	s := hs.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[id]
	if l == nil || !l.known {
		return endpoint.Endpoint{}, 0, 0, false
	}
	return l.ep, l.limit, l.inFlight, true
}

// modifyOne applies an operator's change to one endpoint's stored health
// (ModifyEndpoints) and returns the endpoint as written and the change's
// transition. store.ErrNotFound when the endpoint does not exist.
func (hs *healthSync) modifyOne(ctx context.Context, id string, change func(*endpoint.Endpoint) health.Transition) (endpoint.Endpoint, health.Transition, error) {
	var tr health.Transition
	eps, err := hs.cfg.Store.ModifyEndpoints(ctx, []string{id}, func(eps []*endpoint.Endpoint) error {
		tr = health.Transition{}
		for _, ep := range eps {
			tr = change(ep)
		}
		return nil
	})
	if err != nil {
		return endpoint.Endpoint{}, tr, err
	}
	if len(eps) == 0 {
		return endpoint.Endpoint{}, tr, store.ErrNotFound
	}
	return eps[0], tr, nil
}

// enable is Service.Enable.
func (hs *healthSync) enable(ctx context.Context, id string) (endpoint.Endpoint, error) {
	ep, tr, err := hs.modifyOne(ctx, id, func(ep *endpoint.Endpoint) health.Transition {
		ep.UpdatedAt = hs.nextVersion(ep.UpdatedAt)
		return hs.cfg.Health.Enable(&ep.Health)
	})
	if err != nil {
		return endpoint.Endpoint{}, err
	}
	s := hs.sched
	s.mu.Lock()
	l := s.laneFor(id)
	l.pending = nil
	l.limit = s.cfg.InitialConcurrency
	s.adopt(l, ep, hs.cfg.Clock.Now())
	s.mu.Unlock()
	hs.loader.Kick()
	if tr.Changed() {
		hs.report(ep, tr)
	}
	return ep, nil
}

// freeze is Service.Freeze.
func (hs *healthSync) freeze(ctx context.Context, id string) (endpoint.Endpoint, error) {
	now := hs.cfg.Clock.Now()
	ep, tr, err := hs.modifyOne(ctx, id, func(ep *endpoint.Endpoint) health.Transition {
		tr := hs.cfg.Health.Freeze(&ep.Health, now)
		if tr.Changed() {
			ep.UpdatedAt = hs.nextVersion(ep.UpdatedAt)
		}
		return tr
	})
	if err != nil {
		return endpoint.Endpoint{}, err
	}
	// Adopted like a merge's result: the lane gives back what it holds
	// (onTransition) and keeps its queued outcomes, which leave the stored
	// health frozen when merged.
	hs.adoptAll([]endpoint.Endpoint{ep})
	if tr.Changed() {
		hs.report(ep, tr)
	}
	return ep, nil
}

// probeNow opens a probation or disabled endpoint's circuit for a probe at
// once (an operator's action said it is fixed): its stored next probe time
// becomes now, here and, through the store, on every node. Enabled and
// frozen endpoints are left alone.
func (hs *healthSync) probeNow(ctx context.Context, id string) error {
	now := hs.cfg.Clock.Now()
	var changed bool
	eps, err := hs.cfg.Store.ModifyEndpoints(ctx, []string{id}, func(eps []*endpoint.Endpoint) error {
		changed = false
		for _, ep := range eps {
			if h := &ep.Health; (h.State == health.Probation || h.State == health.Disabled) && h.NextProbeAt.After(now) {
				h.NextProbeAt = now
				ep.UpdatedAt = hs.nextVersion(ep.UpdatedAt)
				changed = true
			}
		}
		return nil
	})
	if err != nil || !changed || len(eps) == 0 {
		return err
	}
	s := hs.sched
	s.mu.Lock()
	l := s.laneFor(id)
	// Outcomes queued here are in the stored health once merged; keep
	// them, and take the new probe time.
	s.adopt(l, eps[0], now)
	s.markReady(l)
	starts := s.pump(now, nil)
	s.mu.Unlock()
	hs.run.launch(starts)
	return nil
}

// nextVersion returns the UpdatedAt to write over prev: now, or just after
// prev if the clock has not moved past it, so that every write of an
// endpoint's health has a later UpdatedAt than the one before.
func (hs *healthSync) nextVersion(prev time.Time) time.Time {
	now := hs.cfg.Clock.Now().Truncate(time.Millisecond)
	if !now.After(prev) {
		now = prev.Add(time.Millisecond)
	}
	return now
}

// report tells the log, the metrics and the notifier of a state change
// found in the store: the only line of it in the cluster's logs, at warn
// when the circuit closes (or narrows), at info when it is enabled again.
func (hs *healthSync) report(ep endpoint.Endpoint, tr health.Transition) {
	level := slog.LevelWarn
	if tr.To == health.Enabled {
		level = slog.LevelInfo
	}
	hs.log.Log(context.Background(), level, "endpoint circuit changed", "endpoint_id", ep.ID, "url", redact.URL(ep.URL),
		"from", tr.From, "to", tr.To, "reason", tr.Reason, "consecutive_failures", ep.Health.ConsecutiveFailures)
	hs.reported.transition(tr)
	if hs.cfg.Notifier != nil {
		hs.cfg.Notifier.EndpointChanged(ep, tr)
	}
}

// flush merges every lane's queued outcomes into the stored health. On
// failure the outcomes are queued again for the next try.
func (hs *healthSync) flush() {
	s := hs.sched
	s.mu.Lock()
	taken := map[string][]health.Outcome{}
	var ids []string
	for id, l := range s.lanes {
		if len(l.pending) > 0 {
			taken[id] = l.pending
			ids = append(ids, id)
			l.pending = nil
		}
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	type change struct {
		ep endpoint.Endpoint
		tr health.Transition
	}
	var changes []change
	ctx, cancel := hs.cfg.storeCtx()
	defer cancel()
	eps, err := hs.cfg.Store.ModifyEndpoints(ctx, ids, func(eps []*endpoint.Endpoint) error {
		changes = changes[:0] // fn may run again if the store retries
		for _, ep := range eps {
			for _, o := range taken[ep.ID] {
				if tr := hs.cfg.Health.Observe(&ep.Health, o); tr.Changed() {
					changes = append(changes, change{*ep, tr})
				}
			}
			ep.UpdatedAt = hs.nextVersion(ep.UpdatedAt)
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, store.ErrClosed) {
			hs.log.Warn("merging endpoint health", "endpoints", len(ids), "err", err)
		}
		s.mu.Lock()
		for id, os := range taken {
			l := s.laneFor(id)
			l.pending = append(os, l.pending...)
		}
		s.mu.Unlock()
		return
	}
	hs.adoptAll(eps)
	for _, c := range changes {
		hs.report(c.ep, c.tr)
	}
}

// adoptAll adopts stored endpoints into their lanes (creating them), and
// acts on what that changes.
func (hs *healthSync) adoptAll(eps []endpoint.Endpoint) {
	if len(eps) == 0 {
		return
	}
	s := hs.sched
	now := hs.cfg.Clock.Now()
	var released []string
	s.mu.Lock()
	for _, ep := range eps {
		released = append(released, s.adopt(s.laneFor(ep.ID), ep, now)...)
	}
	starts := s.pump(now, nil)
	s.mu.Unlock()
	hs.run.launch(starts)
	hs.rel.release(released)
	hs.loader.Kick()
}

// readUnknown reads the stored health of lanes that have none yet.
func (hs *healthSync) readUnknown() {
	s := hs.sched
	s.mu.Lock()
	var ids []string
	for id, l := range s.lanes {
		if !l.known {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	var eps []endpoint.Endpoint
	for _, id := range ids {
		ctx, cancel := hs.cfg.storeCtx()
		ep, err := hs.cfg.Store.GetEndpoint(ctx, id)
		cancel()
		switch {
		case errors.Is(err, store.ErrNotFound):
			// The endpoint row is deleted with the last subscription
			// using it; a delivery of it held here (its subscription
			// deleted meanwhile) must not wait for ever: fresh health.
			ep = endpoint.Endpoint{ID: id}
			ep.Health.State = health.Enabled
		case err != nil:
			if !errors.Is(err, store.ErrClosed) {
				hs.log.Warn("reading endpoint health", "endpoint_id", id, "err", err)
			}
			continue
		}
		eps = append(eps, ep)
	}
	hs.adoptAll(eps)
}

// adoptChanges adopts stored health written since the version last read,
// for lanes with no outcomes waiting to be merged (those adopt it at their
// merge) and whose view is older.
func (hs *healthSync) adoptChanges() {
	ctx, cancel := hs.cfg.storeCtx()
	eps, v, err := hs.cfg.Store.EndpointChanges(ctx, hs.version)
	cancel()
	if err != nil {
		if !errors.Is(err, store.ErrClosed) {
			hs.log.Warn("reading endpoint health changes", "err", err)
		}
		return
	}
	hs.version = v
	s := hs.sched
	s.mu.Lock()
	var take []endpoint.Endpoint
	for _, ep := range eps {
		l := s.lanes[ep.ID]
		if l == nil {
			continue // read when first used
		}
		if !l.known || len(l.pending) == 0 && ep.Version > l.ep.Version {
			take = append(take, ep)
		}
	}
	s.mu.Unlock()
	hs.adoptAll(take)
}
