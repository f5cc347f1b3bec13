package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Endpoint health is shared through the store, so that every node sending to
// a URL agrees on its circuit (issue 5):
//
//   - Each lane applies its own attempts' outcomes to its local view at once,
//     so that a 410 or a burst of failures closes the circuit here without
//     waiting, and queues the outcomes.
//   - Every FlushInterval (and at once after a local state change) the
//     flusher merges the queued outcomes into the stored health inside
//     ModifyEndpoints, which locks the endpoint's row: the store's health is
//     the result of every node's outcomes, replayed in the order they were
//     merged. A state change found by that replay is the one reported
//     (operational event, metric), so it is reported once in the cluster.
//   - The same tick reloads every endpoint's stored health and adopts it
//     where it is newer than what this node last saw, so a state change made
//     by another node (or by the API there) governs here within about one
//     FlushInterval.
//   - A closed circuit's probe is taken with TakeProbe, which only one node
//     wins.

// maxQueuedOutcomes bounds the outcomes a lane keeps for the next merge; past
// it the flusher is woken, and past twice it the oldest are dropped (the
// local view has them already; the stored counters then lag).
const maxQueuedOutcomes = 10_000

// Endpoint returns the live view of an endpoint's health (at most about one
// FlushInterval ahead of the store's), with its current concurrency limit
// and attempts in flight. ok is false for an endpoint this engine has not seen.
func (e *Engine) Endpoint(id string) (ep store.Endpoint, limit, inFlight int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.lanes[id]
	if l == nil || !l.known {
		return store.Endpoint{}, 0, 0, false
	}
	return l.ep, l.limit, l.inFlight, true
}

// Enable re-enables a disabled, frozen or probation endpoint (the API's
// POST /v1/endpoints/{id}/enable): its counters are reset in the store
// before Enable returns, and its backlog flows again on every node.
// store.ErrNotFound when the endpoint does not exist.
func (e *Engine) Enable(ctx context.Context, id string) (store.Endpoint, error) {
	var tr health.Transition
	eps, err := e.cfg.Store.ModifyEndpoints(ctx, []string{id}, func(eps []*store.Endpoint) error {
		for _, ep := range eps {
			tr = e.cfg.Health.Enable(&ep.Health)
			ep.UpdatedAt = e.nextVersion(ep.UpdatedAt)
		}
		return nil
	})
	if err != nil {
		return store.Endpoint{}, err
	}
	if len(eps) == 0 {
		return store.Endpoint{}, store.ErrNotFound
	}
	ep := eps[0]
	e.mu.Lock()
	l := e.laneFor(id)
	l.pending = nil
	l.limit = e.cfg.InitialConcurrency
	e.adopt(l, ep)
	e.mu.Unlock()
	if tr.Changed() {
		e.report(ep, tr)
	}
	return ep, nil
}

// nextVersion returns the UpdatedAt to write over prev: now, or just after
// prev if the clock has not moved past it, so that every write of an
// endpoint's health has a later UpdatedAt than the one before (nodes use it
// to tell a newer stored health from the one they have).
func (e *Engine) nextVersion(prev time.Time) time.Time {
	now := e.cfg.Clock.Now().Truncate(time.Millisecond)
	if !now.After(prev) {
		now = prev.Add(time.Millisecond)
	}
	return now
}

// report tells the notifier and the metrics of a state change found in the
// store.
func (e *Engine) report(ep store.Endpoint, tr health.Transition) {
	e.cfg.Metrics.transition(tr)
	if e.cfg.Notifier != nil {
		e.cfg.Notifier.EndpointChanged(ep, tr)
	}
}

// adopt makes a stored health this lane's view, re-applying the outcomes
// queued since (they are in the next merge), and reacts to a change of
// state the way a local transition does. Caller holds e.mu.
func (e *Engine) adopt(l *lane, ep store.Endpoint) []string {
	before := l.ep.Health.State
	url, created := l.ep.URL, l.ep.CreatedAt
	l.ep = ep
	if l.ep.URL == "" {
		l.ep.URL = url
	}
	if l.ep.CreatedAt.IsZero() {
		l.ep.CreatedAt = created
	}
	l.synced = ep.UpdatedAt
	wasKnown := l.known
	l.known = true
	for _, o := range l.pending {
		e.cfg.Health.Observe(&l.ep.Health, o)
	}
	if after := l.ep.Health.State; after != before {
		return e.onTransition(l, health.Transition{From: before, To: after}, e.cfg.Clock.Now())
	}
	if !wasKnown {
		e.wake() // deliveries held back until now may go
	}
	return nil
}

// flushSoon wakes the health flusher.
func (e *Engine) flushSoon() {
	select {
	case e.flushKick <- struct{}{}:
	default:
	}
}

// flusher merges queued outcomes into the store and adopts other nodes'
// changes every FlushInterval, and at once when woken, until the engine
// stops.
func (e *Engine) flusher() {
	defer close(e.flusherDone)
	for {
		t := e.cfg.Clock.NewTimer(e.cfg.FlushInterval)
		select {
		case <-t.C():
		case <-e.flushKick:
			t.Stop()
		}
		e.flush()
		if e.cfg.Shared {
			e.sync()
		}
		e.mu.Lock()
		stopping := e.stopping
		e.mu.Unlock()
		if stopping {
			return
		}
	}
}

// flush merges every lane's queued outcomes into the stored health. On
// failure the outcomes are queued again for the next try.
func (e *Engine) flush() {
	e.mu.Lock()
	taken := map[string][]health.Outcome{}
	var ids []string
	for id, l := range e.lanes {
		if len(l.pending) > 0 {
			taken[id] = l.pending
			ids = append(ids, id)
			l.pending = nil
		}
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	type change struct {
		ep store.Endpoint
		tr health.Transition
	}
	var changes []change
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eps, err := e.cfg.Store.ModifyEndpoints(ctx, ids, func(eps []*store.Endpoint) error {
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
			e.cfg.Logger.Warn("merging endpoint health", "endpoints", len(ids), "err", err)
		}
		e.mu.Lock()
		for id, os := range taken {
			l := e.laneFor(id)
			l.pending = append(os, l.pending...)
		}
		e.mu.Unlock()
		return
	}
	var released []string
	e.mu.Lock()
	for _, ep := range eps {
		released = append(released, e.adopt(e.laneFor(ep.ID), ep)...)
	}
	e.mu.Unlock()
	if len(released) > 0 {
		e.releaseIDs(released)
	}
	for _, c := range changes {
		e.report(c.ep, c.tr)
	}
}

// sync adopts stored health written by other nodes since this node last saw
// it, for lanes with no outcomes waiting to be merged.
func (e *Engine) sync() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eps, err := e.cfg.Store.AllEndpoints(ctx)
	if err != nil {
		if !errors.Is(err, store.ErrClosed) {
			e.cfg.Logger.Warn("reading endpoint health", "err", err)
		}
		return
	}
	var released []string
	e.mu.Lock()
	for _, ep := range eps {
		l := e.laneFor(ep.ID)
		if !l.known || len(l.pending) == 0 && ep.UpdatedAt.After(l.synced) {
			released = append(released, e.adopt(l, ep)...)
		}
	}
	e.mu.Unlock()
	if len(released) > 0 {
		e.releaseIDs(released)
	}
}
