package dispatch

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/health"
)

// loader is the due-window loader: it leases due deliveries from the store,
// endpoint by endpoint, into the lanes, keeping within LoadWindow and
// EndpointWindow. It knows which endpoints have due work from hints (the
// retry times this process schedules, Hint calls) and from a full rescan
// every RefreshInterval (which also finds work written by other processes).
// It sleeps until the earliest known due time, PollInterval at most, or until
// woken.
func (e *Engine) loader() {
	defer close(e.loaderDone)
	ctx := e.attemptsCtx
	nextRefresh := time.Time{} // refresh at once
	for {
		e.mu.Lock()
		stopping := e.stopping
		e.mu.Unlock()
		if stopping {
			return
		}
		now := e.cfg.Clock.Now()
		if !now.Before(nextRefresh) {
			e.refresh(ctx)
			nextRefresh = now.Add(e.cfg.RefreshInterval)
		}
		e.loadDue(ctx, now)

		wake := now.Add(e.cfg.PollInterval)
		if nextRefresh.Before(wake) {
			wake = nextRefresh
		}
		e.mu.Lock()
		now = e.cfg.Clock.Now()
		for _, l := range e.lanes {
			if l.nextDue.IsZero() && l.queued() == 0 {
				continue // nothing to send there
			}
			switch e.gate(l, now) {
			case health.Open:
				if !l.nextDue.IsZero() && l.nextDue.Before(wake) && l.loaded < e.cfg.EndpointWindow {
					wake = l.nextDue
				}
			case health.ProbeNow:
				e.markReady(l) // a held delivery may go as the probe
			case health.Closed:
				if !l.ep.Health.NextProbeAt.IsZero() && l.ep.Health.NextProbeAt.Before(wake) {
					wake = l.ep.Health.NextProbeAt // frozen: zero, never
				}
			}
		}
		e.pump()
		e.mu.Unlock()
		d := wake.Sub(e.cfg.Clock.Now())
		if d <= 0 {
			continue
		}
		t := e.cfg.Clock.NewTimer(d)
		select {
		case <-t.C():
		case <-e.kick:
			t.Stop()
		}
	}
}

// refresh rescans the store for endpoints with due work.
func (e *Engine) refresh(ctx context.Context) {
	dues, err := e.cfg.Store.DueEndpoints(ctx)
	if err != nil {
		e.cfg.Logger.Warn("scanning for due deliveries", "err", err)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := make(map[string]bool, len(dues))
	for _, d := range dues {
		seen[d.EndpointID] = true
		e.laneFor(d.EndpointID).nextDue = d.NextDue
	}
	for id, l := range e.lanes {
		if !seen[id] {
			l.nextDue = time.Time{}
		}
	}
}

// loadDue claims due deliveries for every endpoint whose hint is due and that
// has room, while the window has room.
func (e *Engine) loadDue(ctx context.Context, now time.Time) {
	type want struct {
		id    string
		n     int
		probe bool
	}
	e.mu.Lock()
	room := e.cfg.LoadWindow - e.loadHeld
	var wants []want
	for id, l := range e.lanes {
		if room <= 0 {
			break
		}
		if l.nextDue.IsZero() || l.nextDue.After(now) {
			continue
		}
		n := e.cfg.EndpointWindow - l.loaded
		probe := false
		switch e.gate(l, now) {
		case health.Closed:
			continue
		case health.ProbeNow:
			// One probe: the oldest due delivery, if none is held already.
			if l.queued() > 0 || l.inFlight > 0 {
				continue
			}
			n, probe = 1, true
		}
		if n > room {
			n = room
		}
		if n <= 0 {
			continue
		}
		room -= n
		e.loadHeld += n // reserve the places while claiming
		l.loaded += n
		l.hinted = time.Time{}
		wants = append(wants, want{id, n, probe})
	}
	e.mu.Unlock()

	lease := e.lease(now)
	for _, w := range wants {
		if w.probe && !e.takeProbe(ctx, w.id, now) {
			e.mu.Lock()
			l := e.laneFor(w.id)
			e.loadHeld -= w.n
			l.loaded -= w.n
			e.mu.Unlock()
			continue
		}
		cs, err := e.cfg.Store.ClaimDue(ctx, w.id, now, w.n, lease)
		if err != nil {
			e.cfg.Logger.Warn("claiming due deliveries", "endpoint", w.id, "err", err)
		}
		var next time.Time
		var more bool
		if err == nil && len(cs) < w.n {
			next, more, err = e.cfg.Store.NextDue(ctx, w.id)
			if err != nil {
				e.cfg.Logger.Warn("reading next due time", "endpoint", w.id, "err", err)
			}
		}
		e.mu.Lock()
		l := e.laneFor(w.id)
		unused := w.n - len(cs)
		e.loadHeld -= unused
		l.loaded -= unused
		switch {
		case err != nil:
			// Keep the hint; the next poll tries again.
		case len(cs) == w.n:
			l.nextDue = now // there may be more
		case more:
			l.nextDue = next
		default:
			l.nextDue = time.Time{}
		}
		// A hint that arrived while claiming may name a delivery the queries
		// above did not yet see.
		l.nextDue = earlier(l.nextDue, l.hinted)
		for i := range cs {
			it := &item{c: cs[i]}
			l.loaded-- // enqueue counts it again
			e.enqueue(it)
		}
		e.pump()
		e.mu.Unlock()
	}
}

// earlier returns the earlier of two times, where zero means "none".
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// probeHold is how long a node that took a probe keeps the others from
// taking the next: longer than any attempt (timeouts are at most 5 minutes).
// The probe's outcome, once merged, sets the real next probe time.
const probeHold = 6 * time.Minute

// takeProbe asks the store for the right to send the endpoint's probe now.
// When another node has it (or the store fails), this node's view waits a
// FlushInterval, by which time the stored health has been adopted.
func (e *Engine) takeProbe(ctx context.Context, endpointID string, now time.Time) bool {
	hold := now.Add(probeHold)
	ok, err := e.cfg.Store.TakeProbe(ctx, endpointID, now, hold)
	if err != nil {
		e.cfg.Logger.Warn("taking a probe", "endpoint", endpointID, "err", err)
	}
	if ok && err == nil {
		e.mu.Lock()
		e.laneFor(endpointID).probeHold = hold
		e.mu.Unlock()
		return true
	}
	e.mu.Lock()
	h := &e.laneFor(endpointID).ep.Health
	if !h.NextProbeAt.After(now) {
		h.NextProbeAt = now.Add(e.cfg.FlushInterval)
	}
	e.mu.Unlock()
	return false
}

// returnProbe gives back a probe that sent nothing (its delivery's ttl had
// passed): the stored next probe time goes back from the hold to now, so
// this node (or another) takes the next probe at once.
func (e *Engine) returnProbe(l *lane) {
	now := e.cfg.Clock.Now()
	e.mu.Lock()
	hold := l.probeHold
	if l.ep.Health.NextProbeAt.After(now) || l.ep.Health.NextProbeAt.IsZero() {
		e.mu.Unlock()
		return // an outcome or another node moved it meanwhile
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.cfg.Store.TakeProbe(ctx, l.id, hold, now); err != nil {
		e.cfg.Logger.Warn("giving back a probe", "endpoint", l.id, "err", err)
	}
}
