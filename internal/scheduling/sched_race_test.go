package scheduling

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
// way the stage does (publishers: Reserve then Commit or Abort; the loader:
// hints, wants, claimed, and the pass that puts lanes whose probe is due
// back in the ring; attempts: attemptEnded then finished; the health sync:
// merge and adopt, evictIdle, stats, heldIDs), under -race. Circuits open
// and close as it runs (probation after 3 failures, short cool-downs). It
// checks that the bounds hold throughout, that no delivery is started twice
// or given back after it started, and that once everything has ended and
// the scheduler is drained every counter is back to zero and every delivery
// was either attempted once or given back once.
func TestSchedulerConcurrent(t *testing.T) {
	f := newConcFixture(t)
	var workers, producers, loader, side sync.WaitGroup
	var pubDone, stop atomic.Bool
	for range 3 {
		workers.Go(f.work)
	}
	for range 2 {
		producers.Go(func() { f.publish(3000) })
	}
	loader.Go(func() { f.load(&pubDone) }) // until the publishers are done
	side.Go(func() { f.syncHealth(&stop) })

	producers.Wait()
	pubDone.Store(true)
	loader.Wait()
	stop.Store(true)
	side.Wait()
	f.outstanding.Wait()
	close(f.ch)
	workers.Wait()
	f.checkDrained()
}

// concFixture is what the goroutines of TestSchedulerConcurrent share: one
// scheduler over five known lanes, a clock, the ledger of the deliveries
// handed to it and the attempts in flight.
type concFixture struct {
	t     *testing.T
	s     *scheduler
	e     *Service
	lanes []string

	clock  atomic.Int64 // moves 20µs with every reading: see now
	nextID atomic.Int64
	led    schedLedger

	// Attempts in flight go through ch: at most MaxInFlight at once, so the
	// buffer never fills. outstanding counts attempts handed out and not
	// finished.
	ch          chan start
	outstanding sync.WaitGroup
	probes      atomic.Int64 // attempts started as probes
}

func newConcFixture(t *testing.T) *concFixture {
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
	f := &concFixture{
		t: t, s: s, e: testService(s),
		lanes: []string{"e0", "e1", "e2", "e3", "e4"},
		ch:    make(chan start, cfg.MaxInFlight),
	}
	f.led.init()
	s.mu.Lock()
	for _, id := range f.lanes {
		ep := endpoint.Endpoint{ID: id}
		ep.Health.State = health.Enabled
		s.adopt(s.laneFor(id), ep, ddStart)
	}
	s.mu.Unlock()
	return f
}

// now reads the shared clock, which moves 20µs with every reading.
func (f *concFixture) now() time.Time {
	return ddStart.Add(time.Duration(f.clock.Add(int64(20 * time.Microsecond))))
}

func (f *concFixture) anyLane() string { return f.lanes[rand.IntN(len(f.lanes))] }

// newClaimed makes a new delivery for the endpoint and notes it given.
func (f *concFixture) newClaimed(ep string, attempts int) store.Claimed {
	id := fmt.Sprintf("d%d", f.nextID.Add(1))
	f.led.give(id)
	return store.Claimed{Delivery: delivery.Delivery{ID: id, EndpointID: ep, Attempts: attempts}}
}

// launch hands the attempts started to the workers.
func (f *concFixture) launch(starts []start) {
	f.outstanding.Add(len(starts))
	for _, st := range starts {
		if st.it.probe {
			f.probes.Add(1)
		}
		if err := f.led.start(st.it.c.ID); err != nil {
			f.t.Error(err)
		}
		f.ch <- st
	}
}

// release notes the deliveries given back.
func (f *concFixture) release(ids []string) {
	for _, id := range ids {
		if err := f.led.release(id); err != nil {
			f.t.Error(err)
		}
	}
}

// work runs attempts until ch is closed: a random outcome (80% success, 16%
// failure, 1% gone, else nothing observed), attemptEnded, then finished,
// pending again a third of the time.
func (f *concFixture) work() {
	s := f.s
	for st := range f.ch {
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
			obs.At, obs.Probe = f.now(), st.it.probe
		}
		en := s.attemptEnded(st.l, obs, 0, "", f.now())
		f.release(en.released)
		f.launch(en.starts)
		var next time.Time
		if rand.IntN(3) == 0 {
			next = f.now().Add(time.Millisecond)
		}
		s.finished(st.l, st.it, next, f.now())
		f.outstanding.Done()
	}
}

