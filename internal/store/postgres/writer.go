package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Group commit. Publish and Record calls become requests on a bounded queue.
// Each of Options.Writers goroutines takes the first waiting request, then
// every other one already queued (up to MaxBatch requests and MaxBatchRows
// rows), and writes them all in one transaction with set-based statements
// (publishBatch, recordBatch), so one commit (one WAL flush) and a handful
// of round trips serve the whole batch. A large publish (more than
// Options.LargeRows events and deliveries: a fan-out to many subscriptions)
// waits on a queue of its own, and a writer other than the first writes
// it alone: the first writer always takes the other calls, and no call is
// written in a large publish's transaction, so none waits for another
// account's fan-out to commit (PostgreSQL commits the writers'
// transactions side by side).
//
// Failures:
//   - a deadlock or serialization failure rolls the transaction back; it
//     runs again (a few times) as it was;
//   - any other error from PostgreSQL during the statements means some
//     request's data was refused (a duplicate delivery ID, text that is not
//     UTF-8, ...): the batch is rolled back and each request runs again in a
//     transaction of its own, so only the faulty one fails;
//   - a lost connection fails the batch's requests with the error; when it
//     happens during COMMIT the outcome is unknown and nothing is retried
//     (a retried Publish would report its own events as duplicates).
//
// Callers wait for their request's answer, which comes only after COMMIT
// returns. Once queued, a request runs whatever happens to its caller's
// context.

// request is one Publish or Record call. The writer (re)assigns results on
// every run, since a batch may run more than once.
type request struct {
	events   []store.NewEvent
	opts     store.PublishOptions
	results  []store.PublishResult
	outcomes []store.Outcome
	// applied says which outcomes' state changes applied (Record).
	applied []bool
	// refused is the guard's verdict on a Publish (a *StaleCatalogError),
	// set anew on every run: such a request writes nothing and is answered
	// with it while the rest of its batch commits.
	refused error

	err  error
	done chan struct{}
}

// rows is what r writes: its events, their deliveries and its outcomes.
func (r *request) rows() int {
	n := len(r.events) + len(r.outcomes)
	for i := range r.events {
		n += len(r.events[i].Deliveries)
	}
	return n
}

// write queues r and waits for its answer. It gives up with ctx's error only
// while waiting for room in the queue.
func (s *backend) write(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan struct{})
	queue := s.reqs
	if len(r.events) > 0 && r.rows() > s.opts.LargeRows {
		queue = s.large
	}
	s.mu.RLock()
	if s.closed.Load() {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	select {
	case queue <- r:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	<-r.done
	return r.err
}

// writer commits batches of the calls queued on reqs and, when large is
// set, the large publishes queued on s.large, each alone, until both
// queues are closed and empty.
func (s *backend) writer(large bool) {
	defer s.writers.Done()
	batch := make([]*request, 0, s.opts.MaxBatch)
	reqs, bigs := s.reqs, s.large
	if !large {
		bigs = nil
	}
	for reqs != nil || bigs != nil {
		var r *request
		var ok bool
		select {
		case r, ok = <-reqs:
			if !ok {
				reqs = nil
				continue
			}
		case r, ok = <-bigs:
			if !ok {
				bigs = nil
				continue
			}
			s.commit([]*request{r})
			continue
		}
		batch = append(batch[:0], r)
		rows := r.rows()
	fill:
		for len(batch) < s.opts.MaxBatch && rows < s.opts.MaxBatchRows {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
				rows += r.rows()
			default:
				break fill
			}
		}
		s.commit(batch)
		clear(batch) // let the answered requests be collected
	}
}

// commit runs batch in one transaction and answers every request.
func (s *backend) commit(batch []*request) {
	err := s.runRetrying(batch)
	var be *batchError
	if err == nil || len(batch) == 1 || !errors.As(err, &be) || !be.isolate {
		s.answer(batch, err)
		return
	}
	s.isolated.Add(1)
	s.log.Warn("write batch failed; running its calls one by one", "err", err, "calls", len(batch))
	for _, r := range batch {
		s.answer([]*request{r}, s.runRetrying([]*request{r}))
	}
}

func (s *backend) answer(rs []*request, err error) {
	if err == nil {
		s.commits.Add(1)
	}
	s.served.Add(int64(len(rs)))
	for _, r := range rs {
		r.err = err
		if be := (*batchError)(nil); errors.As(err, &be) {
			r.err = be.err
		}
		if err == nil {
			r.err = r.refused
		}
		r.err = unavailable(r.err)
		close(r.done)
	}
}

// batchError is a failed batch: isolate says the transaction was certainly
// rolled back because PostgreSQL refused a statement, so running its
// requests one by one is safe and may let most of them succeed.
type batchError struct {
	err     error
	isolate bool
}

func (e *batchError) Error() string { return e.err.Error() }
func (e *batchError) Unwrap() error { return e.err }

