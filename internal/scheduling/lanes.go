package scheduling

import (
	"sync"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// The scheduler is the stage's memory: one lane per endpoint with its
// queues, counters, adaptive concurrency limit and view of the circuit, the
// ring of lanes ready to start an attempt, and the bounds on what is held.
// It makes no store or network call and starts no goroutine: its methods
// take the time as an argument and return what the caller must do (start
// these attempts, release those deliveries, wake the loader), so it is
// tested on its own (sched_test.go and testdata/sched).
//
// Lock order: scheduler.mu is taken after nothing and before nothing. No
// store call, network call or blocking channel operation is made while it
// is held.

// item is a delivery held in memory, waiting for or in its attempt.
type item struct {
	c           store.Claimed
	fromPublish bool // counts against FreshWindow, else LoadWindow
	probe       bool // sent as a probe of a closed circuit
	// leaseUntil is when the delivery's lease in the store ends, as this
	// node last wrote it (claim, publish or renewal): the lease keeper
	// renews only leases near their end (leases.go).
	leaseUntil time.Time
}

// lane is one endpoint's queues, counters, circuit health and adaptive
// concurrency limit. Guarded by scheduler.mu.
type lane struct {
	id       string
	fresh    deque // first attempts
	retry    deque // later attempts
	inFlight int
	// limit is the adaptive in-flight limit, within [1,
	// EndpointConcurrency], moved by adapt (concurrency.go) after each
	// exchange with what rtt knows of the endpoint's exchange times.
	limit    int
	rtt      rtts
	held     int       // held in memory from either source, until recorded
	loaded   int       // of which taken by the loader (or reserved for it)
	reserved int       // fast-path places granted by Reserve, not yet committed or aborted
	nextDue  time.Time // earliest unleased due delivery in the store; zero: none known
	hinted   time.Time // earliest hint received since the loader's last claim began
	inReady  bool
	// ep is the endpoint with this node's view of its circuit health: the
	// stored health last adopted (ep.Version is its version), plus the
	// outcomes in pending, which the health sync merges into the store next.
	ep      endpoint.Endpoint
	pending []health.Outcome
	// probeHold is the stored next-probe time this node set when it last
	// took a probe (TakeProbe).
	probeHold time.Time
	// known is false until the lane has read its endpoint's stored health;
	// until then nothing is sent there.
	known bool
	// idleSince is when the lane last became idle (nothing held, queued,
	// in flight or waiting to be merged); lanes idle for laneIdleTTL are
	// evicted.
	idleSince time.Time
	// rate is the lane's share of its endpoint's rate limit (rate.go).
	rate laneRate
}

func (l *lane) queued() int { return l.fresh.len() + l.retry.len() }

// idle reports whether the lane holds nothing this node must remember
// beyond what the store has.
func (l *lane) idle() bool {
	return l.held == 0 && l.loaded == 0 && l.reserved == 0 && l.inFlight == 0 && len(l.pending) == 0 &&
		l.queued() == 0 && l.nextDue.IsZero()
}

// laneIdleTTL is how long an idle lane stays in memory: one that is used
// again later reads its endpoint's stored health first, like a new one.
const laneIdleTTL = 10 * time.Minute

// schedConfig is what the scheduler needs of Config.
type schedConfig struct {
	FreshWindow, LoadWindow, EndpointWindow int
	EndpointConcurrency, InitialConcurrency int
	MaxInFlight                             int
	Health                                  health.Config
	// Batch says how a subscription's deliveries are batched: at most
	// maxEvents in one request, and preferredBytes of events at most
	// unless one event alone is larger. maxEvents ≤ 1 (or a nil Batch):
	// one delivery a request. It is called with the scheduler's mutex
	// held, so it must only read memory (the catalog's snapshot).
	Batch func(subscriptionID string) (maxEvents, preferredBytes int)
}

// scheduler: see the top of this file.
type scheduler struct {
	cfg schedConfig

	mu    sync.Mutex
	lanes map[string]*lane
	// running holds the deliveries in their attempt, by the address of
	// their Claimed (what the attempting and recording stages hand back):
	// one delivery held twice (its lease expired and the loader claimed it
	// again while its attempt ran) is two entries, each finished on its own.
	running  map[*store.Claimed]*item
	ready    ring // lanes with queued work that may start one
	inFlight int
	// attempts counts the attempts started by pump and not yet ended; it is
	// added to under mu, before stop sets stopping, so the Service's shutdown
	// can wait for it without racing a late start.
	attempts  sync.WaitGroup
	freshHeld int // reserved or held from the publish path
	loadHeld  int // held from the loader (or reserved by it)
	stopping  bool
	wantsTurn int       // where the loader's next round starts among due lanes (loader.go)
	rates     rateState // the rate gates' (rate.go)
}

func newScheduler(cfg schedConfig) *scheduler {
	return &scheduler{cfg: cfg, lanes: map[string]*lane{}, running: map[*store.Claimed]*item{}}
}

// laneFor returns the endpoint's lane, creating it unknown (its stored
// health to be read). Caller holds s.mu.
func (s *scheduler) laneFor(id string) *lane {
	l := s.lanes[id]
	if l == nil {
		l = &lane{id: id, limit: s.cfg.InitialConcurrency, ep: endpoint.Endpoint{ID: id}}
		l.ep.Health.State = health.Enabled
		s.lanes[id] = l
	}
	return l
}

// gate is the lane's circuit gate at now under the thresholds h; closed
// while its health is unknown. Caller holds scheduler.mu.
func (l *lane) gate(h health.Config, now time.Time) health.Gate {
	if !l.known {
		return health.Closed
	}
	return h.Gate(&l.ep.Health, now)
}

// canStart reports whether the lane may start an attempt now: within its
// limit when its circuit is open, one probe at a time when a probe is due,
// nothing otherwise; and, when its endpoint is rate limited, with a token
// in hand (rate.go). Caller holds scheduler.mu.
func (l *lane) canStart(h health.Config, now time.Time) bool {
	return l.slotFree(h, now) && l.hasToken(now)
}

// slotFree is canStart but for the rate limit. Caller holds scheduler.mu.
func (l *lane) slotFree(h health.Config, now time.Time) bool {
	switch l.gate(h, now) {
	case health.Open:
		return l.inFlight < l.limit
	case health.ProbeNow:
		return l.inFlight == 0
	}
	return false
}

// markReady puts a lane with queued work in the ready ring. Whether it may
// start an attempt is decided when pump takes it. Caller holds s.mu.
func (s *scheduler) markReady(l *lane) {
	if !l.inReady && l.queued() > 0 {
		l.inReady = true
		s.ready.push(l)
	}
}

// closedTo reports whether a delivery arriving in the lane (from a commit
// or a claim begun before the circuit closed) must go back to the store
// instead, as a lane leaving enabled gives back what it holds; if so it
// gives back its memory place (the caller releases it in the store). A
// probe claimed for a lane whose probe is due stays. Caller holds s.mu.
func (s *scheduler) closedTo(l *lane, it *item, now time.Time) bool {
	if !l.known || l.ep.Health.State == health.Enabled || it.probe {
		return false
	}
	if it.fromPublish {
		s.freshHeld--
	} else {
		l.loaded--
		s.loadHeld--
	}
	l.nextDue = earlier(l.nextDue, now)
	return true
}

// enqueue adds a held delivery to its lane. Caller holds s.mu.
func (s *scheduler) enqueue(it *item) {
	l := s.laneFor(it.c.EndpointID)
	l.idleSince = time.Time{}
	if it.c.Attempts == 0 {
		l.fresh.push(it)
	} else {
		l.retry.push(it)
	}
	l.held++
	if !it.fromPublish {
		l.loaded++
	}
	s.markReady(l)
}

// onTransition reacts to a change of circuit state. Leaving enabled, the
// lane gives its queued deliveries back to the store (they wait there, not
// in memory, until a probe succeeds) and returns their IDs for release;
// coming back to enabled, the loader is to claim the backlog. Caller holds
// s.mu.
func (s *scheduler) onTransition(l *lane, tr health.Transition, now time.Time) []string {
	if tr.To == health.Enabled {
		l.nextDue = earlier(l.nextDue, now)
		return nil
	}
	var ids []string
	for _, q := range []*deque{&l.fresh, &l.retry} {
		for q.len() > 0 {
			it := q.pop()
			ids = append(ids, it.c.ID)
			s.forget(l, it)
		}
	}
	if len(ids) > 0 {
		l.nextDue = earlier(l.nextDue, now)
	}
	return ids
}

// forget gives back a held delivery's memory place: once its outcome is
// recorded, or when it goes back to the store. It reports whether the
// loader should refill (this endpoint's or the whole window drained to
// half). Caller holds s.mu.
func (s *scheduler) forget(l *lane, it *item) (refill bool) {
	l.held--
	if it.fromPublish {
		s.freshHeld--
		return false
	}
	l.loaded--
	s.loadHeld--
	return (!l.nextDue.IsZero() && l.loaded == l.window(s.cfg.EndpointWindow)/2) || s.loadHeld == s.cfg.LoadWindow/2
}

// adopt makes a stored health this lane's view, re-applying the outcomes
// queued since (they are in the next merge), and reacts to a change of
// state the way a local transition does. It returns deliveries to release.
// Caller holds s.mu.
func (s *scheduler) adopt(l *lane, ep endpoint.Endpoint, now time.Time) []string {
	before := l.ep.Health.State
	url, created := l.ep.URL, l.ep.CreatedAt
	l.ep = ep
	if l.ep.URL == "" {
		l.ep.URL = url
	}
	if l.ep.CreatedAt.IsZero() {
		l.ep.CreatedAt = created
	}
	l.known = true
	for _, o := range l.pending {
		s.cfg.Health.Observe(&l.ep.Health, o)
	}
	var released []string
	if after := l.ep.Health.State; after != before {
		released = s.onTransition(l, health.Transition{From: before, To: after}, now)
	}
	s.markReady(l) // a lane waiting for its health may start now
	return released
}

// hint records that an endpoint has a delivery due at `at` in the store. It
// reports whether that is earlier than anything known (wake the loader).
func (s *scheduler) hint(endpointID string, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.laneFor(endpointID)
	lowered := l.nextDue.IsZero() || at.Before(l.nextDue)
	l.nextDue = earlier(l.nextDue, at)
	l.hinted = earlier(l.hinted, at)
	l.idleSince = time.Time{}
	return lowered
}

// evictIdle drops lanes idle since before now-laneIdleTTL, so memory
// follows the endpoints in use, not every endpoint ever seen. It returns
// how many it dropped.
func (s *scheduler) evictIdle(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, l := range s.lanes {
		if !l.idle() {
			l.idleSince = time.Time{}
			continue
		}
		if l.idleSince.IsZero() {
			l.idleSince = now
			continue
		}
		if now.Sub(l.idleSince) >= laneIdleTTL && !l.inReady {
			delete(s.lanes, id)
			n++
		}
	}
	return n
}

// drain stops the scheduler taking work and empties every queue, returning
// the IDs of the deliveries it held but had not started.
func (s *scheduler) drain() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	var ids []string
	for _, l := range s.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			for q.len() > 0 {
				it := q.pop()
				ids = append(ids, it.c.ID)
				s.forget(l, it)
			}
		}
	}
	return ids
}

// stop makes the scheduler start nothing more.
func (s *scheduler) stop() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
}

// Stats is a snapshot of the stage's memory use, for metrics and tests.
type Stats struct {
	FreshHeld, LoadHeld, InFlight, Endpoints int
}

func (s *scheduler) stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{FreshHeld: s.freshHeld, LoadHeld: s.loadHeld, InFlight: s.inFlight, Endpoints: len(s.lanes)}
}
