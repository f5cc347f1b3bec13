package dispatch

import (
	"sync"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// The scheduler is the dispatcher's memory: one lane per endpoint with its
// queues, counters, adaptive concurrency limit and view of the circuit, the
// ring of lanes ready to start an attempt, and the bounds on what is held.
// It makes no store or network call and starts no goroutine: its methods
// take the time as an argument and return what the engine must do (start
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
}

// lane is one endpoint's queues, counters, circuit health and adaptive
// concurrency limit. Guarded by scheduler.mu.
type lane struct {
	id       string
	fresh    deque // first attempts
	retry    deque // later attempts
	inFlight int
	// limit is the adaptive in-flight limit (Pub/Sub push slow start): it
	// starts at InitialConcurrency, grows by one with each success and
	// halves with each failure, within [1, EndpointConcurrency].
	limit    int
	held     int       // held in memory from either source, until recorded
	loaded   int       // of which taken by the loader (or reserved for it)
	reserved int       // fast-path places granted by Admit, not yet committed or aborted
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

	mu       sync.Mutex
	lanes    map[string]*lane
	running  map[string]*item // deliveries in their attempt, by ID
	ready    ring             // lanes with queued work that may start one
	inFlight int
	// attempts counts the attempts started by pump and not yet ended; it is
	// added to under mu, before stop sets stopping, so the engine's Stop
	// can wait for it without racing a late start.
	attempts  sync.WaitGroup
	freshHeld int // reserved or held from the publish path
	loadHeld  int // held from the loader (or reserved by it)
	stopping  bool
	wantsTurn int // where the loader's next round starts among due lanes (loader.go)
}

func newScheduler(cfg schedConfig) *scheduler {
	return &scheduler{cfg: cfg, lanes: map[string]*lane{}, running: map[string]*item{}}
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

// gate is the lane's circuit gate at now; closed while its health is
// unknown. Caller holds s.mu.
func (s *scheduler) gate(l *lane, now time.Time) health.Gate {
	if !l.known {
		return health.Closed
	}
	return s.cfg.Health.Gate(&l.ep.Health, now)
}

// canStart reports whether the lane may start an attempt now: within its
// limit when its circuit is open, one probe at a time when a probe is due,
// nothing otherwise. Caller holds s.mu.
func (s *scheduler) canStart(l *lane, now time.Time) bool {
	switch s.gate(l, now) {
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

// start is an attempt the engine must run: the lane it belongs to and the
// delivery, with the others of its subscription sent in the same request
// (a batch; none without batching).
type start struct {
	l     *lane
	it    *item
	batch []*item
}

// items returns every delivery of the start, the first one first.
func (st start) items() []*item { return append([]*item{st.it}, st.batch...) }

// pump takes the attempts to start now, while there is a ready lane and a
// free global slot: one per lane per turn, round-robin, fresh before retry.
// A lane that cannot start now leaves the ring; it is put back when one of
// its attempts ends or the loader sees its probe come due. Caller holds
// s.mu; the caller runs the returned attempts after unlocking.
func (s *scheduler) pump(now time.Time, out []start) []start {
	for !s.stopping && s.inFlight < s.cfg.MaxInFlight && s.ready.len() > 0 {
		l := s.ready.pop()
		l.inReady = false
		if l.queued() == 0 || !s.canStart(l, now) {
			continue
		}
		probe := s.gate(l, now) == health.ProbeNow
		var it *item
		if l.fresh.len() > 0 {
			it = l.fresh.pop()
		} else {
			it = l.retry.pop()
		}
		it.probe = probe
		s.running[it.c.ID] = it
		var batch []*item
		if !probe {
			batch = s.batchFor(l, it)
		}
		for _, b := range batch {
			s.running[b.c.ID] = b
		}
		l.inFlight++
		s.inFlight++
		s.attempts.Add(1)
		if s.canStart(l, now) {
			s.markReady(l)
		}
		out = append(out, start{l, it, batch})
	}
	return out
}

// batchFor takes from the lane's queues (fresh first, then retries, each in
// order) the deliveries of first's subscription that go in one request
// with it: what is queued now, never waiting for more; at most maxEvents
// in all; and, counting the events' bytes, no more than preferredBytes,
// except that an event larger than that goes alone. A probe goes alone
// (the caller does not batch it). Caller holds s.mu.
func (s *scheduler) batchFor(l *lane, first *item) []*item {
	if s.cfg.Batch == nil {
		return nil
	}
	maxEvents, preferred := s.cfg.Batch(first.c.SubscriptionID)
	size := len(first.c.Payload)
	if maxEvents <= 1 || size >= preferred || first.c.DeadLetterOf != "" {
		return nil // a dead letter goes alone, in its own format
	}
	var batch []*item
	for _, q := range []*deque{&l.fresh, &l.retry} {
		q.take(func(it *item) bool {
			if len(batch)+1 >= maxEvents || it.c.SubscriptionID != first.c.SubscriptionID || it.c.DeadLetterOf != "" ||
				size+len(it.c.Payload) > preferred {
				return false
			}
			size += len(it.c.Payload)
			batch = append(batch, it)
			return true
		})
	}
	return batch
}

// ended is what the end of an attempt's HTTP exchange asks of the engine.
type ended struct {
	starts   []start           // attempts to start now
	released []string          // deliveries to give back to the store
	tr       health.Transition // the local circuit transition, if any
	flush    bool              // merge the lane's outcomes into the store now
	wake     bool              // wake the loader
}

// attemptEnded gives back the lane's and the global concurrency slot of an
// attempt whose HTTP exchange ended, and applies what it said about the
// endpoint's health to this node's view (obs nil: nothing, e.g. no attempt
// was made, or a failure that says nothing about the endpoint).
// url, when not empty, is the endpoint's URL, for its view.
func (s *scheduler) attemptEnded(l *lane, obs *health.Outcome, url string, now time.Time) ended {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res ended
	if l.ep.URL == "" {
		l.ep.URL = url
	}
	l.inFlight--
	s.inFlight--
	if obs != nil {
		res.tr = s.cfg.Health.Observe(&l.ep.Health, *obs)
		l.pending = append(l.pending, *obs)
		if n := len(l.pending); n > 2*maxQueuedOutcomes {
			l.pending = append(l.pending[:0], l.pending[n-maxQueuedOutcomes:]...)
		}
		if obs.Success {
			if l.limit < s.cfg.EndpointConcurrency {
				l.limit++
			}
		} else if l.limit > 1 {
			l.limit /= 2
		}
		if res.tr.Changed() {
			res.released = s.onTransition(l, res.tr, obs.At)
			res.wake = true
		}
		// A probe's outcome replaces the probe hold in the store: merge it
		// at once so the next probe is taken on time, here or elsewhere.
		res.flush = res.tr.Changed() || obs.Probe || len(l.pending) >= maxQueuedOutcomes
	}
	s.markReady(l)
	res.starts = s.pump(now, nil)
	return res
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
	return (!l.nextDue.IsZero() && l.loaded == s.cfg.EndpointWindow/2) || s.loadHeld == s.cfg.LoadWindow/2
}

// finished ends a delivery's time in memory after its outcome was recorded
// (or it was given back). next is the retry time of a delivery left pending
// (zero: none). It reports whether the loader should look now.
func (s *scheduler) finished(l *lane, it *item, next time.Time, now time.Time) (wake bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !next.IsZero() {
		l.nextDue = earlier(l.nextDue, next)
		l.hinted = earlier(l.hinted, next)
		wake = true
	}
	if s.forget(l, it) {
		wake = true
	}
	delete(s.running, it.c.ID)
	// The loader claims a closed circuit's probes one at a time: let it
	// look for the next as soon as this one is done.
	if s.gate(l, now) != health.Open {
		wake = true
	}
	if l.idle() {
		l.idleSince = now // idle from its last finish, however busy before
	}
	return wake
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

// isStopping reports whether stop or drain was called.
func (s *scheduler) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// Stats is a snapshot of the engine's memory use, for metrics and tests.
type Stats struct {
	FreshHeld, LoadHeld, InFlight, Endpoints int
}

func (s *scheduler) stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{FreshHeld: s.freshHeld, LoadHeld: s.loadHeld, InFlight: s.inFlight, Endpoints: len(s.lanes)}
}

// heldIDs returns the IDs of every delivery held (queued or in flight), for
// lease renewal.
func (s *scheduler) heldIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, l := range s.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			for i := q.head; i < len(q.buf); i++ {
				ids = append(ids, q.buf[i].c.ID)
			}
		}
	}
	for id := range s.running {
		ids = append(ids, id)
	}
	return ids
}

