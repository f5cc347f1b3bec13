package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Staged publishes. A Publish of more rows (events and deliveries) than
// GroupCommit.MaxBatchRows would hold the one writer, and every other account's
// publish behind it, for as long as all its rows take: 10,000 deliveries
// of one event take about half a second. It is written in steps instead,
// each a transaction of its own of at most MaxBatchRows rows, with a batch of
// the other requests between two steps (writer.go), and the last step
// makes it visible at once:
//
//   - The first step applies the guard (guard), looks up the events
//     already stored (duplicates: none of their deliveries is written),
//     reserves a seq for each other event (sqlite_sequence: every event
//     inserted later gets a larger one) and records the reserved range in
//     counters, named stagedPrefix and the first seq, valued the last.
//     Then, as every step, it writes the next deliveries.
//   - Deliveries are written with their event's reserved seq while no event
//     row has it. Every query that hands deliveries out or shows them joins
//     their event (ClaimDue, Receive and its NextAt, the lists,
//     GetDelivery), so they stay invisible; the pending ones the dispatcher
//     does not hold are written leased until the end of time to no owner,
//     so that the due loader's scans, which read only the lane indexes,
//     pass them by too. A subscription write between two steps treats them
//     as any delivery (a delete drops them, a new URL moves them), and a
//     step whose subscriptions changed or went since the match is refused
//     (checkStep).
//   - The step that writes the last deliveries inserts the events with
//     their reserved seqs and deletes the counter: the events and all their
//     deliveries become visible in one commit. An event another publish
//     stored meanwhile is a duplicate (ON CONFLICT DO NOTHING): its
//     deliveries are deleted by the steps that follow, which also release
//     the leases of the pending deliveries the dispatcher does not hold.
//     Then the call is answered, so the answer still comes only after
//     everything is durable.
//   - A step that fails (a guard refused, an I/O error) ends the publish:
//     steps delete what it wrote, then it is answered with the error. A
//     crash leaves the counter behind, and Open deletes every delivery in
//     its range whose event was never inserted (the driver's recoverStaged), before
//     clearing the leases of the previous run.
//
// Counts of pending and queued deliveries (metrics) include the staged
// ones.

// StagedPrefix starts the names of the counters that record a staged
// publish's reserved seqs (the driver deletes what a crash left of one at
// open).
const StagedPrefix = "staged:"

// stagedLeaseUntil is the lease of a staged pending delivery the
// dispatcher does not hold (with no owner): until it is released.
const stagedLeaseUntil = math.MaxInt64

// Statements of a staged publish: run only on a Staged driver.
var (
	// qEnsureEventSeq makes sure the events' seq counter exists;
	// qReserveEventSeqs moves it on by $1 and returns its new value (every
	// event inserted later gets a larger seq).
	qEnsureEventSeq   = query("EnsureEventSeq")
	qReserveEventSeqs = query("ReserveEventSeqs")
	// qInsertStagedRange records a reserved range: counter $1 (StagedPrefix
	// and its first seq), valued $2, its last; qDeleteStagedRange deletes
	// counter $1.
	qInsertStagedRange = query("InsertStagedRange")
	qDeleteStagedRange = query("DeleteStagedRange")
	// qInsertEventAt inserts an event at its reserved seq $1 (account $2,
	// id $3, source $4, type $5, subject $6, published_at $7, payload $8,
	// trace_context $9, '' for none, schema_errors $10, '' for none)
	// unless its key is stored: no row changed.
	qInsertEventAt = query("InsertEventAt")
	// qSubscriptionVersion reads subscription $1's catalog version.
	qSubscriptionVersion = query("SubscriptionVersion")
	// qDeleteDeliveries deletes the deliveries $1 (a list).
	qDeleteDeliveries = query("DeleteDeliveries")
	// qReleaseStaged ends the lease of the deliveries $1 (a list) still
	// leased to no owner until $2 (stagedLeaseUntil).
	qReleaseStaged = query("ReleaseStaged")
)

// The phases of a staged publish.
const (
	stageWrite  = iota // writing deliveries; the last write step reveals
	stageFinish        // revealed: deleting duplicates' deliveries, releasing leases
	stageUndo          // failed: deleting what was written
	stageDone
)