// runRetrying runs batch, again after deadlocks and serialization failures.
func (s *backend) runRetrying(batch []*request) error {
	for try := 0; ; try++ {
		err := s.run(batch)
		if err == nil || try >= maxRetries || !retryable(err) {
			return err
		}
		s.retried.Add(1)
		backoff(try)
	}
}

// run writes batch in one transaction.
func (s *backend) run(batch []*request) (err error) {
	ctx := context.Background()
	if t := s.opts.StatementTimeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*t)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in store write", "panic", p, "stack", string(debug.Stack()))
			err = &batchError{err: fmt.Errorf("store write panicked: %v", p), isolate: true}
		}
	}()
	tx, err := s.pool.BeginTx(ctx, s.txOpts)
	if err != nil {
		return s.err(fmt.Errorf("begin: %w", err))
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.Background())
		}
	}()
	if err := s.guardBatch(ctx, tx, batch); err != nil {
		return stmtError(err)
	}
	var queued sqlrow.IDSet // subscriptions whose deliveries this batch made receivable
	if err := s.publishBatch(ctx, tx, batch, &queued); err != nil {
		return stmtError(err)
	}
	if err := s.recordBatch(ctx, tx, batch, &queued); err != nil {
		return stmtError(err)
	}
	if err := s.notifyQueued(ctx, tx, queued.IDs); err != nil {
		return stmtError(err)
	}
	if err := tx.Commit(ctx); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return stmtError(fmt.Errorf("commit: %w", err)) // refused: rolled back
		}
		return s.err(fmt.Errorf("commit (outcome unknown): %w", err))
	}
	s.queuedHere(queued.IDs)
	return nil
}

// stmtError classifies an error met before COMMIT. A server going away
// (isUnavailable) is no call's fault: the batch is not run call by call.
func stmtError(err error) error {
	if retryable(err) {
		return err
	}
	var pe *pgconn.PgError
	return &batchError{err: err, isolate: errors.As(err, &pe) && !isUnavailable(err)}
}

// evKey identifies an event: (account, id, source).
type evKey struct{ account, id, source string }

// publishSQL inserts one batch's events and their deliveries (each in its
// event's account, pending or queued as given). Sequences are drawn in
// input order (input), but rows are inserted in key order (id, source,
// account_id: the unique index's): a batch that waits for another's
// uncommitted event with the same key (another node publishing it at the
// same time) then always waits for a larger key than any it holds, so such
// waits never form a deadlock. The events' trace contexts ($18) may be an
// empty array (no event has one: tracing is off), which unnest pads with
// NULLs.
const publishSQL = `WITH input AS MATERIALIZED (
	SELECT nextval('events_seq_seq') AS seq, u.*
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::bytea[], $18::text[]) WITH ORDINALITY
		AS u(account_id, id, source, type, subject, published_at, payload, trace_context, ord)
	ORDER BY u.ord
), ev AS (
	INSERT INTO events (seq, account_id, id, source, type, subject, published_at, payload, trace_context) OVERRIDING SYSTEM VALUE
	SELECT seq, account_id, id, source, type, subject, published_at, payload, NULLIF(trace_context, '') FROM input
	ORDER BY id COLLATE "C", source COLLATE "C", account_id COLLATE "C"
	ON CONFLICT (id, source, account_id) DO NOTHING
	RETURNING seq, account_id, id, source, published_at
), dl AS (
	INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status,
		round_start, next_attempt_at, created_at, lease_owner, lease_until, ordering_key)
	SELECT n.id, ev.account_id, n.subscription_id, n.endpoint_id, ev.seq, n.status,
		ev.published_at, ev.published_at, ev.published_at, n.lease_owner, n.lease_until, NULLIF(n.ordering_key, '')
	FROM unnest($8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::int8[], $16::text[], $17::text[])
		AS n(id, subscription_id, endpoint_id, event_account, event_id, event_source, lease_owner, lease_until, status, ordering_key)
	JOIN ev ON ev.id = n.event_id AND ev.source = n.event_source AND ev.account_id = n.event_account
)
SELECT seq, account_id, id, source FROM ev`

// existingSeqSQL finds the events a batch did not insert: they were stored
// before, or by a transaction that committed while the insert waited.
const existingSeqSQL = `SELECT e.seq, e.account_id, e.id, e.source FROM events AS e
JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(account_id, id, source)
	ON e.id = k.id AND e.source = k.source AND e.account_id = k.account_id`

