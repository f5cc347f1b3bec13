package dispatch

import (
	"context"
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
)

// run performs one held delivery's attempt and records its outcome. It runs
// on its own goroutine (at most MaxInFlight). The endpoint's concurrency
// slot is given back as soon as the HTTP exchange ends, before the outcome's
// group commit; the delivery's memory place only after it.
func (e *Engine) run(l *lane, it *item) {
	defer e.attempts.Done()
	c := it.c
	sub := e.cfg.Catalog.Get(c.SubscriptionID)
	var out store.Outcome
	recorded := true
	switch {
	case sub == nil:
		// Deleted after the delivery was claimed: the store already marked it
		// dropped; give the lease back and let the delete stand.
		recorded = false
		e.endAttempt(l, nil)
		e.releaseIDs([]string{c.ID})
	case sub.Policy.Expired(c.RoundStart, e.cfg.Clock.Now()):
		// Held past its time to live (behind a closed circuit, or a late
		// claim): no attempt. A probe that sends nothing is given back.
		e.endAttempt(l, nil)
		out = e.expire(sub, c)
		if it.probe {
			e.returnProbe(l)
		}
	default:
		var ok bool
		out, ok = e.attempt(sub, c)
		if !ok {
			// Abandoned at shutdown: unrecorded, attempted again later.
			recorded = false
			e.endAttempt(l, nil)
			e.releaseIDs([]string{c.ID})
			break
		}
		e.mu.Lock()
		if l.ep.URL == "" {
			l.ep.URL = sub.URL
		}
		e.mu.Unlock()
		e.endAttempt(l, &health.Outcome{
			At:      e.cfg.Clock.Now(),
			Success: out.Status == store.StatusDelivered,
			Gone:    out.LastStatusCode == http.StatusGone,
			Probe:   it.probe,
		})
	}
	if recorded {
		if err := e.record(out); err != nil {
			e.cfg.Logger.Error("recording attempt outcome", "delivery", c.ID, "err", err)
		} else if out.Status == store.StatusDeadLettered && e.cfg.Notifier != nil {
			e.cfg.Notifier.DeliveryDeadLettered(c, sub, out)
		}
	}

	e.mu.Lock()
	if recorded && out.Status == store.StatusPending {
		l.nextDue = earlier(l.nextDue, out.NextAttemptAt)
		l.hinted = earlier(l.hinted, out.NextAttemptAt)
	}
	e.forget(l, it)
	delete(e.running, c.ID)
	// The loader claims a closed circuit's probes one at a time: let it look
	// for the next as soon as this one is done.
	gated := e.gate(l, e.cfg.Clock.Now()) != health.Open
	e.mu.Unlock()
	if gated || (recorded && out.Status == store.StatusPending) {
		e.wake()
	}
}

// attempt sends the delivery and decides what follows. ok is false when the
// attempt was abandoned because the engine is stopping.
func (e *Engine) attempt(sub *catalog.Entry, c store.Claimed) (store.Outcome, bool) {
	started := e.cfg.Clock.Now()
	res := e.send(e.attemptsCtx, sub, c, started)
	if e.attemptsCtx.Err() != nil {
		return store.Outcome{}, false
	}
	now := e.cfg.Clock.Now()
	e.cfg.Metrics.observe(res)

	out := store.Outcome{
		Attempt: store.AttemptRecord{
			DeliveryID:   c.ID,
			Number:       c.Attempts + 1,
			StartedAt:    started,
			Duration:     res.duration,
			StatusCode:   res.status,
			Outcome:      res.outcome,
			Error:        res.err,
			ResponseBody: res.body,
		},
		Attempts:       c.Attempts + 1,
		RoundAttempts:  c.RoundAttempts + 1,
		FirstFailure:   c.FirstFailure,
		LastStatusCode: res.status,
		LastOutcome:    res.outcome,
	}
	v := retry.Verdict{Kind: retry.Delivered}
	if res.err != "" || !sub.Policy.Success(res.status) {
		v = sub.Policy.Decide(retry.Attempt{
			Number:       out.RoundAttempts,
			StatusCode:   res.status,
			RetryAfter:   res.retryAfter(now),
			Start:        c.RoundStart,
			FirstFailure: c.FirstFailure,
			Now:          now,
		}, e.cfg.Rand)
		if out.FirstFailure.IsZero() {
			out.FirstFailure = now
		}
	}
	applyVerdict(&out, v, sub, now)
	return out, true
}

