package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// One batch of the writer (writer.go) is one transaction:
//
//  1. the guard: the catalog version is read once for the batch
//     (guard: locked on a shared store) and each Publish's guard applied;
//     a refused Publish writes nothing and is answered with its refusal
//     while the rest of the batch commits;
//  2. every Publish's events and deliveries together (publish.go), then
//     every Record's outcomes together (record.go), with set-based rows
//     statements;
//  3. the other writes (an Exclusive driver's), one after another;
//  4. the subscriptions whose deliveries became receivable announced to
//     the other processes (notifyQueued), the commit; each caller then
//     tells this process of its own (queuedHere), on its goroutine.
//
// Failures:
//   - a conflict with another transaction (driver.Retryable, or
//     errConcurrent) rolls the transaction back; it runs again, a few
//     times, as it was;
//   - another write that fails before any statement that may change rows
//     (its Tx.Writes did not move: a missing row, a refusal) is answered
//     with its error and the batch goes on;
//   - a request whose own statements failed (another write that had
//     written, or a Publish or Record run alone) cannot be undone alone:
//     the transaction is rolled back, that request answered with its
//     error, and the others run again in a new transaction;
//   - when the Publishes or Records written together fail on a
//     statement the database refused for its data (driver.Refused: a
//     duplicate delivery ID, text PostgreSQL cannot store), which request
//     caused it is not known: the batch runs again with each Publish and
//     Record written alone, where the failing request is found as above;
//   - any other error (the database gone, a commit whose outcome is
//     unknown) fails every request of the batch with it.
//
// Each round settles at least one request or runs a conflict again, so a
// batch always ends.

// errPanic marks the error of a write that panicked: one bad request must
// not stop the writer and strand every caller.
var errPanic = errors.New("store write panicked")

// commit writes batch and answers every request of it.
func (w *writer) commit(batch []*request) {
	merge := true
	for len(batch) > 0 {
		batch, merge = w.round(batch, merge)
	}
}

// round runs batch in one transaction, again after conflicts, and answers
// what it settles. It returns the requests to run again in a new
// transaction, and whether their publishes and outcomes go together.
func (w *writer) round(batch []*request, merge bool) (again []*request, mergeAgain bool) {
	for try := 0; ; try++ {
		res := w.run1(batch, merge)
		switch {
		case res.err == nil:
			return nil, true
		case w.s.retryable(res.err) && try < maxRetries:
			w.retried.Add(1)
			backoff(try)
			batch = res.all()
			continue
		case res.culprit != nil:
			if len(res.rest) > 0 {
				w.s.log.Warn("write batch rolled back for a failed request; retrying the others", "err", res.err, "retrying", len(res.rest))
			}
			w.answer(res.culprit, res.err)
			return res.rest, true
		case merge && len(res.rest) > 1 && w.refused(res.err):
			w.isolated.Add(1)
			w.s.log.Warn("write batch failed; writing its requests one by one", "err", res.err, "requests", len(res.rest))
			return res.rest, false
		}
		for _, r := range res.rest {
			w.answer(r, res.err)
		}
		return nil, true
	}
}

// refused reports whether err was a statement refused for its data (or a
// write that panicked): without the request that caused it the others may
// succeed.
func (w *writer) refused(err error) bool {
	return errors.Is(err, errPanic) || w.s.drv.Refused(err) && !errors.Is(err, driver.ErrRolledBack) ||
		errors.Is(err, driver.ErrRolledBack) && w.s.drv.Refused(errors.Unwrap(err))
}

// runResult is what a run of a batch left: err (nil: committed and
// answered), the request that caused it when known (culprit), and the
// requests not answered yet (rest, the culprit not among them).
type runResult struct {
	err     error
	culprit *request
	rest    []*request
}

// all is every request the run left unanswered.
func (r runResult) all() []*request {
	if r.culprit == nil {
		return r.rest
	}
	return append(r.rest, r.culprit)
}

// run1 runs batch once in a transaction of its own (see the phases above)
// and, once it committed, answers its requests.
func (w *writer) run1(batch []*request, merge bool) runResult {
	ctx := context.Background()
	if t := w.gc.Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	tx, err := w.s.drv.Begin(ctx)
	if err != nil {
		return runResult{err: fmt.Errorf("begin: %w", err), rest: batch}
	}
	res := w.phases(ctx, tx, batch, merge)
	if res.err == nil {
		var queued sqlrow.IDSet
		for _, r := range res.rest {
			for _, id := range r.queued.IDs {
				queued.Add(id)
			}
		}
		res.err = safely(w.s, func() error { return w.s.notifyQueued(ctx, tx, queued.IDs) })
	}
	if res.err != nil {
		if err := tx.Rollback(context.Background()); err != nil {
			w.s.log.Warn("rollback failed", "err", err)
		}
		return res
	}
	if err := tx.Commit(ctx); err != nil {
		return runResult{err: fmt.Errorf("commit: %w", err), rest: res.rest}
	}
	w.commits.Add(1)
	for _, r := range res.rest {
		w.answer(r, nil)
	}
	return runResult{}
}

// phases runs the guard, the publishes, the outcomes and the other writes
// of batch in tx (see above). It answers the other writes that failed
// without writing and returns the requests left to answer.
func (w *writer) phases(ctx context.Context, tx driver.Tx, batch []*request, merge bool) runResult {
	var pubs, recs, fns []*request
	for _, r := range batch {
		switch {
		case r.pub != nil:
			pubs = append(pubs, r)
		case r.rec != nil:
			recs = append(recs, r)
		default:
			fns = append(fns, r)
		}
	}
	s := w.s
	if err := safely(s, func() error { return s.guard(ctx, tx, pubs, recs) }); err != nil {
		return runResult{err: err, rest: batch}
	}
	live := pubs[:0:0]
	for _, r := range pubs {
		if r.pub.refused == nil {
			live = append(live, r)
		}
	}
	if res := w.together(ctx, tx, batch, live, recs, merge); res.err != nil {
		return res
	}
	rest := append(pubs, recs...)
	for i, r := range fns {
		before := tx.Writes()
		err := safely(s, func() error { return r.fn(tx) })
		switch {
		case err == nil:
			rest = append(rest, r)
		case tx.Writes() == before && !errors.Is(err, errPanic):
			w.answer(r, err) // nothing to undo
		default:
			return runResult{err: err, culprit: r, rest: append(rest, fns[i+1:]...)}
		}
	}
	return runResult{rest: rest}
}

// together writes the publishes pubs (their guards passed) and the
// outcomes of recs: all together when merge is set, else each request
// alone, so that a failure names its request.
func (w *writer) together(ctx context.Context, tx driver.Tx, batch, pubs, recs []*request, merge bool) runResult {
	s := w.s
	if merge {
		err := safely(s, func() error {
			if err := s.publish(ctx, tx, pubs); err != nil {
				return err
			}
			return s.record(ctx, tx, recs)
		})
		return runResult{err: err, rest: batch}
	}
	for _, r := range append(pubs[:len(pubs):len(pubs)], recs...) {
		one := []*request{r}
		err := safely(s, func() error {
			if r.pub != nil {
				return s.publish(ctx, tx, one)
			}
			return s.record(ctx, tx, one)
		})
		if err != nil {
			rest := make([]*request, 0, len(batch)-1)
			for _, o := range batch {
				if o != r {
					rest = append(rest, o)
				}
			}
			return runResult{err: err, culprit: r, rest: rest}
		}
	}
	return runResult{}
}

// safely runs fn, turning a panic into an error (errPanic).
func safely(s *Store, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in store write", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return fn()
}