// guardBatch checks the guard of every Publish request in batch (see
// store.PublishOptions) and marks those refused. When the batch publishes
// anything it first reads the catalog version FOR SHARE, once for the
// batch: no subscription write can commit until this transaction ends, so
// the check holds at commit, and a delete that follows sees every delivery
// written here. When the batch may deactivate a subscription (an outcome
// with Deactivate) it locks the catalog row FOR UPDATE instead, before it
// changes any row, so that it takes its locks in the order subscription
// writes do (the catalog first), and a deactivation (deactivateBatch)
// finds the subscriptions' states unchanged until it commits. A batch that
// may write the delivery of a dead letter (an outcome with DeadLetterCopy)
// reads the row FOR SHARE at least, before it changes any row, in the same
// order: the dead-letter URLs recordCopySQL reads then stay as they are until
// it commits, and a subscription write that follows (a change of
// dead-letter URL, a delete) sees the deliveries it wrote.
func (s *backend) guardBatch(ctx context.Context, tx pgx.Tx, batch []*request) error {
	var need []string // subscriptions that must exist
	publishing, deactivating, copying := false, false, false
	for _, r := range batch {
		r.refused = nil
		for i := range r.outcomes {
			deactivating = deactivating || deactivates(&r.outcomes[i])
			copying = copying || copiesDeadLetter(&r.outcomes[i])
		}
		if len(r.events) == 0 {
			continue
		}
		publishing = true
		if r.opts.CatalogVersion == 0 && r.opts.RequireSubscriptions {
			for i := range r.events {
				for _, d := range r.events[i].Deliveries {
					need = append(need, d.SubscriptionID)
				}
			}
		}
	}
	if !publishing && !deactivating && !copying {
		return nil
	}
	lock := catalogShareSQL
	if deactivating {
		lock = catalogLockSQL
	}
	var v int64
	if err := tx.QueryRow(ctx, lock).Scan(&v); err != nil {
		return fmt.Errorf("read the catalog version: %w", err)
	}
	if !publishing {
		return nil
	}
	present := map[string]bool{}
	if len(need) > 0 {
		rows, err := tx.Query(ctx, presentSubscriptionsSQL, need)
		if err != nil {
			return fmt.Errorf("check subscriptions: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("check subscriptions: %w", err)
		}
		for _, id := range ids {
			present[id] = true
		}
	}
	for _, r := range batch {
		if len(r.events) == 0 {
			continue
		}
		switch {
		case r.opts.CatalogVersion > 0:
			if v > r.opts.CatalogVersion {
				r.refused = &store.StaleCatalogError{Version: v}
			}
		case r.opts.RequireSubscriptions:
		check:
			for i := range r.events {
				for _, d := range r.events[i].Deliveries {
					if !present[d.SubscriptionID] {
						r.refused = &store.StaleCatalogError{Version: v}
						break check
					}
				}
			}
		}
	}
	return nil
}

const presentSubscriptionsSQL = `SELECT id FROM subscriptions WHERE id = ANY($1)`

// eventKey returns ev's dedup key, in its account.
func eventKey(ev *store.NewEvent) evKey {
	return evKey{account.OrDefault(ev.AccountID), ev.ID, ev.Source}
}

// publishBatch writes the events of every Publish request in batch with
// their deliveries in two statements, and fills in the requests' results.
// Within the batch the first occurrence of an event is the one stored; later
// occurrences, in the same call or another, are duplicates of it. The
// subscriptions of the queued deliveries it wrote go into queued.
func (s *backend) publishBatch(ctx context.Context, tx pgx.Tx, batch []*request, queued *sqlrow.IDSet) error {
	pr := &publishRows{slots: map[evKey]int{}}
	have := false
	for _, r := range batch {
		if len(r.events) == 0 || r.refused != nil {
			continue
		}
		have = true
		until := sqlrow.LeaseUntilMS(r.opts.Lease)
		for i := range r.events {
			pr.add(&r.events[i], r.opts.Lease.Owner, until)
		}
	}
	if !have {
		return nil
	}
	if err := pr.write(ctx, tx); err != nil {
		return err
	}
	for i, slot := range pr.qSlot {
		if pr.inserted[slot] { // a duplicate's deliveries were not written
			queued.Add(pr.qSub[i])
		}
	}
	first := make([]bool, len(pr.eID))
	for _, r := range batch {
		if len(r.events) == 0 || r.refused != nil {
			continue
		}
		r.results = make([]store.PublishResult, len(r.events))
		for i := range r.events {
			slot := pr.slots[eventKey(&r.events[i])]
			dup := !pr.inserted[slot] || first[slot]
			first[slot] = true
			r.results[i] = store.PublishResult{Seq: pr.seqs[slot], Duplicate: dup}
		}
	}
	return nil
}

// publishRows are the columns publishSQL writes for a batch (its distinct
// events, each at a slot, and their deliveries), the slot and subscription
// of each queued delivery, and, once written, each slot's seq.
type publishRows struct {
	slots                             map[evKey]int
	eAcc, eID, eSrc, eType, eSubj     []string
	eAt                               []int64
	ePayload                          [][]byte
	eTrace                            []string // empty until an event has a trace context, then one per slot
	dID, dSub, dEp, dEvA, dEvID, dEvS []string
	dOwner, dStatus, dKey             []string
	dUntil                            []int64
	qSlot                             []int // the event slot of each queued delivery
	qSub                              []string

	seqs     []int64 // by slot: the stored event's (inserted, or the duplicate's)
	inserted []bool  // by slot: written by this batch
	found    int     // slots whose seq is known
}

// add gives ev a slot with its deliveries (claimed ones leased to owner
// until until), unless an event with its key has one: a duplicate.
func (pr *publishRows) add(ev *store.NewEvent, owner string, until int64) {
	k := eventKey(ev)
	if _, ok := pr.slots[k]; ok {
		return
	}
	slot := len(pr.eID)
	pr.slots[k] = slot
	payload := ev.Payload
	if payload == nil {
		payload = []byte{}
	}
	pr.eAcc = append(pr.eAcc, k.account)
	pr.eID, pr.eSrc, pr.eType, pr.eSubj = append(pr.eID, ev.ID), append(pr.eSrc, ev.Source), append(pr.eType, ev.Type), append(pr.eSubj, ev.Subject)
	pr.eAt, pr.ePayload = append(pr.eAt, sqlrow.UnixMS(ev.PublishedAt)), append(pr.ePayload, payload)
	if ev.TraceContext != "" && len(pr.eTrace) < slot {
		pr.eTrace = append(pr.eTrace, make([]string, slot-len(pr.eTrace))...)
	}
	if ev.TraceContext != "" || len(pr.eTrace) > 0 {
		pr.eTrace = append(pr.eTrace, ev.TraceContext)
	}
	for _, d := range ev.Deliveries {
		dOwner, lu, status := "", int64(0), delivery.StatusPending
		switch {
		case d.Claimed:
			dOwner, lu = owner, until
		case d.Queued:
			status = delivery.StatusQueued
			pr.qSlot, pr.qSub = append(pr.qSlot, slot), append(pr.qSub, d.SubscriptionID)
		}
		pr.dID, pr.dSub, pr.dEp = append(pr.dID, d.ID), append(pr.dSub, d.SubscriptionID), append(pr.dEp, d.EndpointID)
		pr.dEvA, pr.dEvID, pr.dEvS = append(pr.dEvA, k.account), append(pr.dEvID, ev.ID), append(pr.dEvS, ev.Source)
		pr.dOwner, pr.dUntil, pr.dStatus = append(pr.dOwner, dOwner), append(pr.dUntil, lu), append(pr.dStatus, string(status))
		pr.dKey = append(pr.dKey, d.OrderingKey)
	}
}

// noTraces is publishSQL's $18 when no event has a trace context: an
// empty array, not NULL.
var noTraces = []string{}

// traces is publishSQL's $18: the events' trace contexts, or noTraces.
func (pr *publishRows) traces() []string {
	if len(pr.eTrace) == 0 {
		return noTraces
	}
	return pr.eTrace
}

// write inserts the events and deliveries (publishSQL), then looks up the
// seqs of the events already stored (existingSeqSQL): duplicates of
// earlier calls. errRetry when a duplicate was deleted in between.
func (pr *publishRows) write(ctx context.Context, tx pgx.Tx) error {
	pr.seqs, pr.inserted = make([]int64, len(pr.eID)), make([]bool, len(pr.eID))
	rows, err := tx.Query(ctx, publishSQL, pr.eAcc, pr.eID, pr.eSrc, pr.eType, pr.eSubj, pr.eAt, pr.ePayload,
		pr.dID, pr.dSub, pr.dEp, pr.dEvA, pr.dEvID, pr.dEvS, pr.dOwner, pr.dUntil, pr.dStatus, pr.dKey, pr.traces())
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if err := pr.scan(rows, true); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if pr.found == len(pr.eID) {
		return nil
	}
	var mAcc, mID, mSrc []string
	for i := range pr.eID {
		if pr.seqs[i] == 0 {
			mAcc, mID, mSrc = append(mAcc, pr.eAcc[i]), append(mID, pr.eID[i]), append(mSrc, pr.eSrc[i])
		}
	}
	rows, err = tx.Query(ctx, existingSeqSQL, mAcc, mID, mSrc)
	if err != nil {
		return fmt.Errorf("publish: look up duplicates: %w", err)
	}
	if err := pr.scan(rows, false); err != nil {
		return fmt.Errorf("publish: look up duplicates: %w", err)
	}
	if pr.found < len(pr.eID) {
		// The stored duplicate was deleted (Cleanup) between the two
		// statements: run the batch again.
		return errRetry
	}
	return nil
}

// scan reads (seq, account, id, source) rows into the seqs of the slots
// still without one; ins says whether the rows are of events this batch
// inserted.
func (pr *publishRows) scan(rows pgx.Rows, ins bool) error {
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var k evKey
		if err := rows.Scan(&seq, &k.account, &k.id, &k.source); err != nil {
			return err
		}
		if slot, ok := pr.slots[k]; ok && pr.seqs[slot] == 0 {
			pr.seqs[slot], pr.inserted[slot] = seq, ins
			pr.found++
		}
	}
	return rows.Err()
}

