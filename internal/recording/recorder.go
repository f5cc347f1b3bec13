// Package recording is the last stage of the delivery path: it writes
// attempt outcomes to the store in group commits, reports what they mean
// (metrics, operational events, the log), and returns each result on
// Results, where the scheduler frees the delivery's memory place.
//
// It calls no earlier stage: the attempting stage hands it outcomes (Add),
// and its answers leave by the Results channel.
//
// Bounds: at most recordQueueSize outcomes wait (Add blocks beyond), one
// Store.Record call writes at most maxRecordBatch, each call is bounded by
// Config.StoreTimeout, and at most resultsQueueSize batches of results wait
// on Results.
package recording

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// recordQueueSize bounds outcomes waiting for the recorder; maxRecordBatch
// bounds one Store.Record call; resultsQueueSize bounds the batches of
// results waiting on Results.
const (
	recordQueueSize  = 4096
	maxRecordBatch   = 512
	resultsQueueSize = 64
)

// Outcome writes that fail are tried again after recordRetryFirst,
// doubling up to recordRetryMax.
const (
	recordRetryFirst = time.Second
	recordRetryMax   = 30 * time.Second
)

// Store is what the recorder needs of the store.
type Store interface {
	Record(ctx context.Context, outcomes []store.Outcome) (applied []bool, err error)
}

// Subscriptions is the recorder's view of the subscriptions: the catalog,
// synced at once after a deactivation.
type Subscriptions interface {
	Sync(ctx context.Context) error
}

// Notifier hears of the outcomes operators may want to know. Calls are
// made on the recorder's goroutine and must not block for long.
type Notifier interface {
	// DeliveryDeadLettered reports a delivery that was dead-lettered.
	DeliveryDeadLettered(c store.Claimed, sub *catalog.Entry, out store.Outcome)
	// SubscriptionDeactivated reports a push subscription deactivated by
	// the failed push of delivery c (its events are queued from now on).
	SubscriptionDeactivated(sub *catalog.Entry, c store.Claimed, out store.Outcome)
}

// Config configures a Recorder.
type Config struct {
	Store    Store
	Catalog  Subscriptions
	Clock    clock.Clock  // default clock.Real{}
	Logger   *slog.Logger // default discards
	Metrics  *Metrics     // default: a Metrics on a private registry
	Notifier Notifier     // optional
	// StoreTimeout bounds one Store.Record call (default 30s).
	StoreTimeout time.Duration
}

// Request is one outcome to write: the delivery it ends (or schedules
// again) and its subscription (nil: deleted).
type Request struct {
	Outcome      store.Outcome
	Delivery     *store.Claimed
	Subscription *catalog.Entry
	// URL is where the attempt went, or would have gone (the
	// subscription's URL, or its dead-letter URL), for the log; "" when
	// the subscription is gone.
	URL string
	// Refused, for an attempt Herald refused to make (its outcome
	// destination_blocked), is the refusal: the address and how to allow
	// it, for the log.
	Refused *destination.Refusal
}

// Result is what became of one Request.
type Result struct {
	// Delivery is the request's delivery.
	Delivery *store.Claimed
	// Err is set when the outcome was not written (given up at stop): the
	// delivery is to go back to the store, to be attempted again.
	Err error
	// Next is when a delivery left pending is due again (zero: it ended).
	Next time.Time
	// DeadLetterEndpoint is the endpoint of the dead-letter copy the
	// outcome wrote, due now ("": none).
	DeadLetterEndpoint string
}

// Recorder writes attempt outcomes to the store in batches: it takes every
// outcome waiting (up to maxRecordBatch) into one Record call, so a busy
// node makes one store request per batch, not one per attempt. A batch
// whose write fails is written again, after a growing pause on the clock,
// until it succeeds: its deliveries stay held in memory meanwhile, and
// attempts that finish wait for room in the queue, so a failing store slows
// delivery down instead of losing what it did. After GiveUp (a hard stop),
// a batch still failing is given up with its error.
//
// Its lifecycle is startstop's with one difference: it ends only when Stop
// closes its intake, never on its context alone, since every outcome of an
// attempt made must be written or given back. Stop it once nothing will
// call Add (after the scheduler's Stop); Results is closed when it ends.
type Recorder struct {
	startstop.Base
	cfg       Config
	log       *slog.Logger
	queue     chan Request
	results   chan []Result
	quit      chan struct{} // closed by GiveUp
	closeOnce sync.Once
	quitOnce  sync.Once
	announce  announcements // deactivations announced
	lines     *lineBudget   // the delivery lines' bound, per endpoint
}

