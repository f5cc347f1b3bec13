package scheduling

import (
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
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
// last, not to a new goroutine. Three jobs hold their workers until all
// three run, so that three workers exist (a job that ended before the
// next was run would have handed its worker on); synctest.Wait settles
// the workers in between (each is then blocked on its channel or timer).
func TestWorkersReuseTheLastIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorkers()
		defer w.stop()
		release := make(chan struct{})
		for range 3 {
			w.run(func() { <-release })
		}
		synctest.Wait()
		close(release)
		synctest.Wait()
		last := idleWorkers(t, w, 3)[2]
		w.run(func() {})
		synctest.Wait()
		if idleWorkers(t, w, 3)[2] != last {
			t.Fatal("the job did not go to the worker idle last")
		}
	})
}

// idleWorkers returns w's idle workers, which must be n.
func idleWorkers(t *testing.T, w *workers, n int) []*worker {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.idle) != n {
		t.Fatalf("%d workers idle, want %d", len(w.idle), n)
	}
	return slices.Clone(w.idle)
}
