package scheduling

import (
	"log/slog"
	"time"
)

// probeHold is how long a node that took a probe keeps the others from
// taking the next: longer than any attempt (timeouts are at most 5 minutes).
// The probe's outcome, once merged, sets the real next probe time.
const probeHold = 6 * time.Minute

// probes takes and gives back the right to send a closed circuit's probe,
// which only one node holds at a time (Store.TakeProbe).
type probes struct {
	sched *scheduler
	store Store
	cfg   *Config
	log   *slog.Logger
}

// take asks the store for the right to send the endpoint's probe now.
// When another node has it (or the store fails), this node's view waits a
// FlushInterval, by which time the stored health has been adopted.
func (p *probes) take(endpointID string, now time.Time) bool {
	hold := now.Add(probeHold)
	ctx, cancel := p.cfg.storeCtx()
	ok, err := p.store.TakeProbe(ctx, endpointID, now, hold)
	cancel()
	if err != nil {
		p.log.Warn("taking a probe", "endpoint_id", endpointID, "err", err)
	}
	s := p.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.laneFor(endpointID)
	if ok && err == nil {
		l.probeHold = hold
		return true
	}
	if h := &l.ep.Health; !h.NextProbeAt.After(now) {
		h.NextProbeAt = now.Add(p.cfg.FlushInterval)
	}
	return false
}

// giveBack gives back a probe that sent nothing (its delivery's ttl had
// passed, or its subscription is gone or queues): the stored next probe
// time goes back from the hold to now, so this node (or another) takes the
// next probe at once.
func (p *probes) giveBack(l *lane) {
	now := p.cfg.Clock.Now()
	s := p.sched
	s.mu.Lock()
	hold := l.probeHold
	if l.ep.Health.NextProbeAt.After(now) || l.ep.Health.NextProbeAt.IsZero() {
		s.mu.Unlock()
		return // an outcome or another node moved it meanwhile
	}
	s.mu.Unlock()
	ctx, cancel := p.cfg.storeCtx()
	defer cancel()
	if _, err := p.store.TakeProbe(ctx, l.id, hold, now); err != nil {
		p.log.Warn("giving back a probe", "endpoint_id", l.id, "err", err)
	}
}