// New returns a recorder that has not started.
func New(cfg Config) *Recorder {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = 30 * time.Second
	}
	log := cfg.Logger.With("component", "recorder")
	return &Recorder{
		cfg: cfg, log: log, lines: newLineBudget(cfg.Clock, log),
		queue:   make(chan Request, recordQueueSize),
		results: make(chan []Result, resultsQueueSize),
		quit:    make(chan struct{}),
	}
}

// Start runs the recorder on a goroutine of its own.
func (r *Recorder) Start(ctx context.Context) error {
	r.StartGo(ctx, func(context.Context) { r.run() })
	return nil
}

// Stop closes the intake, writes what is queued (after GiveUp, a failing
// batch is given up) and waits until the recorder has ended.
func (r *Recorder) Stop() {
	r.closeOnce.Do(func() { close(r.queue) })
	r.Base.Stop()
}

// GiveUp makes a batch whose write keeps failing end with its error instead
// of being tried again (a hard stop).
func (r *Recorder) GiveUp() { r.quitOnce.Do(func() { close(r.quit) }) }

// Add queues an outcome, waiting for room. No Add may follow Stop.
func (r *Recorder) Add(req Request) { r.queue <- req }

// Results carries the result of every request, a batch at a time, in the
// order written; it is closed when the recorder ends.
func (r *Recorder) Results() <-chan []Result { return r.results }

// run writes what is queued, a batch at a time, and closes the delivery
// lines' intervals as they end (see lineBudget), until the intake is
// closed and drained.
func (r *Recorder) run() {
	defer close(r.results)
	defer r.lines.stop()
	batch := make([]Request, 0, maxRecordBatch)
	for {
		select {
		case req, ok := <-r.queue:
			if !ok {
				return
			}
			batch = r.fill(append(batch[:0], req))
			res := make([]Result, 0, len(batch))
			res = r.write(batch, res)
			r.results <- res
			clear(batch)
		case <-r.lines.due():
			r.lines.expire()
		}
	}
}

// fill adds to batch the requests waiting, up to maxRecordBatch.
func (r *Recorder) fill(batch []Request) []Request {
	for len(batch) < maxRecordBatch {
		select {
		case q, ok := <-r.queue:
			if !ok {
				return batch
			}
			batch = append(batch, q)
		default:
			return batch
		}
	}
	return batch
}

// recordSplitAfter is how many failed tries of a batch of several outcomes
// are made before it is halved, so that one outcome the store refuses
// cannot hold the others back.
const recordSplitAfter = 3

// write records batch, again after failures, until it succeeds or the
// recorder is told to give up, and appends each request's result to res.
func (r *Recorder) write(batch []Request, res []Result) []Result {
	wait := recordRetryFirst
	for tries := 1; ; tries++ {
		applied, err := r.try(batch)
		if err == nil {
			for i, q := range batch {
				res = append(res, r.report(q, applied[i]))
			}
			return res
		}
		if len(batch) > 1 && tries >= recordSplitAfter {
			h := len(batch) / 2
			res = r.write(batch[:h], res)
			return r.write(batch[h:], res)
		}
		r.log.Warn("recording attempt outcomes failed; trying again", "outcomes", len(batch), "in", wait, "err", err)
		t := r.cfg.Clock.NewTimer(wait)
		select {
		case <-r.quit:
			t.Stop()
			for _, q := range batch {
				r.log.Error("recording an attempt outcome failed; the delivery will be attempted again", "delivery_id", q.Delivery.ID, "err", err)
				res = append(res, Result{Delivery: q.Delivery, Err: err})
			}
			return res
		case <-t.C():
		}
		wait = min(2*wait, recordRetryMax)
	}
}

// try makes one Record call of batch's outcomes and returns which applied.
func (r *Recorder) try(batch []Request) ([]bool, error) {
	outs := make([]store.Outcome, len(batch))
	for i, q := range batch {
		outs[i] = q.Outcome
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.StoreTimeout)
	defer cancel()
	return r.cfg.Store.Record(ctx, outs)
}
