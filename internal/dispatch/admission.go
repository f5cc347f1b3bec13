package dispatch

import (
	"sync"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Admission is the handle between the publish path and the dispatcher for
// one publish (the fast path). The publisher asks Admit which of its new
// deliveries the dispatcher takes straight from memory, writes those leased
// with Lease() and the others unleased, and after the commit calls Commit
// with what was written; if the write failed, Abort. Exactly one of Commit
// and Abort must be called; later calls do nothing. An Admission is used by
// one goroutine.
type Admission struct {
	e       *Engine
	granted []bool
	lanes   []*lane // the lane of each granted place (reserved on it until Commit or Abort)
	n       int     // places granted
	lease   store.Lease
	once    sync.Once
}

// Admit asks for places for fresh deliveries from the publish path, one per
// endpoint ID given (repeats allowed), published at now. A place is granted
// while the fast path has room (FreshWindow), the endpoint's circuit is
// open, its health known, and it has fewer than EndpointWindow first
// attempts queued (one slow endpoint cannot fill the fast path).
func (e *Engine) Admit(endpointIDs []string, now time.Time) *Admission {
	a := &Admission{e: e, granted: make([]bool, len(endpointIDs)), lease: e.lease(now)}
	if len(endpointIDs) == 0 {
		return a
	}
	s := e.sched
	unknown := false
	s.mu.Lock()
	if !s.stopping {
		for i, id := range endpointIDs {
			if s.freshHeld >= s.cfg.FreshWindow {
				break
			}
			l := s.lanes[id]
			if l == nil {
				l = s.laneFor(id)
				unknown = true
			}
			if !l.known || l.ep.Health.State != health.Enabled {
				continue
			}
			// Places granted to other publishes not yet committed count.
			if l.fresh.len()+l.reserved >= s.cfg.EndpointWindow {
				continue
			}
			l.reserved++
			l.idleSince = time.Time{}
			a.granted[i] = true
			a.lanes = append(a.lanes, l)
			a.n++
			s.freshHeld++
		}
	}
	s.mu.Unlock()
	if unknown {
		e.health.Kick() // read the new endpoints' stored health
	}
	return a
}

// Granted reports whether the i-th endpoint ID given to Admit got a place:
// its delivery is to be written leased with Lease and handed over by Commit.
func (a *Admission) Granted(i int) bool { return a.granted[i] }

// Lease is the lease granted deliveries are written with.
func (a *Admission) Lease() store.Lease { return a.lease }

// Commit hands over the committed deliveries that were granted places
// (held, leased to this process) and tells the loader of those written
// unleased (the endpoints in unheld, due at `at`). Places granted for
// deliveries not written (their event was a duplicate) are given back, and
// so are deliveries whose endpoint's circuit closed since Admit: they go
// back to the store, to wait there.
func (a *Admission) Commit(held []store.Claimed, unheld []string, at time.Time) {
	a.once.Do(func() {
		e := a.e
		s := e.sched
		starts, released, wake := s.commit(a, held, unheld, at, e.cfg.Clock.Now())
		e.launch(starts)
		if len(released) > 0 {
			e.releaseIDs(released)
		}
		if wake {
			e.loader.Kick()
		}
	})
}

// commit is Commit's work on the scheduler: the attempts to start, the
// deliveries to give back to the store, and whether to wake the loader.
func (s *scheduler) commit(a *Admission, held []store.Claimed, unheld []string, at, now time.Time) (starts []start, released []string, wake bool) {
	s.mu.Lock()
	for _, l := range a.lanes {
		l.reserved--
	}
	s.freshHeld -= a.n - len(held)
	for i := range held {
		it := &item{c: held[i], fromPublish: true}
		if s.closedTo(s.laneFor(it.c.EndpointID), it, now) {
			released = append(released, it.c.ID)
			wake = true
			continue
		}
		s.enqueue(it)
	}
	starts = s.pump(now, nil)
	s.mu.Unlock()
	for _, ep := range unheld {
		if s.hint(ep, at) {
			wake = true
		}
	}
	return starts, released, wake
}

// Abort gives back every place granted: nothing was written.
func (a *Admission) Abort() {
	a.once.Do(func() {
		s := a.e.sched
		s.mu.Lock()
		for _, l := range a.lanes {
			l.reserved--
		}
		s.freshHeld -= a.n
		s.mu.Unlock()
	})
}
