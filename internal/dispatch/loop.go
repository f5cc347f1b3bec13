package dispatch

import (
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// loop is the shape of the engine's background services (the loader, the
// health sync, the lease keeper): one goroutine that runs a job, then
// sleeps on the engine's clock for as long as the job asked, or until
// kicked, and again, until stopped. Its methods are safe for concurrent use;
// start and stop are called once each (stop without start is allowed).
type loop struct {
	clock clock.Clock
	// job runs one round and returns how long to sleep before the next
	// (zero or less: run again at once).
	job   func() time.Duration
	kickc chan struct{} // capacity 1: kicks coalesce
	stopc chan struct{}
	done  chan struct{}
}

func newLoop(clk clock.Clock, job func() time.Duration) *loop {
	return &loop{clock: clk, job: job, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), done: make(chan struct{})}
}

// start runs the loop on its own goroutine.
func (l *loop) start() { go l.run() }

// kick makes the loop run its job again as soon as the current round ends.
func (l *loop) kick() {
	select {
	case l.kickc <- struct{}{}:
	default:
	}
}

// stop ends the loop after the round in progress and waits for it; started
// reports whether start was called.
func (l *loop) stop(started bool) {
	close(l.stopc)
	if started {
		<-l.done
	}
}

func (l *loop) run() {
	defer close(l.done)
	for {
		select {
		case <-l.stopc:
			return
		default:
		}
		d := l.job()
		if d <= 0 {
			continue
		}
		t := l.clock.NewTimer(d)
		select {
		case <-l.stopc:
			t.Stop()
			return
		case <-t.C():
		case <-l.kickc:
			t.Stop()
		}
	}
}