// Record statements. A round of outcomes (each delivery once: see
// recordBatch) changes its deliveries' states with one UPDATE over
// unnest(...) arrays and logs its attempts with one INSERT. Every round of
// a batch goes to the server in one pipeline (pgx.Batch: one round trip),
// in order, each statement seeing the effects of those before it.
//
// Most rounds hold only outcomes that need nothing back (delivered, retry,
// dead-lettered without a dead letter's delivery to write, dropped):
// recordStateSQL, an UPDATE that returns only how many outcomes applied,
// which says whether every one did. A round with a queued outcome (its subscription is
// announced, maybe deactivated) or a dead letter's delivery to write runs
// recordQueuedSQL or recordCopySQL instead, which return the rows they
// changed.
//
// The attempts are inserted without looking up their deliveries first: a
// round whose outcomes all applied has every delivery (the UPDATE matched
// each by key). Only when some did not apply does recordMissingSQL look
// for deliveries that do not exist and delete the attempts logged for them
// (an outcome for a delivery that no longer exists logs nothing), in the
// same transaction.
//
// Each statement adds the outcomes it applied to the delivery rollups
// (store.StatsStore) in a data-modifying CTE of its own (recordStats): no
// extra statement or round trip, one upserted row per (minute,
// subscription, endpoint) of the round.
const (
	// recordInput: $1…$14, one element per outcome: $13 the minute it
	// counts in, $14 its latency bucket (-1: no attempt; see
	// sqlrow.StatsMinute, sqlrow.StatsBucket).
	recordInput = `unnest($1::text[], $2::text[], $3::int4[], $4::int4[], $5::int8[], $6::int8[], $7::int8[],
		$8::int4[], $9::text[], $10::text[], $11::int8[], $12::text[], $13::int8[], $14::int2[]`
	recordInputCols = `id, status, attempts, round_attempts, first_failure, next_attempt_at, started_at,
		last_status_code, last_outcome, dead_letter_reason, delivered_at, lease_owner, stat_minute, bucket`
	recordSet = `status = u.status, attempts = u.attempts, round_attempts = u.round_attempts,
		first_failure = u.first_failure, next_attempt_at = u.next_attempt_at,
		last_attempt_at = u.started_at, last_status_code = u.last_status_code,
		last_outcome = u.last_outcome, dead_letter_reason = u.dead_letter_reason,
		delivered_at = u.delivered_at, lease_owner = '', lease_until = 0`
	recordWhere = `d.id = u.id AND d.status = 'pending' AND (u.lease_owner = '' OR d.lease_owner = u.lease_owner)`
	// recordReturning: what every statement's UPDATE returns (upd): the
	// rollups' keys and inputs, and what recordQueuedSQL's and
	// recordCopySQL's callers read.
	recordReturning = `
	RETURNING d.id, d.account_id, d.subscription_id, d.endpoint_id, u.status, u.stat_minute AS minute, u.bucket`

	recordUpdate = `WITH upd AS (
	UPDATE deliveries AS d SET ` + recordSet + `
	FROM ` + recordInput + `) AS u(` + recordInputCols + `)
	WHERE ` + recordWhere + recordReturning + `
)`
)

