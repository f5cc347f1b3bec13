package scheduling

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// TestDeliveryHeldTwiceFinishesTwice: on a store whose leases expire, a
// delivery whose lease ran out during its attempt (a clock jump, a stalled
// node) can be claimed again while its first attempt is still running, so
// the lanes hold it twice under one ID. The finisher must free each
// holding's place on its own: the results name the Claimed each attempt
// was given, not the ID. Freed by ID, the second holding's place leaked
// and the node never settled.
func TestDeliveryHeldTwiceFinishesTwice(t *testing.T) {
	s := newScheduler(defaultSchedTestConfig())
	svc := testService(s)
	fin := &Finisher{sched: s}
	now := ddStart
	s.mu.Lock()
	ep := endpoint.Endpoint{ID: "a"}
	ep.Health.State = health.Enabled
	s.adopt(s.laneFor("a"), ep, now)
	s.mu.Unlock()

	// The first holding: from the publish path.
	res := svc.Reserve([]string{"a"}, now)
	first := store.Claimed{}
	first.ID, first.EndpointID = "d1", "a"
	starts1, _, _ := commitAdmission(res, []store.Claimed{first}, nil, now, now)
	// The second: the loader claims d1 again (its lease expired).
	svc.loader.sched.hint("a", now)
	ws, _ := svc.loader.wants(now)
	if len(ws) != 1 {
		t.Fatalf("wants: %+v", ws)
	}
	again := store.Claimed{}
	again.ID, again.EndpointID, again.Attempts = "d1", "a", 1
	starts2, _ := svc.loader.claimed(ws[0], []store.Claimed{again}, nil, time.Time{}, false, now.Add(time.Minute), now)
	if len(starts1) != 1 || len(starts2) != 1 {
		t.Fatalf("started %d and %d, want one of each holding", len(starts1), len(starts2))
	}
	for _, st := range append(starts1, starts2...) {
		s.attemptEnded(st.l, nil, 0, "", now)
	}
	// The recorder's results come back in either order.
	for _, st := range []start{starts2[0], starts1[0]} {
		fin.finishedClaim(&st.it.c, time.Time{}, now)
	}
	if st := s.stats(); st.FreshHeld != 0 || st.LoadHeld != 0 || st.InFlight != 0 {
		t.Fatalf("after both finished: %+v, want nothing held", st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.running); n != 0 {
		t.Fatalf("%d left in the running set", n)
	}
	if l := s.lanes["a"]; l.held != 0 || l.loaded != 0 {
		t.Fatalf("lane a: held %d loaded %d, want 0", l.held, l.loaded)
	}
}
