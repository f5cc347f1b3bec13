package dispatch

import (
	"sync"
	"time"
)

// workerIdle is how long a worker with nothing to do waits for the next
// attempt before it exits.
const workerIdle = 30 * time.Second

// workers runs attempts on goroutines that outlive them. An attempt's
// goroutine needs a stack of some tens of KiB (the HTTP client, the
// encoder, signing); a new goroutine per attempt started with a small one
// and grew it, copying it each time, which cost about 3 % of a delivery's
// CPU in herald bench's steady-batch (docs/benchmarks.md, "Issue 14").
//
// A job goes to a worker that is waiting for one, else to a new worker, so
// there are never more workers than jobs running at once (the engine
// bounds those with MaxInFlight) plus the idle ones, and an idle worker
// exits after workerIdle, or at stop.
type workers struct {
	jobs chan func() // unbuffered: a send succeeds only when a worker waits
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func newWorkers() *workers {
	return &workers{jobs: make(chan func()), quit: make(chan struct{})}
}

// run runs job on a worker. It never blocks.
func (w *workers) run(job func()) {
	select {
	case w.jobs <- job:
	default:
		w.wg.Add(1)
		go w.work(job)
	}
}

// work runs job, then the jobs it is given, until it has waited workerIdle
// for one or the pool stops.
func (w *workers) work(job func()) {
	defer w.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		job()
		idle.Reset(workerIdle)
		select {
		case job = <-w.jobs:
		case <-idle.C:
			return
		case <-w.quit:
			return
		}
	}
}

// stop makes the idle workers exit and waits for every worker to end. Call
// it once no job will be run any more.
func (w *workers) stop() {
	w.once.Do(func() { close(w.quit) })
	w.wg.Wait()
}