var (
	// recordStats adds the outcomes of upd to delivery_stats.
	recordStats = `, st AS (
	INSERT INTO delivery_stats (` + sqlrow.StatsCols + `)
	SELECT minute, account_id, subscription_id, endpoint_id, ` + sqlrow.StatsOutcomeAggs + `
	FROM upd WHERE bucket >= 0 OR status IN ('delivered', 'dead_lettered')
	GROUP BY minute, account_id, subscription_id, endpoint_id
	ORDER BY minute, subscription_id, endpoint_id` + sqlrow.StatsUpsert + `
)`

	// recordStateSQL returns how many outcomes applied and, when some did
	// not, the IDs of their deliveries (the array is built only then).
	recordStateSQL = recordUpdate + recordStats + `
SELECT count(*), CASE WHEN count(*) = cardinality($1::text[]) THEN '{}'::text[]
	ELSE array(SELECT k.id FROM unnest($1::text[]) AS k(id) WHERE k.id NOT IN (SELECT id FROM upd)) END
FROM upd`

	// recordQueuedSQL returns the delivery, subscription and status of
	// each outcome it applied.
	recordQueuedSQL = recordUpdate + recordStats + `
SELECT id, subscription_id, status FROM upd`

	// recordCopySQL does the same, and writes the delivery of each dead
	// letter it made that has one to write (copy_id, $15): the
	// dead-lettered delivery's subscription, account and event, pending on
	// the dead-letter URL's endpoint the subscription names now (none:
	// nothing is written), due at the attempt's end (copy_at, $16; its
	// round start too; the event's publish time when that is earlier or
	// unknown), created at the event's publish time as every delivery of
	// the event is. An ID already stored is left alone. The rows the
	// UPDATE changed carry what the insert needs (RETURNING), so it joins
	// nothing but the event and the subscription, each by key.
	recordCopySQL = `WITH upd AS (
	UPDATE deliveries AS d SET ` + recordSet + `
	FROM ` + recordInput + `, $15::text[], $16::int8[]) AS u(` + recordInputCols + `, copy_id, copy_at)
	WHERE ` + recordWhere + recordReturning + `, d.event_seq, u.copy_id, u.copy_at
), dl AS (
	INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status,
		round_start, next_attempt_at, created_at, dead_letter_of)
	SELECT upd.copy_id, upd.account_id, upd.subscription_id, s.dead_letter_endpoint_id, upd.event_seq, 'pending',
		GREATEST(upd.copy_at, e.published_at), GREATEST(upd.copy_at, e.published_at), e.published_at, upd.id
	FROM upd JOIN events AS e ON e.seq = upd.event_seq
		JOIN subscriptions AS s ON s.id = upd.subscription_id
	WHERE upd.copy_id <> '' AND upd.status = 'dead_lettered' AND s.dead_letter_endpoint_id <> ''
	ON CONFLICT (id) DO NOTHING
)` + recordStats + `
SELECT id, subscription_id, status FROM upd`
)

