package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/store"
)

// recordQueueSize bounds outcomes waiting for the recorder; maxRecordBatch
// bounds one Store.Record call.
const (
	recordQueueSize = 4096
	maxRecordBatch  = 512
)

// Outcome writes that fail are tried again after recordRetryFirst,
// doubling up to recordRetryMax.
const (
	recordRetryFirst = time.Second
	recordRetryMax   = 30 * time.Second
)

// recordReq is one outcome waiting to be written; done is called with the
// result once (on the recorder's goroutine: it must not block for long).
type recordReq struct {
	out  store.Outcome
	done func(err error)
}

// recorder writes attempt outcomes to the store in batches: it takes every
// outcome waiting (up to maxRecordBatch) into one Record call, so a busy
// engine makes one store request per batch, not one per attempt. A batch
// whose write fails is written again, after a growing pause on the clock,
// until it succeeds: its deliveries stay held in memory meanwhile, and
// attempts that finish wait for room in the queue, so a failing store slows
// the engine down instead of losing what it did. At stop, a batch still
// failing is given up with its error (the engine then gives the deliveries
// back to the store, to be attempted again).
type recorder struct {
	record  func(ctx context.Context, outs []store.Outcome) error
	clock   clock.Clock
	log     *slog.Logger
	timeout time.Duration // of one Record call
	queue   chan recordReq
	quit    chan struct{} // closed to give up retrying
	done    chan struct{}
}

func newRecorder(record func(context.Context, []store.Outcome) error, clk clock.Clock, log *slog.Logger, timeout time.Duration) *recorder {
	r := &recorder{
		record: record, clock: clk, log: log, timeout: timeout,
		queue: make(chan recordReq, recordQueueSize), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go r.run()
	return r
}

// add queues an outcome, waiting for room.
func (r *recorder) add(req recordReq) { r.queue <- req }

// stop writes what is queued and ends. Once ctx ends, a failing batch is
// given up instead of tried again. No add may follow.
func (r *recorder) stop(ctx context.Context) {
	close(r.queue)
	select {
	case <-r.done:
	case <-ctx.Done():
		close(r.quit)
		<-r.done
	}
}

func (r *recorder) run() {
	defer close(r.done)
	batch := make([]recordReq, 0, maxRecordBatch)
	for req := range r.queue {
		batch = append(batch[:0], req)
	fill:
		for len(batch) < maxRecordBatch {
			select {
			case q, ok := <-r.queue:
				if !ok {
					break fill
				}
				batch = append(batch, q)
			default:
				break fill
			}
		}
		r.write(batch)
		clear(batch)
	}
}

// recordSplitAfter is how many failed tries of a batch of several outcomes
// are made before it is halved, so that one outcome the store refuses
// cannot hold the others back.
const recordSplitAfter = 3

// write records batch and answers each request: again after failures,
// until it succeeds or the recorder is told to give up.
func (r *recorder) write(batch []recordReq) {
	wait := recordRetryFirst
	for tries := 1; ; tries++ {
		err := r.try(batch)
		if err == nil {
			for _, q := range batch {
				q.done(nil)
			}
			return
		}
		if len(batch) > 1 && tries >= recordSplitAfter {
			h := len(batch) / 2
			r.write(batch[:h])
			r.write(batch[h:])
			return
		}
		r.log.Warn("recording attempt outcomes failed; trying again", "outcomes", len(batch), "in", wait, "err", err)
		t := r.clock.NewTimer(wait)
		select {
		case <-r.quit:
			t.Stop()
			for _, q := range batch {
				q.done(err)
			}
			return
		case <-t.C():
		}
		wait = min(2*wait, recordRetryMax)
	}
}

// try makes one Record call of batch's outcomes.
func (r *recorder) try(batch []recordReq) error {
	outs := make([]store.Outcome, len(batch))
	for i, q := range batch {
		outs[i] = q.out
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	return r.record(ctx, outs)
}
