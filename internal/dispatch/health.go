package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/redact"
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
//   - A lane new to this engine (an endpoint first used since the start, or
//     one dropped after ten idle minutes) sends nothing until the round has
//     read its stored health.
//   - A closed circuit's probe is taken with TakeProbe, which only one node
//     wins.

// maxQueuedOutcomes bounds the outcomes a lane keeps for the next merge; past
// it the health sync is kicked, and past twice it the oldest are dropped (the
// local view has them already; the stored counters then lag).
const maxQueuedOutcomes = 10_000

// healthState is the health sync's own state, used by its goroutine only.
type healthState struct {
	version int64 // endpoints version of the last EndpointChanges read
}

// healthRound is one round of the health sync (a loop job).
func (e *Engine) healthRound() time.Duration {
	e.flush()
	e.readUnknown()
	e.adoptChanges()
	if n := e.sched.evictIdle(e.cfg.Clock.Now()); n > 0 {
		e.log.Debug("idle lanes dropped", "count", n)
	}
	return e.cfg.FlushInterval
}

// HealthChanged tells the engine that the store announced endpoint health
// written by another node: it is adopted at once.
func (e *Engine) HealthChanged() { e.health.kick() }

// Endpoint returns the live view of an endpoint's health (at most about one
// FlushInterval ahead of the store's), with its current concurrency limit
// and attempts in flight. ok is false for an endpoint this engine does not
// hold.
func (e *Engine) Endpoint(id string) (ep endpoint.Endpoint, limit, inFlight int, ok bool) {
	s := e.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[id]
	if l == nil || !l.known {
		return endpoint.Endpoint{}, 0, 0, false
	}
	return l.ep, l.limit, l.inFlight, true
}

// Enable re-enables a disabled, frozen or probation endpoint (the API's
// POST /v1/endpoints/{id}/enable): its counters are reset in the store
// before Enable returns, and its backlog flows again on every node.
// store.ErrNotFound when the endpoint does not exist.
func (e *Engine) Enable(ctx context.Context, id string) (endpoint.Endpoint, error) {
	var tr health.Transition
	eps, err := e.cfg.Store.ModifyEndpoints(ctx, []string{id}, func(eps []*endpoint.Endpoint) error {
		for _, ep := range eps {
			tr = e.cfg.Health.Enable(&ep.Health)
			ep.UpdatedAt = e.nextVersion(ep.UpdatedAt)
		}
		return nil
	})
	if err != nil {
		return endpoint.Endpoint{}, err
	}
	if len(eps) == 0 {
		return endpoint.Endpoint{}, store.ErrNotFound
	}
	ep := eps[0]
	s := e.sched
	s.mu.Lock()
	l := s.laneFor(id)
	l.pending = nil
	l.limit = s.cfg.InitialConcurrency
	s.adopt(l, ep, e.cfg.Clock.Now())
	s.mu.Unlock()
	e.loader.kick()
	if tr.Changed() {
		e.report(ep, tr)
	}
	return ep, nil
}

// probeNow opens a probation or disabled endpoint's circuit for a probe at
// once (an operator's action said it is fixed): its stored next probe time
// becomes now, here and, through the store, on every node. Enabled and
// frozen endpoints are left alone.
func (e *Engine) probeNow(ctx context.Context, id string) error {
	now := e.cfg.Clock.Now()
	var changed bool
	eps, err := e.cfg.Store.ModifyEndpoints(ctx, []string{id}, func(eps []*endpoint.Endpoint) error {
		changed = false
		for _, ep := range eps {
			if h := &ep.Health; (h.State == health.Probation || h.State == health.Disabled) && h.NextProbeAt.After(now) {
				h.NextProbeAt = now
				ep.UpdatedAt = e.nextVersion(ep.UpdatedAt)
				changed = true
			}
		}
		return nil
	})
	if err != nil || !changed || len(eps) == 0 {
		return err
	}
	s := e.sched
	s.mu.Lock()
	l := s.laneFor(id)
	// Outcomes queued here are in the stored health once merged; keep
	// them, and take the new probe time.
	s.adopt(l, eps[0], now)
	s.markReady(l)
	starts := s.pump(now, nil)
	s.mu.Unlock()
	e.launch(starts)
	return nil
}

// nextVersion returns the UpdatedAt to write over prev: now, or just after
// prev if the clock has not moved past it, so that every write of an
// endpoint's health has a later UpdatedAt than the one before.
func (e *Engine) nextVersion(prev time.Time) time.Time {
	now := e.cfg.Clock.Now().Truncate(time.Millisecond)
	if !now.After(prev) {
		now = prev.Add(time.Millisecond)
	}
	return now
}