// expire ends a delivery whose time to live passed before its attempt.
func (e *Engine) expire(sub *catalog.Entry, c store.Claimed) store.Outcome {
	out := store.Outcome{
		Attempts:       c.Attempts,
		RoundAttempts:  c.RoundAttempts,
		FirstFailure:   c.FirstFailure,
		LastStatusCode: c.LastStatusCode,
		LastOutcome:    c.LastOutcome,
		// Number 0: nothing to log; the last attempt time stays.
		Attempt: store.AttemptRecord{DeliveryID: c.ID, StartedAt: c.LastAttemptAt},
	}
	applyVerdict(&out, retry.Verdict{Kind: retry.DeadLetter, Reason: retry.ReasonTTL}, sub, e.cfg.Clock.Now())
	return out
}

// applyVerdict writes the policy's verdict into the outcome: delivered,
// pending with a next attempt, or ended (dead-lettered, or dropped when the
// subscription does not keep dead letters; the reason is kept either way).
func applyVerdict(out *store.Outcome, v retry.Verdict, sub *catalog.Entry, now time.Time) {
	switch v.Kind {
	case retry.Delivered:
		out.Status = store.StatusDelivered
		out.DeliveredAt = now
	case retry.Retry:
		out.Status = store.StatusPending
		out.NextAttemptAt = v.At
	default:
		out.Status = store.StatusDropped
		if sub.DeadLetter {
			out.Status = store.StatusDeadLettered
		}
		out.DeadLetterReason = v.Reason
	}
}

// record writes an outcome through the recorder and waits for its commit.
func (e *Engine) record(out store.Outcome) error {
	out.LeaseOwner = e.cfg.Owner
	done := make(chan error, 1)
	e.recordQueue <- recordReq{out: out, done: done}
	err := <-done
	if err == nil {
		e.cfg.Metrics.ended(out)
	}
	return err
}

// recordQueueSize bounds outcomes waiting for the recorder; maxRecordBatch
// bounds one Store.Record call.
const (
	recordQueueSize = 4096
	maxRecordBatch  = 512
)

// recordReq is one outcome waiting to be written.
type recordReq struct {
	out  store.Outcome
	done chan<- error
}

// recorder writes outcomes in batches: it takes every outcome waiting (up
// to maxRecordBatch) into one Store.Record call, so a busy engine makes one
// store request per batch, not one per attempt. It ends when recordQueue is
// closed and drained.
func (e *Engine) recorder() {
	defer close(e.recorderDone)
	batch := make([]recordReq, 0, maxRecordBatch)
	outs := make([]store.Outcome, 0, maxRecordBatch)
	for req := range e.recordQueue {
		batch = append(batch[:0], req)
	fill:
		for len(batch) < maxRecordBatch {
			select {
			case r, ok := <-e.recordQueue:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		outs = outs[:0]
		for _, r := range batch {
			outs = append(outs, r.out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := e.cfg.Store.Record(ctx, outs)
		cancel()
		for _, r := range batch {
			r.done <- err
		}
	}
}

// releaseIDs gives deliveries back to the store, unattempted.
func (e *Engine) releaseIDs(ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.cfg.Store.Release(ctx, ids, e.cfg.Owner); err != nil {
		e.cfg.Logger.Warn("releasing deliveries", "count", len(ids), "err", err)
	}
}
