package scheduling

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// The due loader leases due deliveries from the store, endpoint by
// endpoint, into the lanes, keeping within LoadWindow and EndpointWindow.
// It knows which endpoints have due work from hints (the retry times this
// process schedules, operators' redeliveries, publishes over the fast
// path's bound) and from a full rescan every RefreshInterval (which also
// finds work written by other processes). It sleeps until the earliest
// known due time, PollInterval at most, or until kicked.

// loader is the due loader's state and work.
type loader struct {
	loop   *startstop.Loop
	sched  *scheduler
	cfg    *Config
	run    *runner
	rel    *releaser
	probes *probes
	log    *slog.Logger
	health *startstop.Loop // kicked to read an unknown lane's health

	nextRefresh time.Time // zero: rescan at once; used by the loop's goroutine only
}

func newLoader(s *scheduler, cfg *Config, run *runner, rel *releaser, p *probes, log *slog.Logger) *loader {
	ld := &loader{sched: s, cfg: cfg, run: run, rel: rel, probes: p, log: log}
	ld.loop = startstop.NewLoop("loader", cfg.Clock, ld.round)
	return ld
}

// round is one round of the loader: rescan when due, claim what is due,
// and say how long to sleep.
func (ld *loader) round(context.Context) time.Duration {
	now := ld.cfg.Clock.Now()
	if !now.Before(ld.nextRefresh) {
		ld.refresh()
		ld.nextRefresh = now.Add(ld.cfg.RefreshInterval)
	}
	ld.loadDue(now)

	wake := now.Add(ld.cfg.PollInterval)
	if ld.nextRefresh.Before(wake) {
		wake = ld.nextRefresh
	}
	starts, wake := ld.wakeAt(ld.cfg.Clock.Now(), wake)
	ld.run.launch(starts)
	return wake.Sub(ld.cfg.Clock.Now())
}

// wakeAt is when the loader must look again, no later than wake: the
// earliest due time of a lane with room whose circuit is open, or the
// next probe of a closed one; it also marks ready the lanes whose probe is
// due (a held delivery may go as the probe) and returns what starts.
func (ld *loader) wakeAt(now, wake time.Time) ([]start, time.Time) {
	s := ld.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lanes {
		if l.nextDue.IsZero() && l.queued() == 0 {
			continue // nothing to send there
		}
		switch l.gate(s.cfg.Health, now) {
		case health.Open:
			if !l.nextDue.IsZero() && l.nextDue.Before(wake) && l.loaded < l.window(s.cfg.EndpointWindow) {
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
	return s.pump(now, nil), wake
}

// refresh rescans the store for endpoints with due work.
func (ld *loader) refresh() {
	ctx, cancel := ld.cfg.storeCtx()
	defer cancel()
	dues, err := ld.cfg.Store.DueEndpoints(ctx)
	if err != nil {
		ld.log.Warn("scanning for due deliveries", "err", err)
		return
	}
	ld.refreshed(dues)
}

// refreshed takes in a rescan's due endpoints.
func (ld *loader) refreshed(dues []store.EndpointDue) {
	s := ld.sched
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
func (ld *loader) wants(now time.Time) (ws []claimWant, unknown bool) {
	s := ld.sched
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
		n := l.window(s.cfg.EndpointWindow) - l.loaded
		probe := false
		switch l.gate(s.cfg.Health, now) {
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
// they were claimed). until is the end of the claims' lease.
func (ld *loader) claimed(w claimWant, cs []store.Claimed, err error, next time.Time, more bool, until, now time.Time) ([]start, []string) {
	s := ld.sched
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
		it := &item{c: cs[i], probe: w.probe, leaseUntil: until}
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
func (ld *loader) loadDue(now time.Time) {
	ws, unknown := ld.wants(now)
	if unknown {
		ld.health.Kick()
	}
	lease := ld.cfg.lease(now)
	for _, w := range ws {
		if w.probe && !ld.probes.take(w.id, now) {
			ld.claimed(w, nil, nil, now, true, lease.Until, now)
			continue
		}
		ctx, cancel := ld.cfg.storeCtx()
		cs, err := ld.cfg.Store.ClaimDue(ctx, w.id, now, w.n, lease)
		if err != nil {
			ld.log.Warn("claiming due deliveries", "endpoint_id", w.id, "err", err)
		}
		var next time.Time
		var more bool
		if err == nil && len(cs) < w.n {
			next, more, err = ld.cfg.Store.NextDue(ctx, w.id)
			if err != nil {
				ld.log.Warn("reading next due time", "endpoint_id", w.id, "err", err)
			}
		}
		cancel()
		starts, released := ld.claimed(w, cs, err, next, more, lease.Until, now)
		ld.run.launch(starts)
		ld.rel.release(released)
	}
}