const (
	// recordAttemptsSQL logs attempts, replacing a logged attempt with the
	// same number.
	recordAttemptsSQL = `INSERT INTO attempts (delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body)
SELECT * FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int8[], $5::int4[], $6::text[], $7::text[], $8::bytea[])
ON CONFLICT (delivery_id, number) DO UPDATE SET
	started_at = excluded.started_at, duration_us = excluded.duration_us,
	status_code = excluded.status_code, outcome = excluded.outcome,
	error = excluded.error, response_body = excluded.response_body`

	// recordMissingSQL returns the outcomes ($1 deliveries, $2 attempt
	// numbers) whose deliveries do not exist, and deletes the attempts
	// logged for those deliveries.
	recordMissingSQL = `WITH m AS (
	SELECT k.id, k.number FROM unnest($1::text[], $2::int4[]) AS k(id, number)
	WHERE NOT EXISTS (SELECT 1 FROM deliveries AS d WHERE d.id = k.id)
), x AS (
	DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM m)
)
SELECT id, number FROM m`
)

// copiesDeadLetter reports whether o writes the delivery of a dead letter
// when applied (recordCopySQL).
func copiesDeadLetter(o *store.Outcome) bool {
	return o.DeadLetterCopy != nil && o.Status == delivery.StatusDeadLettered
}

