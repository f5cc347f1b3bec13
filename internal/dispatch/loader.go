package dispatch

import (
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// The due loader leases due deliveries from the store, endpoint by
// endpoint, into the lanes, keeping within LoadWindow and EndpointWindow.
// It knows which endpoints have due work from hints (the retry times this
// process schedules, operators' redeliveries, publishes over the fast
// path's bound) and from a full rescan every RefreshInterval (which also
// finds work written by other processes). It sleeps until the earliest
// known due time, PollInterval at most, or until kicked.

// loaderState is the loader's own state, used by its goroutine only.
type loaderState struct {
	nextRefresh time.Time // zero: rescan at once
}

// loadRound is one round of the loader (a loop job): rescan when due,
// claim what is due, and say how long to sleep.
func (e *Engine) loadRound() time.Duration {
	now := e.cfg.Clock.Now()
	if !now.Before(e.loadState.nextRefresh) {
		e.refresh()
		e.loadState.nextRefresh = now.Add(e.cfg.RefreshInterval)
	}
	e.loadDue(now)

	wake := now.Add(e.cfg.PollInterval)
	if e.loadState.nextRefresh.Before(wake) {
		wake = e.loadState.nextRefresh
	}
	s := e.sched
	s.mu.Lock()
	now = e.cfg.Clock.Now()
	for _, l := range s.lanes {
		if l.nextDue.IsZero() && l.queued() == 0 {
			continue // nothing to send there
		}
		switch s.gate(l, now) {
		case health.Open:
			if !l.nextDue.IsZero() && l.nextDue.Before(wake) && l.loaded < s.cfg.EndpointWindow {
				wake = l.nextDue
			}
		case health.ProbeNow:
			s.markReady(l) // a held delivery may go as the probe
		case health.Closed:
			if !l.ep.Health.NextProbeAt.IsZero() && l.ep.Health.NextProbeAt.Before(wake) {
				wake = l.ep.Health.NextProbeAt // frozen: zero, never
			}
		}
	}
	starts := s.pump(now, nil)
	s.mu.Unlock()
	e.launch(starts)
	return wake.Sub(e.cfg.Clock.Now())
}

// refresh rescans the store for endpoints with due work.
func (e *Engine) refresh() {
	ctx, cancel := e.storeCtx()
	defer cancel()
	dues, err := e.cfg.Store.DueEndpoints(ctx)
	if err != nil {
		e.log.Warn("scanning for due deliveries", "err", err)
		return
	}
	s := e.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(dues))
	// A hint given while the scan ran (a commit after the scan's read) is
	// kept: the scan may not have seen that delivery.
	for _, d := range dues {
		seen[d.EndpointID] = true
		l := s.laneFor(d.EndpointID)
		l.nextDue = earlier(d.NextDue, l.hinted)
		l.idleSince = time.Time{}
	}
	for id, l := range s.lanes {
		if !seen[id] {
			l.nextDue = l.hinted
		}
	}
}

// claimWant is one endpoint the loader claims for.
type claimWant struct {
	id    string
	n     int
	probe bool
}

// wants reserves window places for every endpoint whose hint is due, whose
// circuit lets something through and that has room, while the window has
// room. When the window is short, the endpoints take turns: each round
// starts one endpoint further along (in ID order) than the one before, so
// none is always served last. An endpoint not yet known reads its health
// first (the health sync is kicked).
func (s *scheduler) wants(now time.Time) (ws []claimWant, unknown bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	room := s.cfg.LoadWindow - s.loadHeld
	var due []*lane
	for _, l := range s.lanes {
		if !l.nextDue.IsZero() && !l.nextDue.After(now) {
			due = append(due, l)
		}
	}
	if len(due) == 0 {
		return nil, false
	}
	slices.SortFunc(due, func(a, b *lane) int { return strings.Compare(a.id, b.id) })
	first := s.wantsTurn % len(due)
	s.wantsTurn++
	for i := range due {
		l := due[(first+i)%len(due)]
		id := l.id
		if room <= 0 {
			break
		}
		if !l.known {
			unknown = true
			continue
		}
		n := s.cfg.EndpointWindow - l.loaded
		probe := false
		switch s.gate(l, now) {
		case health.Closed:
			continue
		case health.ProbeNow:
			// One probe: the oldest due delivery, if none is held already.
			if l.queued() > 0 || l.inFlight > 0 {
				continue
			}
			n, probe = 1, true
		}
		n = min(n, room)
		if n <= 0 {
			continue
		}
		room -= n
		s.loadHeld += n // reserve the places while claiming
		l.loaded += n
		l.hinted = time.Time{}
		ws = append(ws, claimWant{id, n, probe})
	}
	return ws, unknown
}

