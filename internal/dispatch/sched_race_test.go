package dispatch

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// TestSchedulerConcurrent hammers one scheduler from several goroutines the
// way the engine does (publishers: Admit then Commit or Abort; the loader:
// hints, wants, claimed, and the pass that puts lanes whose probe is due
// back in the ring; attempts: attemptEnded then finished; the health sync:
// merge and adopt, evictIdle, stats, heldIDs), under -race. Circuits open
// and close as it runs (probation after 3 failures, short cool-downs). It
// checks that the bounds hold throughout, that no delivery is started twice
// or given back after it started, and that once everything has ended and
// the scheduler is drained every counter is back to zero and every delivery
// was either attempted once or given back once.
func TestSchedulerConcurrent(t *testing.T) {
	cfg := schedConfig{
		FreshWindow: 48, LoadWindow: 24, EndpointWindow: 6, MaxInFlight: 8,
		InitialConcurrency: 2, EndpointConcurrency: 4,
		Health: health.DefaultConfig(),
	}
	cfg.Health.ProbationAfter = 3
	cfg.Health.ProbationInitial = time.Millisecond
	cfg.Health.ProbationMax = 4 * time.Millisecond
	cfg.Health.ProbeInterval = 5 * time.Millisecond
	s := newScheduler(cfg)
	e := &Engine{sched: s, health: newLoop(nil, nil)}
	lanes := []string{"e0", "e1", "e2", "e3", "e4"}
	s.mu.Lock()
	for _, id := range lanes {
		ep := endpoint.Endpoint{ID: id}
		ep.Health.State = health.Enabled
		s.adopt(s.laneFor(id), ep, ddStart)
	}
	s.mu.Unlock()

	// A shared clock that moves 20µs with every reading.
	var clock atomic.Int64
	now := func() time.Time { return ddStart.Add(time.Duration(clock.Add(int64(20 * time.Microsecond)))) }

	var led schedLedger
	led.init()
	var nextID atomic.Int64
	newClaimed := func(ep string, attempts int) store.Claimed {
		id := fmt.Sprintf("d%d", nextID.Add(1))
		led.give(id)
		return store.Claimed{Delivery: delivery.Delivery{ID: id, EndpointID: ep, Attempts: attempts}}
	}

	// Attempts in flight go through ch: at most MaxInFlight at once, so the
	// buffer never fills. outstanding counts attempts handed out and not
	// finished.
	ch := make(chan start, cfg.MaxInFlight)
	var outstanding sync.WaitGroup
	var probes atomic.Int64
	launch := func(starts []start) {
		outstanding.Add(len(starts))
		for _, st := range starts {
			if st.it.probe {
				probes.Add(1)
			}
			if err := led.start(st.it.c.ID); err != nil {
				t.Error(err)
			}
			ch <- st
		}
	}

	var workers sync.WaitGroup
	for w := 0; w < 3; w++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for st := range ch {
				var obs *health.Outcome
				switch r := rand.IntN(100); {
				case r < 80:
					obs = &health.Outcome{Success: true}
				case r < 96:
					obs = &health.Outcome{}
				case r < 97:
					obs = &health.Outcome{Gone: true}
				}
				if obs != nil {
					obs.At, obs.Probe = now(), st.it.probe
				}
				en := s.attemptEnded(st.l, obs, "", now())
				for _, id := range en.released {
					if err := led.release(id); err != nil {
						t.Error(err)
					}
				}
				launch(en.starts)
				var next time.Time
				if rand.IntN(3) == 0 {
					next = now().Add(time.Millisecond)
				}
				s.finished(st.l, st.it, next, now())
				outstanding.Done()
			}
		}()
	}

	var producers sync.WaitGroup
	var stop atomic.Bool
	// Publishers.
	for p := 0; p < 2; p++ {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for i := 0; i < 3000; i++ {
				eps := make([]string, 1+rand.IntN(4))
				for j := range eps {
					eps[j] = lanes[rand.IntN(len(lanes))]
				}
				a := e.Admit(eps, now())
				if rand.IntN(10) == 0 {
					a.Abort()
					continue
				}
				var held []store.Claimed
				var unheld []string
				for j, ep := range eps {
					switch {
					case !a.Granted(j):
						unheld = append(unheld, ep)
					case rand.IntN(10) > 0: // else: a duplicate, not written
						held = append(held, newClaimed(ep, 0))
					}
				}
				t0 := now()
				starts, released, _ := commitAdmission(a, held, unheld, t0, t0)
				for _, id := range released {
					if err := led.release(id); err != nil {
						t.Error(err)
					}
				}
				launch(starts)
				runtime.Gosched() // let the attempts run: fewer refusals
			}
		}()
	}
	// The loader, until the publishers are done.
	var pubDone atomic.Bool
	var loader sync.WaitGroup
	loader.Add(1)
	go func() {
		defer loader.Done()
		for !pubDone.Load() {
			s.hint(lanes[rand.IntN(len(lanes))], now())
			ws, _ := s.wants(now())
			for _, w := range ws {
				var cs []store.Claimed
				var err error
				if rand.IntN(20) == 0 {
					err = fmt.Errorf("store failed")
				} else {
					for j := rand.IntN(w.n + 1); j > 0; j-- {
						cs = append(cs, newClaimed(w.id, rand.IntN(2)))
					}
				}
				starts, released := s.claimed(w, cs, err, now().Add(time.Millisecond), rand.IntN(2) == 0, now())
				for _, id := range released {
					if err := led.release(id); err != nil {
						t.Error(err)
					}
				}
				launch(starts)
			}
			// loadRound's pass: lanes whose probe is due go back in the ring.
			t1 := now()
			s.mu.Lock()
			for _, l := range s.lanes {
				if s.gate(l, t1) == health.ProbeNow {
					s.markReady(l)
				}
			}
			starts := s.pump(t1, nil)
			s.mu.Unlock()
			launch(starts)
			runtime.Gosched()
		}
	}()
	// The health sync: merge (the stored health is the lane's view),
	// adopt, pump; evict; and readers.
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		for !stop.Load() {
			t2 := now()
			var released []string
			s.mu.Lock()
			for _, l := range s.lanes {
				l.pending = nil
				released = append(released, s.adopt(l, l.ep, t2)...)
			}
			starts := s.pump(t2, nil)
			s.mu.Unlock()
			for _, id := range released {
				if err := led.release(id); err != nil {
					t.Error(err)
				}
			}
			launch(starts)
			s.evictIdle(now())
			_ = s.heldIDs()
			if err := schedBounds(s); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()

	producers.Wait()
	pubDone.Store(true)
	loader.Wait()
	stop.Store(true)
	side.Wait()
	outstanding.Wait()
	close(ch)
	workers.Wait()

	// Everything that ended was recorded; what is still queued (behind a
	// closed circuit) goes back to the store.
	for _, id := range s.drain() {
		if err := led.release(id); err != nil {
			t.Error(err)
		}
	}
	st := s.stats()
	if st.FreshHeld != 0 || st.LoadHeld != 0 || st.InFlight != 0 {
		t.Errorf("after drain: %+v, want every counter 0", st)
	}
	s.mu.Lock()
	if len(s.running) != 0 {
		t.Errorf("%d deliveries still in the running set", len(s.running))
	}
	for id, l := range s.lanes {
		if l.held != 0 || l.loaded != 0 || l.inFlight != 0 || l.queued() != 0 {
			t.Errorf("lane %s after drain: held %d loaded %d in flight %d queued %d", id, l.held, l.loaded, l.inFlight, l.queued())
		}
	}
	s.mu.Unlock()
	if err := led.settled(); err != nil {
		t.Error(err)
	}
	t.Logf("%d deliveries: %d attempted (%d as probes), %d given back", len(led.given), len(led.started), probes.Load(), len(led.released))
	if len(led.started) == 0 || len(led.released) == 0 || probes.Load() == 0 {
		t.Errorf("the run did not exercise attempts, probes and give-backs")
	}
}