// stagedPublish is a Publish the writer writes in steps (see above). Its
// fields say what the committed steps did: a step that fails leaves them
// as they were before it.
type stagedPublish struct {
	r     *request
	p     *publishReq
	phase int
	// started: the first step committed (the seqs are reserved).
	started bool
	// seqs holds each event's reserved seq (0: a duplicate known at the
	// start, or a second occurrence in the call); fresh counts the others.
	seqs   []int64
	fresh  int
	first  int64 // the reserved range's first seq (its counter's name)
	firstC []int // each event's first occurrence in the call
	// order holds the deliveries to write (of every event but the
	// duplicates), by ID: a step of many events' deliveries then touches
	// the pages of few index entries, not of as many as it writes. pos is
	// the next to write.
	order []stagedRow
	pos   int
	// catalog is the catalog version the first step saw.
	catalog int64
	// unheld holds the pending deliveries written leased to no owner, and
	// drop those to delete (a duplicate's, once revealed; everything
	// written, when undoing); released and dropped count those done.
	unheld, drop      []string
	released, dropped int
	// counter: the reserved range's counter is still stored.
	counter bool
	err     error // the error being undone
	steps   int   // steps committed
	// budget is the rows a step writes (GroupCommit.MaxBatchRows).
	budget int
	// queued holds the subscriptions of the queued deliveries written:
	// its caller tells this process once the publish is done.
	queued sqlrow.IDSet
}

// stagedRow is a delivery to write: event ev's.
type stagedRow struct {
	ev int
	d  *store.NewDelivery
}

// stepStaged runs, on goroutine i of a Staged driver's writer, one step of
// the staged publish whose turn it is, answers it when it is done, and
// passes the turn on; it reports whether it ran one. After a committed
// step it emits StagedStep and, in a test that held that step
// (HoldStagedAfter), waits for the next request: the next batch writes it
// before any other step.
func (w *writer) stepStaged(i int) bool {
	if !w.gc.Staged || i != 0 {
		return false
	}
	w.mu.Lock()
	if w.staged.n == 0 {
		w.mu.Unlock()
		return false
	}
	j := w.staged.head()
	w.mu.Unlock()
	steps := j.steps
	done := j.step(w)
	if j.steps > steps {
		w.s.TestSignals.StagedStep.Signal(j.steps)
		if j.steps == w.holdAfterStep {
			if r, ok := <-w.reqs; ok {
				w.mu.Lock()
				w.waiting.push(r.account, r)
				w.mu.Unlock()
			}
		}
	}
	w.mu.Lock()
	if done {
		w.staged.pop()
	} else {
		w.staged.pass()
	}
	w.mu.Unlock()
	if done {
		j.r.queued = j.queued
		w.answer(j.r, j.r.err)
	}
	return true
}

// step runs the publish's next step in a transaction of its own and
// reports whether it is done (j.r.err then holds its answer).
func (j *stagedPublish) step(w *writer) (done bool) {
	saved := *j
	var err error
	switch j.phase {
	case stageWrite:
		err = w.inTx(func(ctx context.Context, x driver.Executor) error { return j.write(ctx, w.s, x) })
	case stageFinish, stageUndo:
		err = w.inTx(func(ctx context.Context, x driver.Executor) error { return j.finish(ctx, x) })
	}
	if err == nil {
		j.steps++
		if j.phase == stageDone {
			j.r.err = j.err
			if j.err == nil {
				j.r.err = j.p.refused
			}
		}
		return j.phase == stageDone
	}
	*j = saved // the step's writes were rolled back
	switch {
	case j.phase == stageWrite && !j.started: // nothing was written
		j.r.err = err
		return true
	case j.phase == stageWrite:
		j.err, j.phase = err, stageUndo
		j.drop, j.dropped = j.written(), 0
		return false
	case j.phase == stageUndo:
		// What is left stays invisible, and its counter stored: the next
		// open deletes it.
		w.s.log.Error("deleting what a failed publish wrote failed; the next start deletes it", "err", err, "publish error", j.err)
		j.r.err = j.err
		return true
	default: // stageFinish: the publish is committed and visible
		w.s.log.Error("finishing a committed publish failed; the next start releases its deliveries", "err", err)
		j.r.err = nil
		return true
	}
}

