package scheduling

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestWorkersRunEveryJobAtOnce: run never makes a job wait for another
// (each of 50 jobs that block until released has started before any is
// released), and stop returns once every job has ended and every worker
// has exited.
func TestWorkersRunEveryJobAtOnce(t *testing.T) {
	w := newWorkers()
	const n = 50
	started := make(chan struct{}, n)
	release := make(chan struct{})
	var ended atomic.Int64
	for range n {
		w.run(func() {
			started <- struct{}{}
			<-release
			ended.Add(1)
		})
	}
	for range n {
		<-started
	}
	close(release)
	// Workers that are idle again take these; the others are new ones.
	for range n {
		w.run(func() { ended.Add(1) })
	}
	w.stop()
	if got := ended.Load(); got != 2*n {
		t.Fatalf("%d jobs ended before stop returned, want %d", got, 2*n)
	}
}

// TestWorkersReuseTheLastIdle: a job goes to the worker that became idle
// last, not to a new goroutine.
func TestWorkersReuseTheLastIdle(t *testing.T) {
	w := newWorkers()
	defer w.stop()
	ran := make(chan *worker, 3)
	for range 3 { // three workers, each idle once its job ends
		w.run(func() {})
	}
	waitIdle(w, 3)
	w.mu.Lock()
	last := w.idle[2]
	w.mu.Unlock()
	w.run(func() { ran <- nil })
	<-ran
	waitIdle(w, 3)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.idle[2] != last {
		t.Fatal("the job did not go to the worker idle last")
	}
}

// waitIdle waits until n workers of w are idle.
func waitIdle(w *workers, n int) {
	for {
		w.mu.Lock()
		idle := len(w.idle)
		w.mu.Unlock()
		if idle == n {
			return
		}
		runtime.Gosched()
	}
}