// claimed takes in what the loader claimed for w (cs; err when the claim
// failed; next and more: the endpoint's next due time in the store), gives
// back the places not used and returns the attempts to start and the
// deliveries to give back to the store (the endpoint's circuit closed while
// they were claimed).
func (s *scheduler) claimed(w claimWant, cs []store.Claimed, err error, next time.Time, more bool, now time.Time) ([]start, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.laneFor(w.id)
	unused := w.n - len(cs)
	s.loadHeld -= unused
	l.loaded -= unused
	switch {
	case err != nil:
		// Keep the hint; the next round tries again.
	case len(cs) == w.n:
		l.nextDue = now // there may be more
	case more:
		l.nextDue = next
	default:
		l.nextDue = time.Time{}
	}
	// A hint that arrived while claiming may name a delivery the queries
	// did not yet see.
	l.nextDue = earlier(l.nextDue, l.hinted)
	var released []string
	for i := range cs {
		it := &item{c: cs[i], probe: w.probe}
		if s.closedTo(l, it, now) {
			released = append(released, it.c.ID)
			continue
		}
		l.loaded-- // enqueue counts it again
		s.enqueue(it)
	}
	return s.pump(now, nil), released
}

// loadDue claims due deliveries for every endpoint that wants them.
func (e *Engine) loadDue(now time.Time) {
	ws, unknown := e.sched.wants(now)
	if unknown {
		e.health.Kick()
	}
	lease := e.lease(now)
	for _, w := range ws {
		if w.probe && !e.takeProbe(w.id, now) {
			e.sched.claimed(w, nil, nil, now, true, now)
			continue
		}
		ctx, cancel := e.storeCtx()
		cs, err := e.cfg.Store.ClaimDue(ctx, w.id, now, w.n, lease)
		if err != nil {
			e.log.Warn("claiming due deliveries", "endpoint", w.id, "err", err)
		}
		var next time.Time
		var more bool
		if err == nil && len(cs) < w.n {
			next, more, err = e.cfg.Store.NextDue(ctx, w.id)
			if err != nil {
				e.log.Warn("reading next due time", "endpoint", w.id, "err", err)
			}
		}
		cancel()
		starts, released := e.sched.claimed(w, cs, err, next, more, now)
		e.launch(starts)
		if len(released) > 0 {
			e.releaseIDs(released)
		}
	}
}

// probeHold is how long a node that took a probe keeps the others from
// taking the next: longer than any attempt (timeouts are at most 5 minutes).
// The probe's outcome, once merged, sets the real next probe time.
const probeHold = 6 * time.Minute

// takeProbe asks the store for the right to send the endpoint's probe now.
// When another node has it (or the store fails), this node's view waits a
// FlushInterval, by which time the stored health has been adopted.
func (e *Engine) takeProbe(endpointID string, now time.Time) bool {
	hold := now.Add(probeHold)
	ctx, cancel := e.storeCtx()
	ok, err := e.cfg.Store.TakeProbe(ctx, endpointID, now, hold)
	cancel()
	if err != nil {
		e.log.Warn("taking a probe", "endpoint", endpointID, "err", err)
	}
	s := e.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.laneFor(endpointID)
	if ok && err == nil {
		l.probeHold = hold
		return true
	}
	if h := &l.ep.Health; !h.NextProbeAt.After(now) {
		h.NextProbeAt = now.Add(e.cfg.FlushInterval)
	}
	return false
}

// returnProbe gives back a probe that sent nothing (its delivery's ttl had
// passed): the stored next probe time goes back from the hold to now, so
// this node (or another) takes the next probe at once.
func (e *Engine) returnProbe(l *lane) {
	now := e.cfg.Clock.Now()
	s := e.sched
	s.mu.Lock()
	hold := l.probeHold
	if l.ep.Health.NextProbeAt.After(now) || l.ep.Health.NextProbeAt.IsZero() {
		s.mu.Unlock()
		return // an outcome or another node moved it meanwhile
	}
	s.mu.Unlock()
	ctx, cancel := e.storeCtx()
	defer cancel()
	if _, err := e.cfg.Store.TakeProbe(ctx, l.id, hold, now); err != nil {
		e.log.Warn("giving back a probe", "endpoint", l.id, "err", err)
	}
}
