package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Staged publishes. A Publish of more rows (events and deliveries) than
// Options.MaxTxRows would hold the one writer, and every other account's
// publish behind it, for as long as all its rows take: 10,000 deliveries
// of one event take about half a second. It is written in steps instead,
// each a transaction of its own of at most MaxTxRows rows, with a batch of
// the other requests between two steps (writer.run), and the last step
// makes it visible at once:
//
//   - The first step applies the guard (checkCatalog), looks up the events
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
//     its range whose event was never inserted (recoverStaged), before
//     clearing the leases of the previous run.
//
// Counts of pending and queued deliveries (metrics) include the staged
// ones.

const (
	// stagedPrefix starts the counters that record a staged publish's
	// reserved seqs.
	stagedPrefix = "staged:"
	// stagedLeaseUntil is the lease of a staged pending delivery the
	// dispatcher does not hold (with no owner): until it is released.
	stagedLeaseUntil = math.MaxInt64

	ensureEventSeqSQL = `INSERT INTO sqlite_sequence (name, seq)
SELECT 'events', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events')`
	reserveEventSeqsSQL = `UPDATE sqlite_sequence SET seq = seq + ? WHERE name = 'events' RETURNING seq`
	insertCounterSQL    = `INSERT INTO counters (name, value) VALUES (?, ?)`
	deleteCounterSQL    = `DELETE FROM counters WHERE name = ?`
	stagedCountersSQL   = `SELECT name, value FROM counters WHERE name LIKE 'staged:%'`

	insertStagedEventSQL = `INSERT INTO events (seq, account_id, id, source, type, subject, published_at, payload, trace_context)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id, source, account_id) DO NOTHING`
	subscriptionVersionSQL = `SELECT version FROM subscriptions WHERE id = ?`
	deleteDeliverySQL      = `DELETE FROM deliveries WHERE id = ?`
	releaseStagedSQL       = `UPDATE deliveries SET lease_until = 0 WHERE id = ? AND lease_owner = '' AND lease_until = ?`
	// deleteUnstagedSQL deletes the deliveries of a reserved range (first,
	// last) whose event was never inserted.
	deleteUnstagedSQL = `DELETE FROM deliveries WHERE event_seq BETWEEN ?1 AND ?2
AND NOT EXISTS (SELECT 1 FROM events WHERE seq = deliveries.event_seq)`
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
	// duplicates), by subscription, then in event order: a step of many
	// events' deliveries then touches the pages of a few subscriptions'
	// index entries, not of as many as it writes. pos is the next to write.
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
}

