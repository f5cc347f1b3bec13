package scheduling

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
// A job goes to the worker that became idle last, else to a new worker:
// there are never more workers than jobs running at once (the scheduler
// bounds those with MaxInFlight) plus the idle ones. Last in, first out
// keeps the busy workers few and their stacks grown, where handing jobs
// round to every idle worker would leave each idle long enough for the
// garbage collector to shrink its stack (it halves a stack that is mostly
// unused) and the next job to grow it again. An idle worker exits after
// workerIdle, or at stop.
type workers struct {
	mu   sync.Mutex
	idle []*worker // the idle workers, the one idle longest first
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// worker is one goroutine of workers; jobs hands it its next job.
type worker struct {
	jobs chan func() // buffered: a job is handed over without waiting
}

func newWorkers() *workers {
	return &workers{quit: make(chan struct{})}
}

// run runs job on a worker. It never blocks.
func (ws *workers) run(job func()) {
	ws.mu.Lock()
	if n := len(ws.idle); n > 0 {
		w := ws.idle[n-1]
		ws.idle[n-1] = nil
		ws.idle = ws.idle[:n-1]
		ws.mu.Unlock()
		w.jobs <- job
		return
	}
	ws.mu.Unlock()
	ws.wg.Add(1)
	go ws.work(&worker{jobs: make(chan func(), 1)}, job)
}

// work runs job, then the jobs it is handed, until it has been idle for
// workerIdle or the pool stops.
func (ws *workers) work(w *worker, job func()) {
	defer ws.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		job()
		ws.mu.Lock()
		ws.idle = append(ws.idle, w)
		ws.mu.Unlock()
		idle.Reset(workerIdle)
		select {
		case job = <-w.jobs:
			continue
		case <-idle.C:
		case <-ws.quit:
		}
		if !ws.retire(w) {
			job = <-w.jobs // run took it off the idle list: its job is coming
			continue
		}
		return
	}
}

// retire takes w off the idle list; false when it is not there any more
// (run has handed it a job).
func (ws *workers) retire(w *worker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i, x := range ws.idle {
		if x == w {
			ws.idle = append(ws.idle[:i], ws.idle[i+1:]...)
			return true
		}
	}
	return false
}

// stop makes the idle workers exit and waits for every worker to end. Call
// it once no job will be run any more.
func (ws *workers) stop() {
	ws.once.Do(func() { close(ws.quit) })
	ws.wg.Wait()
}
