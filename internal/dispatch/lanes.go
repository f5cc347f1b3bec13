package dispatch

import (
	"time"

	"github.com/herald-events/herald/internal/store"
)

// item is a delivery held in memory, waiting for or in its attempt.
type item struct {
	c           store.Claimed
	fromPublish bool // counts against FreshWindow, else LoadWindow
}

// lane is one endpoint's queues and counters. Guarded by Engine.mu.
type lane struct {
	id       string
	fresh    deque // first attempts
	retry    deque // later attempts
	inFlight int
	limit    int
	held     int       // held in memory from either source, until recorded
	loaded   int       // of which taken by the loader (or reserved for it)
	nextDue  time.Time // earliest unleased due delivery in the store; zero: none known
	hinted   time.Time // earliest hint received since the loader's last claim began
	inReady  bool
}

func (l *lane) queued() int { return l.fresh.len() + l.retry.len() }

// laneFor returns the endpoint's lane, creating it. Caller holds e.mu.
func (e *Engine) laneFor(id string) *lane {
	l := e.lanes[id]
	if l == nil {
		l = &lane{id: id, limit: e.cfg.EndpointConcurrency}
		e.lanes[id] = l
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

func (e *Engine) markReady(l *lane) {
	if !l.inReady && l.queued() > 0 && l.inFlight < l.limit {
		l.inReady = true
		e.ready.push(l)
	}
}

// pump starts attempts while there is a ready endpoint and a free global
// slot: one attempt per endpoint per turn, round-robin, fresh before retry.
// Caller holds e.mu.
func (e *Engine) pump() {
	for !e.stopping && e.inFlight < e.cfg.MaxInFlight && e.ready.len() > 0 {
		l := e.ready.pop()
		l.inReady = false
		var it *item
		if l.fresh.len() > 0 {
			it = l.fresh.pop()
		} else if l.retry.len() > 0 {
			it = l.retry.pop()
		} else {
			continue
		}
		l.inFlight++
		e.inFlight++
		e.markReady(l)
		e.attempts.Add(1)
		go e.run(l, it)
	}
}

// endAttempt gives back the endpoint's and the global concurrency slot of
// an attempt whose HTTP exchange ended.
func (e *Engine) endAttempt(l *lane) {
	e.mu.Lock()
	l.inFlight--
	e.inFlight--
	e.markReady(l)
	e.pump()
	e.mu.Unlock()
}

// finish gives back a delivery's memory place once its outcome is recorded
// (or it was given back to the store). Caller holds e.mu.
func (e *Engine) finish(l *lane, it *item) {
	l.held--
	if it.fromPublish {
		e.freshHeld--
	} else {
		l.loaded--
		e.loadHeld--
		// Refill at half empty: wake the loader when this endpoint has more
		// due work waiting in the store, or the whole window drained to half.
		if (!l.nextDue.IsZero() && l.loaded == e.cfg.EndpointWindow/2) || e.loadHeld == e.cfg.LoadWindow/2 {
			e.wake()
		}
	}
	// A lane with nothing held, reserved or known due is forgotten; it is
	// made again when work for its endpoint appears.
	if l.held == 0 && l.loaded == 0 && l.nextDue.IsZero() && l.hinted.IsZero() {
		delete(e.lanes, l.id)
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