// publish makes n publishes of 1 to 4 deliveries to random lanes: Reserve,
// then Abort (one in ten) or Commit, with one granted delivery in ten a
// duplicate (not written).
func (f *concFixture) publish(n int) {
	for range n {
		eps := make([]string, 1+rand.IntN(4))
		for j := range eps {
			eps[j] = f.anyLane()
		}
		a := f.e.Reserve(eps, f.now())
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
				held = append(held, f.newClaimed(ep, 0))
			}
		}
		t0 := f.now()
		starts, released, _ := commitAdmission(a, held, unheld, t0, t0)
		f.release(released)
		f.launch(starts)
		runtime.Gosched() // let the attempts run: fewer refusals
	}
}

// maxExtraLoadRounds bounds the loader's rounds after the publishers are
// done (see load).
const maxExtraLoadRounds = 1_000_000

// load runs the loader's rounds until done and the run has exercised
// attempts, probes and give-backs (exercised), for at most
// maxExtraLoadRounds rounds after done: a hint, wants, a claim for each
// (one in twenty fails), and loadRound's pass that puts lanes whose probe
// is due back in the ring. On a loaded machine the publishers may finish
// while the workers have made few attempts (the fast path is full, so
// most publishes hold nothing), before any circuit closed: the loader's
// claims then go on until one has, and its probe was sent.
func (f *concFixture) load(done *atomic.Bool) {
	s := f.s
	for extra := 0; extra < maxExtraLoadRounds; {
		if done.Load() {
			if f.exercised() {
				return
			}
			extra++
		}
		s.hint(f.anyLane(), f.now())
		ws, _ := f.e.loader.wants(f.now())
		for _, w := range ws {
			var cs []store.Claimed
			var err error
			if rand.IntN(20) == 0 {
				err = fmt.Errorf("store failed")
			} else {
				for j := rand.IntN(w.n + 1); j > 0; j-- {
					cs = append(cs, f.newClaimed(w.id, rand.IntN(2)))
				}
			}
			starts, released := f.e.loader.claimed(w, cs, err, f.now().Add(time.Millisecond), rand.IntN(2) == 0, f.now().Add(time.Minute), f.now())
			f.release(released)
			f.launch(starts)
		}
		// loadRound's pass: lanes whose probe is due go back in the ring.
		t1 := f.now()
		s.mu.Lock()
		for _, l := range s.lanes {
			if l.gate(s.cfg.Health, t1) == health.ProbeNow {
				s.markReady(l)
			}
		}
		starts := s.pump(t1, nil)
		s.mu.Unlock()
		f.launch(starts)
		runtime.Gosched()
	}
}

// syncHealth runs the health sync's rounds until stop: merge (the stored
// health is the lane's view), adopt, pump; evict; and readers, checking
// the bounds after each round.
func (f *concFixture) syncHealth(stop *atomic.Bool) {
	s := f.s
	for !stop.Load() {
		t2 := f.now()
		var released []string
		s.mu.Lock()
		for _, l := range s.lanes {
			l.pending = nil
			released = append(released, s.adopt(l, l.ep, t2)...)
		}
		starts := s.pump(t2, nil)
		s.mu.Unlock()
		f.release(released)
		f.launch(starts)
		s.evictIdle(f.now())
		_ = f.e.keeper.heldIDs(f.now().Add(time.Hour))
		if err := schedBounds(s); err != nil {
			f.t.Error(err)
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// exercised reports whether the run has attempted, probed and given back
// deliveries (what checkDrained requires of it).
func (f *concFixture) exercised() bool {
	f.led.mu.Lock()
	defer f.led.mu.Unlock()
	return len(f.led.started) > 0 && len(f.led.released) > 0 && f.probes.Load() > 0
}

// checkDrained drains the scheduler once every attempt has ended and
// checks that every counter is back to zero, that every delivery was
// attempted or given back, and that the run exercised attempts, probes and
// give-backs.
func (f *concFixture) checkDrained() {
	t, s, led := f.t, f.s, &f.led
	// Everything that ended was recorded; what is still queued (behind a
	// closed circuit) goes back to the store.
	f.release(s.drain())
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
	t.Logf("%d deliveries: %d attempted (%d as probes), %d given back", len(led.given), len(led.started), f.probes.Load(), len(led.released))
	if len(led.started) == 0 || len(led.released) == 0 || f.probes.Load() == 0 {
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
