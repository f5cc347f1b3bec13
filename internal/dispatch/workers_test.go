package dispatch

import (
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