// recordBatch applies the outcomes of every Record request in batch, in
// order. Outcomes go in rounds in which each delivery appears once (a
// statement cannot change a row twice); a delivery's later outcome goes in a
// later round, which sees the earlier one's effect, as if applied one by one.
// After the rounds, the subscriptions of the applied outcomes with
// Deactivate are deactivated (deactivateBatch). The subscriptions of the
// deliveries it queued go into queued.
func (s *backend) recordBatch(ctx context.Context, tx pgx.Tx, batch []*request, queued *sqlrow.IDSet) error {
	var rounds [][]*store.Outcome
	last := map[string]int{} // delivery ID → the last round holding it
	var roundOf [][]int      // each request's outcomes' rounds
	for _, r := range batch {
		r.applied = make([]bool, len(r.outcomes))
		in := make([]int, len(r.outcomes))
		roundOf = append(roundOf, in)
		for i := range r.outcomes {
			o := &r.outcomes[i]
			n := 0
			if prev, ok := last[o.Attempt.DeliveryID]; ok {
				n = prev + 1
			}
			last[o.Attempt.DeliveryID] = n
			in[i] = n
			if n == len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[n] = append(rounds[n], o)
		}
	}
	if len(rounds) == 0 {
		return nil
	}
	rs := make([]recordRound, len(rounds))
	b := &pgx.Batch{}
	for i, round := range rounds {
		rs[i].queue(b, round)
	}
	res := tx.SendBatch(ctx, b)
	for i := range rs {
		if err := rs[i].read(res); err != nil {
			res.Close()
			return fmt.Errorf("record: %w", err)
		}
	}
	if err := res.Close(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := s.recordMissing(ctx, tx, rs); err != nil {
		return err
	}
	for k, r := range batch {
		for i := range r.outcomes {
			r.applied[i] = rs[roundOf[k][i]].didApply(r.outcomes[i].Attempt.DeliveryID)
		}
	}
	var deact []deactivation
	for i, round := range rounds {
		for _, o := range round {
			sub, ok := rs[i].queued[o.Attempt.DeliveryID]
			if !ok {
				continue
			}
			queued.Add(sub)
			if deactivates(o) {
				deact = append(deact, deactivation{sub, sqlrow.UnixMS(o.Attempt.StartedAt), sqlrow.UnixMS(o.NextAttemptAt), o.DeactivateReason})
			}
		}
	}
	return s.deactivateBatch(ctx, tx, deact, queued)
}

// recordRound is one round of outcomes of recordBatch: its statements and,
// once they ran, what they changed.
type recordRound struct {
	outcomes []*store.Outcome
	// returning says which statement changes the states: recordStateSQL
	// (false: it returns their count) or one that returns the rows it changed (recordQueuedSQL,
	// recordCopySQL); attempts whether recordAttemptsSQL follows it.
	returning, attempts bool

	// applied is how many outcomes changed their delivery's state; queued
	// the subscription of each delivery an outcome queued, by delivery ID.
	// When some did not apply, changed (a statement that returns rows) or
	// missed (recordStateSQL) says which, by delivery ID.
	applied         int64
	queued          map[string]string
	changed, missed map[string]bool
}

// didApply reports whether the round's outcome for delivery id applied.
func (r *recordRound) didApply(id string) bool {
	switch {
	case r.applied == int64(len(r.outcomes)):
		return true
	case r.returning:
		return r.changed[id]
	}
	return !r.missed[id]
}

// queue adds the round's statements for os to b.
func (r *recordRound) queue(b *pgx.Batch, os []*store.Outcome) {
	r.outcomes = os
	n := len(os)
	var (
		id, status, lastOutcome, reason, owner = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		attempts, roundAttempts, lastCode      = make([]int32, n), make([]int32, n), make([]int32, n)
		firstFailure, next, started, delivered = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		copyID                                 []string
		copyAt                                 []int64
		statMinute                             = make([]int64, n)
		bucket                                 = make([]int16, n)
		queuing                                bool
		// the attempts to log (Number 0 logs none)
		aID, aOutcome, aErr []string
		aNumber, aCode      []int32
		aStarted, aDurUS    []int64
		aBody               [][]byte
	)
	for i, o := range os {
		a := &o.Attempt
		id[i], status[i] = a.DeliveryID, string(o.Status)
		attempts[i], roundAttempts[i] = int32(o.Attempts), int32(o.RoundAttempts)
		firstFailure[i], next[i], started[i] = sqlrow.UnixMS(o.FirstFailure), sqlrow.UnixMS(o.NextAttemptAt), sqlrow.UnixMS(a.StartedAt)
		lastCode[i], lastOutcome[i], reason[i] = int32(o.LastStatusCode), cleanText(o.LastOutcome), cleanText(o.DeadLetterReason)
		delivered[i], owner[i] = sqlrow.UnixMS(o.DeliveredAt), o.LeaseOwner
		statMinute[i], bucket[i] = sqlrow.StatsMinute(o), int16(sqlrow.StatsBucket(o))
		queuing = queuing || o.Status == delivery.StatusQueued
		if copiesDeadLetter(o) {
			if copyID == nil {
				copyID, copyAt = make([]string, n), make([]int64, n)
			}
			copyID[i], copyAt[i] = o.DeadLetterCopy.ID, sqlrow.AttemptDueMS(a)
		}
		if a.Number != 0 {
			aID, aNumber, aStarted = append(aID, a.DeliveryID), append(aNumber, int32(a.Number)), append(aStarted, started[i])
			aDurUS, aCode = append(aDurUS, a.Duration.Microseconds()), append(aCode, int32(a.StatusCode))
			aOutcome, aErr, aBody = append(aOutcome, cleanText(a.Outcome)), append(aErr, cleanText(a.Error)), append(aBody, a.ResponseBody)
		}
	}
	args := []any{id, status, attempts, roundAttempts, firstFailure, next, started,
		lastCode, lastOutcome, reason, delivered, owner, statMinute, bucket}
	switch {
	case copyID != nil:
		r.returning = true
		b.Queue(recordCopySQL, append(args, copyID, copyAt)...)
	case queuing:
		r.returning = true
		b.Queue(recordQueuedSQL, args...)
	default:
		b.Queue(recordStateSQL, args...)
	}
	if r.attempts = len(aID) > 0; r.attempts {
		b.Queue(recordAttemptsSQL, aID, aNumber, aStarted, aDurUS, aCode, aOutcome, aErr, aBody)
	}
}

// read reads the results of the round's statements from res.
func (r *recordRound) read(res pgx.BatchResults) error {
	if r.returning {
		rows, err := res.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, sub, status string
			if err := rows.Scan(&id, &sub, &status); err != nil {
				rows.Close()
				return err
			}
			r.applied++
			if r.changed == nil {
				r.changed = map[string]bool{}
			}
			r.changed[id] = true
			if delivery.Status(status) == delivery.StatusQueued {
				if r.queued == nil {
					r.queued = map[string]string{}
				}
				r.queued[id] = sub
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	} else {
		var missed []string
		if err := res.QueryRow().Scan(&r.applied, &missed); err != nil {
			return err
		}
		for _, id := range missed {
			if r.missed == nil {
				r.missed = map[string]bool{}
			}
			r.missed[id] = true
		}
	}
	if r.attempts {
		if _, err := res.Exec(); err != nil {
			return fmt.Errorf("log attempts: %w", err)
		}
	}
	return nil
}

// recordMissing looks, among the outcomes of the rounds in which some did
// not apply, for those whose deliveries do not exist, deletes the attempts
// logged for them and warns of each (recordMissingSQL).
func (s *backend) recordMissing(ctx context.Context, tx pgx.Tx, rs []recordRound) error {
	var ids []string
	var numbers []int32
	for i := range rs {
		if rs[i].applied == int64(len(rs[i].outcomes)) {
			continue
		}
		for _, o := range rs[i].outcomes {
			ids, numbers = append(ids, o.Attempt.DeliveryID), append(numbers, int32(o.Attempt.Number))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, recordMissingSQL, ids, numbers)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var dlv string
		var num int32
		if err := rows.Scan(&dlv, &num); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		s.log.Warn("record: no such delivery; attempt not logged", "delivery_id", dlv, "attempt", num)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// Publish implements store.DeliveryStore. The call is one request of a
// group commit: its events and deliveries are committed together or not at
// all (a delivery ID that already exists fails the call). Events are
// inserted in their account (account.OrDefault) with ON CONFLICT
// (id, source, account_id) DO NOTHING, so an event the account stored
// before, or stored by another node at the same time, is reported as a
// duplicate with the stored event's sequence and none of its deliveries is
// written. This holds within one call and within one batch too: the second
// occurrence of an event is the duplicate. Sequences increase in input order
// within a call. Deliveries are written in their event's account, pending,
// due at PublishedAt (also their round start and creation time), leased to
// opts.Lease when Claimed; those with Queued set are written queued and
// unlocked, receivable at PublishedAt (a delivery both Claimed and Queued
// fails the call before anything is written). The batch's transaction
// notifies every node of the subscriptions that got queued deliveries, and
// Options.OnQueued gets them after the commit.
// The guard of opts is checked in the batch's transaction (guardBatch).
func (s *backend) Publish(ctx context.Context, events []store.NewEvent, opts store.PublishOptions) ([]store.PublishResult, error) {
	if len(events) == 0 {
		if err := s.checkOpen(); err != nil {
			return nil, err
		}
		return []store.PublishResult{}, nil
	}
	for i := range events {
		for _, d := range events[i].Deliveries {
			if d.Claimed && d.Queued {
				return nil, fmt.Errorf("publish: delivery %q is both claimed and queued", d.ID)
			}
		}
	}
	r := &request{events: events, opts: opts}
	if err := s.write(ctx, r); err != nil {
		return nil, err
	}
	return r.results, nil
}

// Record implements store.DeliveryStore. For each outcome, in order, it
// writes the delivery's new state if the delivery is still pending (and,
// when o.LeaseOwner is set, still leased by that owner): LastAttemptAt
// becomes the attempt's start and the lease is cleared. It appends the
// attempt to the log unless Attempt.Number is 0, replacing a logged attempt
// with the same number. An outcome for a delivery that no longer exists is
// skipped with a warning. An outcome with an invalid status or no delivery
// ID fails the call before anything is written.
//
// A queued outcome writes status queued, receivable at its NextAttemptAt.
// With Deactivate too, once its state change applied, the delivery's
// subscription is deactivated in the same transaction (deactivateBatch);
// Deactivate on an outcome of another status is ignored. The batch's
// transaction then notifies every node of the subscriptions whose
// deliveries it queued, and Options.OnQueued gets them after the commit.
// A batch that may deactivate locks the catalog version's row first (see
// guardBatch): it waits for the publishes and subscription writes in
// progress, and they for it.
//
// A dead-lettered outcome with DeadLetterCopy, when its state change
// applies, writes the delivery of the dead letter (see recordCopySQL) on the
// dead-letter URL's endpoint its subscription names in this transaction:
// DeadLetterCopy.EndpointID, unless the subscription changed its
// dead-letter URL since the caller read it (then the new one's; none is
// written when it names none any more). Its ID is DeadLetterCopy.ID; the
// copy's other fields are ignored. DeadLetterCopy on an outcome of another
// status is ignored. Such a batch reads the catalog version's row FOR
// SHARE first (guardBatch), as a publishing one does.
//
// applied says which outcomes' state changes applied (see store.Store).
func (s *backend) Record(ctx context.Context, outcomes []store.Outcome) (applied []bool, err error) {
	if len(outcomes) == 0 {
		if err := s.checkOpen(); err != nil {
			return nil, err
		}
		return []bool{}, nil
	}
	for i, o := range outcomes {
		if o.Attempt.DeliveryID == "" {
			return nil, fmt.Errorf("record: outcome %d has no delivery ID", i)
		}
		if !o.Status.Valid() {
			return nil, fmt.Errorf("record: outcome %d for %s: invalid status %q", i, o.Attempt.DeliveryID, o.Status)
		}
	}
	r := &request{outcomes: outcomes}
	if err := s.write(ctx, r); err != nil {
		return nil, err
	}
	return r.applied, nil
}