// schedBounds checks the scheduler's bounds under its lock.
func schedBounds(s *scheduler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cfg
	if s.inFlight > c.MaxInFlight || s.freshHeld > c.FreshWindow || s.loadHeld > c.LoadWindow ||
		s.inFlight < 0 || s.freshHeld < 0 || s.loadHeld < 0 {
		return fmt.Errorf("bounds: in flight %d, fresh %d, load %d", s.inFlight, s.freshHeld, s.loadHeld)
	}
	sum := 0
	for id, l := range s.lanes {
		if l.inFlight > c.EndpointConcurrency || l.loaded > c.EndpointWindow || l.limit < 1 || l.limit > c.EndpointConcurrency {
			return fmt.Errorf("lane %s: in flight %d, loaded %d, limit %d", id, l.inFlight, l.loaded, l.limit)
		}
		sum += l.inFlight
	}
	if sum != s.inFlight {
		return fmt.Errorf("in flight %d, lanes' sum %d", s.inFlight, sum)
	}
	return nil
}

// schedLedger follows every delivery handed to the scheduler: started (at
// most once), given back (at most once, never after it started).
type schedLedger struct {
	mu                       sync.Mutex
	given, started, released map[string]bool
}

func (l *schedLedger) init() {
	l.given, l.started, l.released = map[string]bool{}, map[string]bool{}, map[string]bool{}
}

func (l *schedLedger) give(id string) {
	l.mu.Lock()
	l.given[id] = true
	l.mu.Unlock()
}

func (l *schedLedger) start(id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.given[id]:
		return fmt.Errorf("%s started, never given", id)
	case l.started[id]:
		return fmt.Errorf("%s started twice", id)
	case l.released[id]:
		return fmt.Errorf("%s started after it was given back", id)
	}
	l.started[id] = true
	return nil
}

func (l *schedLedger) release(id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.given[id]:
		return fmt.Errorf("%s given back, never given", id)
	case l.started[id]:
		return fmt.Errorf("%s given back after it started", id)
	case l.released[id]:
		return fmt.Errorf("%s given back twice", id)
	}
	l.released[id] = true
	return nil
}

// settled checks that every delivery given was started or given back.
func (l *schedLedger) settled() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.given {
		if !l.started[id] && !l.released[id] {
			return fmt.Errorf("%s neither attempted nor given back", id)
		}
	}
	return nil
}
