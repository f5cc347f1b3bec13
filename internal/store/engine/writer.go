package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/testsignal"
)

// The writer: the group commit of both drivers. Publish and Record calls
// (and, on a driver whose GroupCommit is Exclusive, every other write)
// become requests on a bounded queue (GroupCommit.QueueSize). Each of
// GroupCommit.Writers goroutines takes what is queued, forms a batch of
// the waiting requests (up to MaxBatch requests and MaxBatchRows rows)
// and writes it in one transaction with one commit (batch.go): one fsync,
// one WAL flush, serves the whole batch.
//
// Accounts take turns: the requests taken off the queue wait in one line
// per account (a Publish in its events' account, every other request in a
// line of its own), and a batch takes one request from each line in turn,
// so one account's many publishes cannot fill the batches another
// account's publish waits for. A large publish (more than LargeRows rows:
// a fan-out to many subscriptions) waits on a queue of its own: on a
// Staged driver it is written in steps between the batches (staged.go),
// else a writer other than the first writes it alone, so the first is
// always free for the other calls.
//
// Callers wait for their request's answer, which comes only after COMMIT
// returns. Once queued, a request runs whatever happens to its caller's
// context.

// request is one write of the writer: a Publish (pub), a Record (rec), or
// another write (fn). Each runs anew, setting its results anew, every
// time its batch runs.
type request struct {
	pub *publishReq
	rec *recordReq
	fn  func(x driver.Executor) error
	// account is the line the request waits in (a Publish's events'
	// account, "" for others); rows what it counts towards MaxBatchRows.
	account string
	rows    int
	// queued holds the subscriptions whose deliveries the request made
	// receivable, set anew on every run: announced in its transaction
	// (notifyQueued) and, once answered, by its caller (queuedHere).
	queued sqlrow.IDSet
	err    error
	done   chan struct{}
}

// writer is the store's group commit.
type writer struct {
	s  *Store
	gc driver.GroupCommit

	reqs, large chan *request
	// closeMu orders Close against queueing: a request is queued under it
	// shared, Close marks the writer closed under it exclusively.
	closeMu sync.RWMutex
	closed  atomic.Bool
	wg      sync.WaitGroup

	// mu guards the requests taken off the queues, not run yet: at most
	// QueueSize waiting, and the staged publishes in progress.
	mu      sync.Mutex
	waiting lines[*request]
	staged  lines[*stagedPublish]

	// holdAfterStep (tests only, HoldStagedAfter) makes a staged publish
	// wait after that committed step until another request is queued.
	holdAfterStep int

	commits, served, isolated, retried atomic.Int64
}

// Signals are what the store tells tests.
type Signals struct {
	// StagedStep is emitted by the writer after each committed step of a
	// staged publish (staged.go), with its steps committed so far.
	StagedStep testsignal.Signal[int]
}

// WriterStats describes the writer's work since the store opened.
type WriterStats struct {
	// Commits is the number of its transactions committed (a staged
	// publish's steps each count).
	Commits int64
	// Requests is the number of requests answered (committed or failed).
	Requests int64
	// Isolated counts batches run again request by request after a
	// statement failed on one request's data; Retried transactions run
	// again after a deadlock or a serialization failure.
	Isolated, Retried int64
}

// WriterStats returns the writer's counters.
func (s *Store) WriterStats() WriterStats {
	w := s.w
	return WriterStats{Commits: w.commits.Load(), Requests: w.served.Load(),
		Isolated: w.isolated.Load(), Retried: w.retried.Load()}
}

// HoldStagedAfter makes a staged publish, after its step-th committed
// step, wait until another request is queued, which is then written
// before its next step. For tests only; call it before the publish.
func (s *Store) HoldStagedAfter(step int) { s.w.holdAfterStep = step }

// Waiting is how many requests wait in the writer's queue, not taken yet
// (for tests).
func (s *Store) Waiting() int { return len(s.w.reqs) + len(s.w.large) }

// newWriter starts the writer's goroutines.
func newWriter(s *Store, gc driver.GroupCommit) *writer {
	w := &writer{s: s, gc: gc, reqs: make(chan *request, gc.QueueSize), large: make(chan *request, gc.QueueSize)}
	for i := range max(gc.Writers, 1) {
		w.wg.Add(1)
		go w.run(i)
	}
	return w
}

// close stops queueing (later writes fail with store.ErrClosed), lets the
// goroutines write every request queued, and waits for them.
func (w *writer) close() {
	w.closeMu.Lock()
	if w.closed.Swap(true) {
		w.closeMu.Unlock()
		return
	}
	w.closeMu.Unlock()
	close(w.reqs) // no request can be queueing now: they check closed under closeMu
	close(w.large)
	w.wg.Wait()
}

// checkOpen is store.ErrClosed once the writer is closed.
func (w *writer) checkOpen() error {
	if w.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// write queues r and waits for its answer. It gives up with ctx's error
// only while waiting for room in the queue.
func (w *writer) write(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan struct{})
	queue := w.reqs
	if r.pub != nil && r.rows > w.gc.LargeRows {
		queue = w.large
	}
	w.closeMu.RLock()
	if w.closed.Load() {
		w.closeMu.RUnlock()
		return store.ErrClosed
	}
	select {
	case queue <- r:
		w.closeMu.RUnlock()
	case <-ctx.Done():
		w.closeMu.RUnlock()
		return ctx.Err()
	}
	<-r.done
	return r.err
}

