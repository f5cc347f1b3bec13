package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Endpoint returns the live view of an endpoint's health (fresher than the
// store's, which is saved every FlushInterval), with its current
// concurrency limit and attempts in flight. ok is false for an endpoint
// this engine has not seen.
func (e *Engine) Endpoint(id string) (ep store.Endpoint, limit, inFlight int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.lanes[id]
	if l == nil {
		return store.Endpoint{}, 0, 0, false
	}
	return l.ep, l.limit, l.inFlight, true
}

// Enable re-enables a disabled or frozen endpoint (the API's
// POST /v1/endpoints/{id}/enable): its counters are reset, the change is
// saved before Enable returns, and its backlog flows again.
// store.ErrNotFound when the endpoint does not exist.
func (e *Engine) Enable(ctx context.Context, id string) (store.Endpoint, error) {
	e.mu.Lock()
	_, known := e.lanes[id]
	e.mu.Unlock()
	if !known {
		ep, err := e.cfg.Store.GetEndpoint(ctx, id)
		if err != nil {
			return store.Endpoint{}, err
		}
		e.mu.Lock()
		if _, known = e.lanes[id]; !known {
			e.laneFor(id).ep = ep
		}
		e.mu.Unlock()
	}
	now := e.cfg.Clock.Now()
	e.mu.Lock()
	l := e.laneFor(id)
	tr := e.cfg.Health.Enable(&l.ep.Health)
	l.ep.UpdatedAt = now
	l.limit = e.cfg.InitialConcurrency
	snap := l.ep
	if tr.Changed() {
		e.cfg.Metrics.transition(tr)
		e.onTransition(l, tr, now)
	}
	e.mu.Unlock()
	if err := e.cfg.Store.SaveHealth(ctx, []store.Endpoint{snap}); err != nil {
		return store.Endpoint{}, err
	}
	if tr.Changed() && e.cfg.Notifier != nil {
		e.cfg.Notifier.EndpointChanged(snap, tr)
	}
	return snap, nil
}

// EndpointStates counts endpoints by circuit state (for metrics).
func (e *Engine) EndpointStates() map[health.State]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[health.State]int{}
	for _, l := range e.lanes {
		out[l.ep.Health.State]++
	}
	return out
}

// flushSoon wakes the health flusher.
func (e *Engine) flushSoon() {
	select {
	case e.flushKick <- struct{}{}:
	default:
	}
}

// flusher saves changed endpoint health every FlushInterval, and at once
// when woken (a state change), until the engine stops.
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
		e.mu.Lock()
		stopping := e.stopping
		e.mu.Unlock()
		if stopping {
			return
		}
	}
}

// flush saves the health of every endpoint changed since the last flush.
// On failure the endpoints stay marked and are tried again next time.
func (e *Engine) flush() {
	e.mu.Lock()
	var eps []store.Endpoint
	var lanes []*lane
	for _, l := range e.lanes {
		if l.dirty {
			eps = append(eps, l.ep)
			lanes = append(lanes, l)
			l.dirty = false
		}
	}
	e.mu.Unlock()
	if len(eps) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.cfg.Store.SaveHealth(ctx, eps); err != nil {
		if !errors.Is(err, store.ErrClosed) {
			e.cfg.Logger.Warn("saving endpoint health", "endpoints", len(eps), "err", err)
		}
		e.mu.Lock()
		for _, l := range lanes {
			l.dirty = true
		}
		e.mu.Unlock()
	}
}
