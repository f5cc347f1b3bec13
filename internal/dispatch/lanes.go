package dispatch

import (
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// item is a delivery held in memory, waiting for or in its attempt.
type item struct {
	c           store.Claimed
	fromPublish bool // counts against FreshWindow, else LoadWindow
	probe       bool // sent as a probe of a closed circuit
}

// lane is one endpoint's queues, counters, circuit health and adaptive
// concurrency limit. Lanes live as long as the engine: there is one per
// endpoint (distinct subscription URL). Guarded by Engine.mu.
type lane struct {
	id       string
	fresh    deque // first attempts
	retry    deque // later attempts
	inFlight int
	// limit is the adaptive in-flight limit (Pub/Sub push slow start): it
	// starts at Config.InitialConcurrency, grows by one with each success
	// and halves with each failure, within [1, EndpointConcurrency].
	limit   int
	held    int       // held in memory from either source, until recorded
	loaded  int       // of which taken by the loader (or reserved for it)
	nextDue time.Time // earliest unleased due delivery in the store; zero: none known
	hinted  time.Time // earliest hint received since the loader's last claim began
	inReady bool
	// ep is the endpoint with this node's view of its circuit health: the
	// stored health as of synced, plus the outcomes in pending, which the
	// flusher merges into the store next.
	ep      store.Endpoint
	synced  time.Time
	pending []health.Outcome
	// probeHold is the stored next-probe time this node set when it last
	// took a probe (TakeProbe).
	probeHold time.Time
	// known is false while a lane of a shared store has not yet read its
	// endpoint's stored health; until then nothing is sent there.
	known bool
}

func (l *lane) queued() int { return l.fresh.len() + l.retry.len() }

// laneFor returns the endpoint's lane, creating it with fresh health.
// Caller holds e.mu.
func (e *Engine) laneFor(id string) *lane {
	l := e.lanes[id]
	if l == nil {
		// On a store of its own the engine has seen every outcome of a new
		// endpoint: its health is the fresh one. On a shared store another
		// node may have judged it already: read it first (the next sync).
		l = &lane{id: id, limit: e.cfg.InitialConcurrency, ep: store.Endpoint{ID: id}, known: !e.cfg.Shared}
		l.ep.Health.State = health.Enabled
		e.lanes[id] = l
		if !l.known {
			e.flushSoon()
		}
	}
	return l
}

// enqueue adds a held delivery to its lane. Caller holds e.mu.
func (e *Engine) enqueue(it *item) {
	l := e.laneFor(it.c.EndpointID)
	if it.c.Attempts == 0 {
		l.fresh.push(it)
	} else {
		l.retry.push(it)
	}
	l.held++
	if !it.fromPublish {
		l.loaded++
	}
	e.markReady(l)
}

// markReady puts a lane with queued work in the ready ring. Whether it may
// start an attempt is decided when pump takes it. Caller holds e.mu.
func (e *Engine) markReady(l *lane) {
	if !l.inReady && l.queued() > 0 {
		l.inReady = true
		e.ready.push(l)
	}
}

// canStart reports whether the lane may start an attempt now: within its
// limit when its circuit is open, one probe at a time when a probe is due,
// nothing otherwise. Caller holds e.mu.
func (e *Engine) canStart(l *lane, now time.Time) bool {
	switch e.gate(l, now) {
	case health.Open:
		return l.inFlight < l.limit
	case health.ProbeNow:
		return l.inFlight == 0
	}
	return false
}

// pump starts attempts while there is a ready endpoint and a free global
// slot: one attempt per endpoint per turn, round-robin, fresh before retry.
// A lane that cannot start now leaves the ring; it is put back when one of
// its attempts ends or the loader sees its probe come due. Caller holds e.mu.
func (e *Engine) pump() {
	if e.ready.len() == 0 {
		return
	}
	now := e.cfg.Clock.Now()
	for !e.stopping && e.inFlight < e.cfg.MaxInFlight && e.ready.len() > 0 {
		l := e.ready.pop()
		l.inReady = false
		if l.queued() == 0 || !e.canStart(l, now) {
			continue
		}
		probe := e.gate(l, now) == health.ProbeNow
		var it *item
		if l.fresh.len() > 0 {
			it = l.fresh.pop()
		} else {
			it = l.retry.pop()
		}
		it.probe = probe
		e.running[it.c.ID] = struct{}{}
		l.inFlight++
		e.inFlight++
		if e.canStart(l, now) {
			e.markReady(l)
		}
		e.attempts.Add(1)
		go e.run(l, it)
	}
}

// endAttempt gives back the endpoint's and the global concurrency slot of
// an attempt whose HTTP exchange ended, and applies what the attempt said
// about the endpoint's health to this node's view (obs nil: nothing, e.g.
// no attempt was made); the outcome is queued for the flusher to merge into
// the store.
func (e *Engine) endAttempt(l *lane, obs *health.Outcome) {
	var released []string
	var changed bool
	e.mu.Lock()
	l.inFlight--
	e.inFlight--
	if obs != nil {
		tr := e.cfg.Health.Observe(&l.ep.Health, *obs)
		l.pending = append(l.pending, *obs)
		if n := len(l.pending); n > 2*maxQueuedOutcomes {
			l.pending = append(l.pending[:0], l.pending[n-maxQueuedOutcomes:]...)
		}
		if obs.Success {
			if l.limit < e.cfg.EndpointConcurrency {
				l.limit++
			}
		} else if l.limit > 1 {
			l.limit /= 2
		}
		if changed = tr.Changed(); changed {
			released = e.onTransition(l, tr, obs.At)
		}
		// A probe's outcome replaces the probe hold in the store: merge it
		// at once so the next probe is taken on time, here or elsewhere.
		changed = changed || obs.Probe || len(l.pending) >= maxQueuedOutcomes
	}
	e.markReady(l)
	e.pump()
	e.mu.Unlock()

	if changed {
		e.flushSoon() // share the change with the other nodes now
	}
	if len(released) > 0 {
		e.releaseIDs(released)
	}
}

// onTransition reacts to a change of circuit state. Leaving enabled, the
// lane gives its queued deliveries back to the store (they wait there, not in
// memory, until a probe succeeds) and returns their IDs for release; coming
// back to enabled, the loader is asked to claim the backlog. Caller holds e.mu.
func (e *Engine) onTransition(l *lane, tr health.Transition, now time.Time) []string {
	if tr.To == health.Enabled {
		l.nextDue = earlier(l.nextDue, now)
		e.wake()
		return nil
	}
	var ids []string
	for _, q := range []*deque{&l.fresh, &l.retry} {
		for q.len() > 0 {
			it := q.pop()
			ids = append(ids, it.c.ID)
			e.forget(l, it)
		}
	}
	if len(ids) > 0 {
		l.nextDue = earlier(l.nextDue, now)
	}
	e.wake() // the loader sleeps until the next probe
	return ids
}

// forget gives back a held delivery's memory place: once its outcome is
// recorded, or when it goes back to the store. Caller holds e.mu.
func (e *Engine) forget(l *lane, it *item) {
	l.held--
	if it.fromPublish {
		e.freshHeld--
		return
	}
	l.loaded--
	e.loadHeld--
	// Refill at half empty: wake the loader when this endpoint has more due
	// work waiting in the store, or the whole window drained to half.
	if (!l.nextDue.IsZero() && l.loaded == e.cfg.EndpointWindow/2) || e.loadHeld == e.cfg.LoadWindow/2 {
		e.wake()
	}
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

type (
	deque = fifo[*item]
	ring  = fifo[*lane]
)

// gate is the lane's circuit gate at now; closed while its health is unknown.
// Caller holds e.mu.
func (e *Engine) gate(l *lane, now time.Time) health.Gate {
	if !l.known {
		return health.Closed
	}
	return e.cfg.Health.Gate(&l.ep.Health, now)
}