// inTx runs fn in a transaction of its own and commits it; it rolls back
// and returns the error when fn (or the commit) fails.
func (w *writer) inTx(fn func(ctx context.Context, x driver.Executor) error) error {
	ctx := context.Background()
	tx, err := w.s.drv.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := safely(w.s, func() error { return fn(ctx, tx) }); err != nil {
		if rerr := tx.Rollback(ctx); rerr != nil {
			w.s.log.Warn("rollback failed", "err", rerr)
		}
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	w.commits.Add(1)
	return nil
}

// written returns the IDs of the deliveries the committed steps wrote.
func (j *stagedPublish) written() []string {
	ids := make([]string, j.pos)
	for i, r := range j.order[:j.pos] {
		ids[i] = r.d.ID
	}
	return ids
}

// write is a step of stageWrite: the first one starts the publish; each
// writes the next deliveries, and the one that writes the last reveals the
// events when they fit in its rows too. A refused guard ends the publish
// with nothing written.
func (j *stagedPublish) write(ctx context.Context, s *Store, x driver.Executor) error {
	budget := j.budget
	if !j.started {
		if err := s.guard(ctx, x, []*request{j.r}, nil); err != nil {
			return err
		}
		if j.p.refused != nil {
			return j.p.refused
		}
		if err := j.start(ctx, x); err != nil {
			return err
		}
		budget = max(budget-len(j.p.events), 1)
	}
	rows := j.order[j.pos:min(j.pos+budget, len(j.order))]
	if j.started {
		if err := j.checkStep(ctx, x, rows); err != nil {
			return err
		}
	}
	j.started = true
	var ds deliveryRows
	for _, r := range rows {
		ne := &j.p.events[r.ev]
		status, owner, until := deliveryState(r.d, j.p.opts.Lease, &j.queued)
		if status == delivery.StatusPending && !r.d.Claimed {
			owner, until = "", stagedLeaseUntil
			j.unheld = append(j.unheld, r.d.ID)
		}
		ds.add1(r.d, account.OrDefault(ne.AccountID), j.seqs[r.ev], string(status), sqlrow.UnixMS(ne.PublishedAt), owner, until)
	}
	if len(ds.id) > 0 {
		if _, err := x.Exec(ctx, qInsertDeliveries, ds.args()...); err != nil {
			return fmt.Errorf("insert deliveries %q…: %w", ds.id[0], err)
		}
	}
	j.pos += len(rows)
	if j.pos < len(j.order) || len(rows)+j.fresh > budget && len(rows) > 0 {
		return nil // more deliveries, or the events go in a step of their own
	}
	return j.reveal(ctx, x)
}

// start is the first step's beginning: it finds the duplicates, reserves
// the seqs of the other events and records them in a counter.
func (j *stagedPublish) start(ctx context.Context, x driver.Executor) error {
	evs := j.p.events
	j.p.results = make([]store.PublishResult, len(evs))
	j.seqs, j.firstC, j.fresh = make([]int64, len(evs)), make([]int, len(evs)), 0
	firstOf := make(map[eventKey]int, len(evs))
	stored := newEventRows()
	for i := range evs {
		k := eventKeyOf(&evs[i])
		f, seen := firstOf[k]
		if !seen {
			f = i
			firstOf[k] = i
			stored.add(&evs[i])
		}
		j.firstC[i] = f
	}
	stored.seqs, stored.inserted = make([]int64, len(stored.keys)), make([]bool, len(stored.keys))
	if err := x.Query(ctx, qEventSeqs, stored.scan(false), stored.acc, stored.id, stored.src); err != nil {
		return fmt.Errorf("look up stored events: %w", err)
	}
	for i := range evs {
		if j.firstC[i] != i {
			continue // a duplicate of an earlier event (its result is set with it)
		}
		if seq := stored.seqs[stored.slots[eventKeyOf(&evs[i])]]; seq != 0 {
			j.p.results[i] = store.PublishResult{Seq: seq, Duplicate: true}
			continue
		}
		j.fresh++
		j.seqs[i] = -1 // reserved below
	}
	if err := x.QueryRow(ctx, qCatalogVersion).Scan(&j.catalog); err != nil {
		return fmt.Errorf("read the catalog version: %w", err)
	}
	if j.fresh == 0 {
		return nil
	}
	return j.reserve(ctx, x)
}

// reserve reserves the seqs of the fresh events, records the range in a
// counter and orders their deliveries.
func (j *stagedPublish) reserve(ctx context.Context, x driver.Executor) error {
	if _, err := x.Exec(ctx, qEnsureEventSeq); err != nil {
		return fmt.Errorf("reserve event seqs: %w", err)
	}
	var last int64
	if err := x.QueryRow(ctx, qReserveEventSeqs, j.fresh).Scan(&last); err != nil {
		return fmt.Errorf("reserve event seqs: %w", err)
	}
	j.first = last - int64(j.fresh) + 1
	next := j.first
	j.order = j.order[:0]
	evs := j.p.events
	for i := range j.seqs {
		if j.seqs[i] != -1 {
			continue
		}
		j.seqs[i], next = next, next+1
		for k := range evs[i].Deliveries {
			j.order = append(j.order, stagedRow{i, &evs[i].Deliveries[k]})
		}
	}
	slices.SortStableFunc(j.order, func(a, b stagedRow) int { return strings.Compare(a.d.ID, b.d.ID) })
	if _, err := x.Exec(ctx, qInsertStagedRange, j.rangeName(), last); err != nil {
		return fmt.Errorf("record the reserved event seqs: %w", err)
	}
	j.counter = true
	return nil
}

// rangeName names the counter of the publish's reserved range.
func (j *stagedPublish) rangeName() string { return StagedPrefix + strconv.FormatInt(j.first, 10) }

// checkStep refuses rows, the deliveries of a step after the first, when
// their subscriptions changed since the match: once the catalog version
// moved past the one the first step saw, each subscription must still
// exist and, under a CatalogVersion guard, be no newer than it (with
// RequireSubscriptions it must only exist, as the guard says).
func (j *stagedPublish) checkStep(ctx context.Context, x driver.Executor, rows []stagedRow) error {
	var v int64
	if err := x.QueryRow(ctx, qCatalogVersion).Scan(&v); err != nil || v == j.catalog {
		return err
	}
	seen := map[string]bool{}
	for _, r := range rows {
		id := r.d.SubscriptionID
		if seen[id] {
			continue
		}
		seen[id] = true
		var version int64
		switch err := x.QueryRow(ctx, qSubscriptionVersion, id).Scan(&version); {
		case errors.Is(err, driver.ErrNoRows):
			return &store.StaleCatalogError{Version: v}
		case err != nil:
			return fmt.Errorf("check subscription %s: %w", id, err)
		case j.p.opts.CatalogVersion > 0 && version > j.p.opts.CatalogVersion:
			return &store.StaleCatalogError{Version: v}
		}
	}
	return nil
}

// reveal inserts the events with their reserved seqs, making them and
// every delivery written for them visible, and sets the results.
func (j *stagedPublish) reveal(ctx context.Context, x driver.Executor) error {
	evs := j.p.events
	for i, seq := range j.seqs {
		if seq == 0 {
			continue
		}
		ev := &evs[i]
		payload := ev.Payload
		if payload == nil {
			payload = []byte{}
		}
		k := eventKeyOf(ev)
		n, err := x.Exec(ctx, qInsertEventAt, seq, k.account, ev.ID, ev.Source, ev.Type, ev.Subject,
			sqlrow.UnixMS(ev.PublishedAt), payload, ev.TraceContext, string(ev.SchemaErrors))
		if err != nil {
			return fmt.Errorf("insert event %q from %q: %w", ev.ID, ev.Source, err)
		}
		if n == 1 {
			j.p.results[i] = store.PublishResult{Seq: seq}
			continue
		}
		// Stored by another publish since the first step.
		stored := newEventRows()
		stored.add(ev)
		stored.seqs, stored.inserted = make([]int64, 1), make([]bool, 1)
		if err := x.Query(ctx, qEventSeqs, stored.scan(false), stored.acc, stored.id, stored.src); err != nil {
			return fmt.Errorf("look up event %q from %q: %w", ev.ID, ev.Source, err)
		}
		j.p.results[i] = store.PublishResult{Seq: stored.seqs[0], Duplicate: true}
		for _, d := range ev.Deliveries {
			j.drop = append(j.drop, d.ID)
		}
	}
	for i, f := range j.firstC {
		if f != i {
			j.p.results[i] = store.PublishResult{Seq: j.p.results[f].Seq, Duplicate: true}
		}
	}
	j.phase = stageFinish
	return j.finish(ctx, x)
}

// finish deletes the deliveries in drop and releases those in unheld, up
// to MaxBatchRows of them a step; once none is left, it deletes the
// counter and the publish is done.
func (j *stagedPublish) finish(ctx context.Context, x driver.Executor) error {
	budget := j.budget
	if n := min(len(j.drop)-j.dropped, budget); n > 0 {
		if _, err := x.Exec(ctx, qDeleteDeliveries, j.drop[j.dropped:j.dropped+n]); err != nil {
			return fmt.Errorf("delete deliveries: %w", err)
		}
		j.dropped, budget = j.dropped+n, budget-n
	}
	if n := min(len(j.unheld)-j.released, budget); j.phase == stageFinish && n > 0 {
		if _, err := x.Exec(ctx, qReleaseStaged, j.unheld[j.released:j.released+n], int64(stagedLeaseUntil)); err != nil {
			return fmt.Errorf("release deliveries: %w", err)
		}
		j.released += n
	}
	if j.dropped < len(j.drop) || j.phase == stageFinish && j.released < len(j.unheld) {
		return nil
	}
	if j.counter {
		if _, err := x.Exec(ctx, qDeleteStagedRange, j.rangeName()); err != nil {
			return fmt.Errorf("delete the reserved event seqs: %w", err)
		}
		j.counter = false
	}
	j.phase = stageDone
	return nil
}
