package scheduling

import (
	"sync"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Reservation is the handle between the admission stage and this one for
// one publish (the fast path). The publisher asks Reserve which of its new
// deliveries this stage takes straight from memory, writes those leased
// with Lease() and the others unleased, and after the commit calls Commit
// with what was written; if the write failed, Abort. Exactly one of Commit
// and Abort must be called; later calls do nothing. A Reservation is used
// by one goroutine.
type Reservation struct {
	s       *Service
	granted []bool
	lanes   []*lane // the lane of each granted place (reserved on it until Commit or Abort)
	n       int     // places granted
	lease   store.Lease
	once    sync.Once
}

// Reserve asks for places for fresh deliveries from the publish path, one
// per endpoint ID given (repeats allowed), published at now. A place is
// granted while the fast path has room (FreshWindow), the endpoint's
// circuit is open, its health known, and it has fewer than EndpointWindow
// first attempts queued, or for a rate-limited endpoint than its window
// (lane.window: one slow endpoint cannot fill the fast path).
func (s *Service) Reserve(endpointIDs []string, now time.Time) *Reservation {
	r := &Reservation{s: s, lease: s.cfg.lease(now)}
	if len(endpointIDs) == 0 {
		return r
	}
	var unknown bool
	r.granted, r.lanes, unknown = s.sched.admit(endpointIDs)
	r.n = len(r.lanes)
	if unknown {
		s.health.loop.Kick() // read the new endpoints' stored health
	}
	return r
}

// Granted reports whether the i-th endpoint ID given to Reserve got a
// place: its delivery is to be written leased with Lease and handed over
// by Commit.
func (r *Reservation) Granted(i int) bool { return r.granted != nil && r.granted[i] }

// Lease is the lease granted deliveries are written with.
func (r *Reservation) Lease() store.Lease { return r.lease }

// Commit hands over the committed deliveries that were granted places
// (held, leased to this process) and tells the loader of those written
// unleased (the endpoints in unheld, due at `at`). Places granted for
// deliveries not written (their event was a duplicate) are given back, and
// so are deliveries whose endpoint's circuit closed since Reserve: they go
// back to the store, to wait there.
func (r *Reservation) Commit(held []store.Claimed, unheld []string, at time.Time) {
	r.once.Do(func() {
		s := r.s
		starts, released, wake := s.sched.commit(r.lanes, r.n, held, unheld, at, r.lease.Until, s.cfg.Clock.Now())
		s.run.launch(starts)
		s.run.rel.release(released)
		if wake {
			s.loader.loop.Kick()
		}
	})
}

// Abort gives back every place granted: nothing was written.
func (r *Reservation) Abort() {
	r.once.Do(func() { r.s.sched.abort(r.lanes, r.n) })
}

// admit grants the places of Reserve (see there): for each endpoint ID,
// whether it got one, the lanes of the places granted (reserved on them),
// and whether a lane's health is unknown (to be read).
func (s *scheduler) admit(endpointIDs []string) (granted []bool, lanes []*lane, unknown bool) {
	granted = make([]bool, len(endpointIDs))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return granted, nil, false
	}
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
		if l.fresh.len()+l.reserved >= l.window(s.cfg.EndpointWindow) {
			continue
		}
		l.reserved++
		l.idleSince = time.Time{}
		granted[i] = true
		lanes = append(lanes, l)
		s.freshHeld++
	}
	return granted, lanes, unknown
}

// commit is Commit's work on the lanes: the attempts to start, the
// deliveries to give back to the store, and whether to wake the loader.
// lanes and n are the reservation's, until the end of the held deliveries'
// lease.
func (s *scheduler) commit(lanes []*lane, n int, held []store.Claimed, unheld []string, at, until, now time.Time) (starts []start, released []string, wake bool) {
	s.mu.Lock()
	for _, l := range lanes {
		l.reserved--
	}
	s.freshHeld -= n - len(held)
	for i := range held {
		it := &item{c: held[i], fromPublish: true, leaseUntil: until}
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

// abort gives back a reservation's places.
func (s *scheduler) abort(lanes []*lane, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range lanes {
		l.reserved--
	}
	s.freshHeld -= n
}