// run is writer goroutine i: it commits batches of the waiting requests
// and serves the large publishes (servesLarge), until both queues are
// closed and nothing it serves waits.
func (w *writer) run(i int) {
	defer w.wg.Done()
	reqs, large := w.reqs, w.large
	if !w.servesLarge(i) {
		large = nil
	}
	batch := make([]*request, 0, w.gc.MaxBatch)
	var lg lingering
	for {
		if large != nil && !w.gc.Staged {
			if r, ok := tryReceive(&large); ok {
				w.commit([]*request{r}) // a large publish, alone
				continue
			}
		}
		w.mu.Lock()
		w.take(&reqs, &large)
		if w.waiting.n > 0 {
			if lg.due(w.gc, w.waiting.n, w.waitingRows) {
				w.mu.Unlock()
				lg.wait(w, &reqs)
				w.mu.Lock()
			}
			batch = w.nextBatch(batch[:0])
			w.mu.Unlock()
			w.commit(batch)
			clear(batch) // let the answered requests be collected
			w.stepStaged(i)
			continue
		}
		w.mu.Unlock()
		if w.stepStaged(i) {
			continue
		}
		if reqs == nil && large == nil {
			lg.stop()
			return
		}
		lg.busy = 0 // the writer waits: it was not busy
		w.await(&reqs, &large)
	}
}

// servesLarge reports whether goroutine i takes the large publishes: the
// only one on a Staged driver (it steps them), else every one but the
// first, unless it is the only one.
func (w *writer) servesLarge(i int) bool {
	if w.gc.Staged || w.gc.Writers <= 1 {
		return i == 0
	}
	return i > 0
}

// await waits for the next request on reqs or large (a nil one is not
// waited on) and adds it (see add); a queue found closed becomes nil.
func (w *writer) await(reqs, large *chan *request) {
	select {
	case r, ok := <-*reqs:
		if !ok {
			*reqs = nil
			return
		}
		w.addWaiting(r)
	case r, ok := <-*large:
		if !ok {
			*large = nil
			return
		}
		w.addLarge(r)
	}
}

// addWaiting puts r in its line of waiting requests and returns how many
// wait.
func (w *writer) addWaiting(r *request) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting.push(r.account, r)
	return w.waiting.n
}

// addLarge stages a large publish (Staged), or commits it alone.
func (w *writer) addLarge(r *request) {
	if w.gc.Staged {
		w.mu.Lock()
		w.staged.push(r.account, &stagedPublish{r: r, p: r.pub, budget: w.gc.MaxBatchRows})
		w.mu.Unlock()
		return
	}
	w.commit([]*request{r})
}

// take adds every request queued while fewer than QueueSize wait, without
// waiting for more; on a Staged driver the large publishes queued too. A
// queue found closed becomes nil. The caller holds mu.
func (w *writer) take(reqs, large *chan *request) {
	for *reqs != nil && w.waiting.n < cap(w.reqs) {
		r, ok := tryReceive(reqs)
		if !ok {
			break
		}
		w.waiting.push(r.account, r)
	}
	for *large != nil && w.gc.Staged {
		r, ok := tryReceive(large)
		if !ok {
			break
		}
		w.staged.push(r.account, &stagedPublish{r: r, p: r.pub, budget: w.gc.MaxBatchRows})
	}
}

// tryReceive takes the next request queued on q, if one is, without
// waiting; a queue found closed becomes nil.
func tryReceive(q *chan *request) (*request, bool) {
	select {
	case r, ok := <-*q:
		if !ok {
			*q = nil
		}
		return r, ok
	default:
		return nil, false
	}
}

// nextBatch takes the waiting requests of the next transaction into dst:
// one from each account's line in turn, round after round, while the batch
// holds fewer than MaxBatch requests and its next one keeps it within
// MaxBatchRows rows (the first is taken whatever its size). The caller
// holds mu.
func (w *writer) nextBatch(dst []*request) []*request {
	rows := 0
	for w.waiting.n > 0 && len(dst) < w.gc.MaxBatch {
		r := w.waiting.head()
		if len(dst) > 0 && rows+r.rows > w.gc.MaxBatchRows {
			break
		}
		w.waiting.pop()
		dst = append(dst, r)
		rows += r.rows
	}
	return dst
}

// answer answers r with err (nil: its own, a refused Publish's), as the
// driver classifies it.
func (w *writer) answer(r *request, err error) {
	r.err = err
	if err == nil && r.pub != nil {
		r.err = r.pub.refused
	}
	r.err = w.s.drv.WriteErr(r.err)
	w.served.Add(1)
	close(r.done)
}

// maxRetries bounds the runs of a transaction after conflicts.
const maxRetries = 8

// backoff waits before run try+1 of a transaction that met a conflict.
func backoff(try int) {
	time.Sleep(time.Duration(1+try*try) * time.Millisecond)
}

// errConcurrent asks for a transaction to run again: a row it depended on
// changed between two of its statements (another process's commit).
var errConcurrent = errors.New("concurrent change; retry")

// retryable reports whether err asks for the transaction to run again.
func (s *Store) retryable(err error) bool {
	return errors.Is(err, errConcurrent) || s.drv.Retryable(err)
}