// step runs the publish's next step in a transaction of its own and
// reports whether it is done (answered with r.err set).
func (j *stagedPublish) step(w *writer) (done bool) {
	saved := *j
	var err error
	switch j.phase {
	case stageWrite:
		err = w.inTx(j.write)
	case stageFinish, stageUndo:
		err = w.inTx(j.finish)
	}
	if err == nil {
		j.steps++
		if j.phase == stageDone && j.err != nil {
			j.r.err = j.err
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
		// Open deletes it.
		w.log.Error("deleting what a failed publish wrote failed; the next start deletes it", "err", err, "publish error", j.err)
		j.r.err = j.err
		return true
	default: // stageFinish: the publish is committed and visible
		w.log.Error("finishing a committed publish failed; the next start releases its deliveries", "err", err)
		return true
	}
}

// inTx runs fn in a transaction of its own and commits it; it rolls back
// and returns the error when fn (or the commit) fails.
func (w *writer) inTx(fn func(w *writer) error) error {
	w.catalogVersion, w.lastEventSeq = 0, -1
	if _, err := w.exec("BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := w.safely(fn); err != nil {
		w.rollback()
		return err
	}
	if _, err := w.exec("COMMIT"); err != nil {
		w.rollback()
		return fmt.Errorf("commit: %w", err)
	}
	w.commits.Add(1)
	return nil
}

// stagedRow is a delivery to write: event ev's.
type stagedRow struct {
	ev int
	d  *store.NewDelivery
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
// events when they fit in its rows too.
func (j *stagedPublish) write(w *writer) error {
	budget := w.maxTxRows
	if !j.started {
		if err := j.p.guard(w); err != nil {
			return err
		}
		if err := j.start(w); err != nil {
			return err
		}
		budget = max(budget-len(j.p.events), 1)
	}
	rows := j.order[j.pos:min(j.pos+budget, len(j.order))]
	if j.started {
		if err := j.checkStep(w, rows); err != nil {
			return err
		}
	}
	j.started = true
	var vals publishRows
	for _, r := range rows {
		ne := &j.p.events[r.ev]
		status, owner, until := j.p.deliveryState(r.d)
		if status == delivery.StatusPending && !r.d.Claimed {
			owner, until = "", stagedLeaseUntil
			j.unheld = append(j.unheld, r.d.ID)
		}
		at := sqlrow.UnixMS(ne.PublishedAt)
		vals.add(r.d.ID, account.OrDefault(ne.AccountID), r.d.SubscriptionID, r.d.EndpointID, j.seqs[r.ev],
			string(status), at, at, at, owner, until, sqlrow.OrderingKey(r.d.OrderingKey))
		if vals.full() {
			if err := vals.flush(w); err != nil {
				return err
			}
		}
	}
	if err := vals.flush(w); err != nil {
		return err
	}
	j.pos += len(rows)
	if j.pos < len(j.order) || len(rows)+j.fresh > budget && len(rows) > 0 {
		return nil // more deliveries, or the events go in a step of their own
	}
	return j.reveal(w)
}

// start is the first step's beginning: it finds the duplicates, reserves
// the seqs of the other events and records them in a counter.
func (j *stagedPublish) start(w *writer) error {
	evs := j.p.events
	j.seqs, j.firstC, j.fresh = make([]int64, len(evs)), make([]int, len(evs)), 0
	type key struct{ account, id, source string }
	firstOf := make(map[key]int, len(evs))
	for i := range evs {
		ev := &evs[i]
		k := key{account.OrDefault(ev.AccountID), ev.ID, ev.Source}
		f, seen := firstOf[k]
		if !seen {
			f = i
			firstOf[k] = i
		}
		j.firstC[i] = f
		if seen {
			continue // a duplicate of event f (its result is set with f's)
		}
		var seq int64
		switch err := w.scanRow(eventSeqSQL, []any{k.id, k.source, k.account}, &seq); {
		case err == nil:
			j.p.results[i] = store.PublishResult{Seq: seq, Duplicate: true}
			continue
		case !isNoRows(err):
			return fmt.Errorf("look up event %q from %q: %w", ev.ID, ev.Source, err)
		}
		j.fresh++
		j.seqs[i] = -1 // reserved below
	}
	v, err := w.currentCatalog()
	if err != nil {
		return err
	}
	j.catalog = v
	if j.fresh == 0 {
		return nil
	}
	if _, err := w.exec(ensureEventSeqSQL); err != nil {
		return fmt.Errorf("reserve event seqs: %w", err)
	}
	var last int64
	if err := w.scanRow(reserveEventSeqsSQL, []any{j.fresh}, &last); err != nil {
		return fmt.Errorf("reserve event seqs: %w", err)
	}
	j.first = last - int64(j.fresh) + 1
	next := j.first
	j.order = j.order[:0]
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
	if _, err := w.exec(insertCounterSQL, stagedPrefix+strconv.FormatInt(j.first, 10), last); err != nil {
		return fmt.Errorf("record the reserved event seqs: %w", err)
	}
	j.counter = true
	return nil
}

// checkStep refuses rows, the deliveries of a step after the first, when
// their subscriptions changed since the match: once the catalog version
// moved past the one the first step saw, each subscription must still
// exist and, under a CatalogVersion guard, be no newer than it (with
// RequireSubscriptions it must only exist, as the guard says).
func (j *stagedPublish) checkStep(w *writer, rows []stagedRow) error {
	v, err := w.currentCatalog()
	if err != nil || v == j.catalog {
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
		switch err := w.scanRow(subscriptionVersionSQL, []any{id}, &version); {
		case isNoRows(err):
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
func (j *stagedPublish) reveal(w *writer) error {
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
		account := account.OrDefault(ev.AccountID)
		n, err := w.execN(insertStagedEventSQL, seq, account, ev.ID, ev.Source, ev.Type, ev.Subject,
			sqlrow.UnixMS(ev.PublishedAt), payload, sqlrow.NullIfEmpty(ev.TraceContext))
		if err != nil {
			return fmt.Errorf("insert event %q from %q: %w", ev.ID, ev.Source, err)
		}
		if n == 1 {
			j.p.results[i] = store.PublishResult{Seq: seq}
			continue
		}
		// Stored by another publish since the first step.
		var stored int64
		if err := w.scanRow(eventSeqSQL, []any{ev.ID, ev.Source, account}, &stored); err != nil {
			return fmt.Errorf("look up event %q from %q: %w", ev.ID, ev.Source, err)
		}
		j.p.results[i] = store.PublishResult{Seq: stored, Duplicate: true}
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
	return j.finish(w)
}

// finish deletes the deliveries in drop and releases those in unheld, up
// to MaxTxRows of them a step; once none is left, it deletes the counter
// and the publish is done.
func (j *stagedPublish) finish(w *writer) error {
	budget := w.maxTxRows
	for ; j.dropped < len(j.drop) && budget > 0; j.dropped, budget = j.dropped+1, budget-1 {
		if _, err := w.exec(deleteDeliverySQL, j.drop[j.dropped]); err != nil {
			return fmt.Errorf("delete delivery %s: %w", j.drop[j.dropped], err)
		}
	}
	if j.phase == stageFinish {
		for ; j.released < len(j.unheld) && budget > 0; j.released, budget = j.released+1, budget-1 {
			if _, err := w.exec(releaseStagedSQL, j.unheld[j.released], stagedLeaseUntil); err != nil {
				return fmt.Errorf("release delivery %s: %w", j.unheld[j.released], err)
			}
		}
	}
	if j.dropped < len(j.drop) || j.phase == stageFinish && j.released < len(j.unheld) {
		return nil
	}
	if j.counter {
		if _, err := w.exec(deleteCounterSQL, stagedPrefix+strconv.FormatInt(j.first, 10)); err != nil {
			return fmt.Errorf("delete the reserved event seqs: %w", err)
		}
		j.counter = false
	}
	j.phase = stageDone
	return nil
}

// recoverStaged deletes, on conn at Open, the deliveries of every staged
// publish a crash interrupted (those of its reserved seqs whose event was
// never inserted) and their counters.
func recoverStaged(ctx context.Context, conn *sql.Conn) (int64, error) {
	rows, err := conn.QueryContext(ctx, stagedCountersSQL)
	if err != nil {
		return 0, err
	}
	type rng struct {
		name        string
		first, last int64
	}
	var rs []rng
	for rows.Next() {
		var r rng
		if err := rows.Scan(&r.name, &r.last); err != nil {
			rows.Close()
			return 0, err
		}
		if r.first, err = strconv.ParseInt(strings.TrimPrefix(r.name, stagedPrefix), 10, 64); err != nil {
			rows.Close()
			return 0, fmt.Errorf("counter %q: %w", r.name, err)
		}
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var deleted int64
	for _, r := range rs {
		res, err := conn.ExecContext(ctx, deleteUnstagedSQL, r.first, r.last)
		if err != nil {
			return deleted, err
		}
		n, _ := res.RowsAffected()
		deleted += n
		if _, err := conn.ExecContext(ctx, deleteCounterSQL, r.name); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