// dropLost removes from the queues the deliveries that were asked about
// (asked) and are no longer this node's (not in kept), returning how many.
// Deliveries queued since the question are kept.
func (s *scheduler) dropLost(asked, kept map[string]bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := 0
	for _, l := range s.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			var keep []*item
			for q.len() > 0 {
				it := q.pop()
				if !asked[it.c.ID] || kept[it.c.ID] {
					keep = append(keep, it)
					continue
				}
				lost++
				s.forget(l, it)
			}
			for _, it := range keep {
				q.push(it)
			}
		}
	}
	return lost
}

// fifo is a first-in, first-out queue.
type fifo[T any] struct {
	buf  []T
	head int
}

func (q *fifo[T]) len() int { return len(q.buf) - q.head }

func (q *fifo[T]) push(v T) { q.buf = append(q.buf, v) }

// pop removes the oldest element; the queue must not be empty. The backing
// array is compacted once half of it is spent, so memory follows the length.
func (q *fifo[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head++
	if q.head > 64 && q.head*2 >= len(q.buf) {
		q.buf = append(q.buf[:0], q.buf[q.head:]...)
		q.head = 0
	}
	return v
}

// take removes, in order, the elements for which keep reports true and
// leaves the others in their order. It reads the whole queue: O(len).
func (q *fifo[T]) take(keep func(T) bool) {
	rest := q.buf[q.head:q.head]
	for _, v := range q.buf[q.head:] {
		if !keep(v) {
			rest = append(rest, v)
		}
	}
	var zero T
	for i := q.head + len(rest); i < len(q.buf); i++ {
		q.buf[i] = zero
	}
	q.buf = q.buf[:q.head+len(rest)]
}

type (
	deque = fifo[*item]
	ring  = fifo[*lane]
)

// earlier returns the earlier of two times, where zero means "none".
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