// report tells the log, the metrics and the notifier of a state change
// found in the store.
func (e *Engine) report(ep endpoint.Endpoint, tr health.Transition) {
	e.log.Info("endpoint circuit changed", "endpoint", ep.ID, "url", redact.URL(ep.URL),
		"from", tr.From, "to", tr.To, "reason", tr.Reason)
	e.cfg.Metrics.transition(tr)
	if e.cfg.Notifier != nil {
		e.cfg.Notifier.EndpointChanged(ep, tr)
	}
}

// adopt makes a stored health this lane's view, re-applying the outcomes
// queued since (they are in the next merge), and reacts to a change of
// state the way a local transition does. It returns deliveries to release.
// Caller holds s.mu.
func (s *scheduler) adopt(l *lane, ep endpoint.Endpoint, now time.Time) []string {
	before := l.ep.Health.State
	url, created := l.ep.URL, l.ep.CreatedAt
	l.ep = ep
	if l.ep.URL == "" {
		l.ep.URL = url
	}
	if l.ep.CreatedAt.IsZero() {
		l.ep.CreatedAt = created
	}
	l.known = true
	for _, o := range l.pending {
		s.cfg.Health.Observe(&l.ep.Health, o)
	}
	var released []string
	if after := l.ep.Health.State; after != before {
		released = s.onTransition(l, health.Transition{From: before, To: after}, now)
	}
	s.markReady(l) // a lane waiting for its health may start now
	return released
}

// flush merges every lane's queued outcomes into the stored health. On
// failure the outcomes are queued again for the next try.
func (e *Engine) flush() {
	s := e.sched
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
	ctx, cancel := e.storeCtx()
	defer cancel()
	eps, err := e.cfg.Store.ModifyEndpoints(ctx, ids, func(eps []*endpoint.Endpoint) error {
		changes = changes[:0] // fn may run again if the store retries
		for _, ep := range eps {
			for _, o := range taken[ep.ID] {
				if tr := e.cfg.Health.Observe(&ep.Health, o); tr.Changed() {
					changes = append(changes, change{*ep, tr})
				}
			}
			ep.UpdatedAt = e.nextVersion(ep.UpdatedAt)
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, store.ErrClosed) {
			e.log.Warn("merging endpoint health", "endpoints", len(ids), "err", err)
		}
		s.mu.Lock()
		for id, os := range taken {
			l := s.laneFor(id)
			l.pending = append(os, l.pending...)
		}
		s.mu.Unlock()
		return
	}
	e.adoptAll(eps)
	for _, c := range changes {
		e.report(c.ep, c.tr)
	}
}

// adoptAll adopts stored endpoints into their lanes (creating them), and
// acts on what that changes.
func (e *Engine) adoptAll(eps []endpoint.Endpoint) {
	if len(eps) == 0 {
		return
	}
	s := e.sched
	now := e.cfg.Clock.Now()
	var released []string
	s.mu.Lock()
	for _, ep := range eps {
		released = append(released, s.adopt(s.laneFor(ep.ID), ep, now)...)
	}
	starts := s.pump(now, nil)
	s.mu.Unlock()
	e.launch(starts)
	if len(released) > 0 {
		e.releaseIDs(released)
	}
	e.loader.kick()
}

// readUnknown reads the stored health of lanes that have none yet.
func (e *Engine) readUnknown() {
	s := e.sched
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
		ctx, cancel := e.storeCtx()
		ep, err := e.cfg.Store.GetEndpoint(ctx, id)
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
				e.log.Warn("reading endpoint health", "endpoint", id, "err", err)
			}
			continue
		}
		eps = append(eps, ep)
	}
	e.adoptAll(eps)
}

// adoptChanges adopts stored health written since the version last read,
// for lanes with no outcomes waiting to be merged (those adopt it at their
// merge) and whose view is older.
func (e *Engine) adoptChanges() {
	ctx, cancel := e.storeCtx()
	eps, v, err := e.cfg.Store.EndpointChanges(ctx, e.healthState.version)
	cancel()
	if err != nil {
		if !errors.Is(err, store.ErrClosed) {
			e.log.Warn("reading endpoint health changes", "err", err)
		}
		return
	}
	e.healthState.version = v
	s := e.sched
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
	e.adoptAll(take)
}
