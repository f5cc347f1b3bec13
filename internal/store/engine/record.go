package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Record applies outcomes (store.DeliveryStore).
var (
	// qApplyOutcomes (rows: id, status, attempts, round_attempts,
	// first_failure, next_attempt_at, started_at, last_status_code,
	// last_outcome, dead_letter_reason, delivered_at, lease_owner, '' for
	// no guard) writes each outcome's state to its delivery if the
	// delivery is pending and, with a lease owner given, leased to it:
	// last_attempt_at the attempt's start, the lease cleared. It returns
	// the id, account, subscription, endpoint and new status of each
	// delivery it changed. Run only where GroupCommit.CountsInApply is
	// false (SQLite), as qAddStats.
	qApplyOutcomes = query("ApplyOutcomes")
	// qApplyCountedOutcomes is qApplyOutcomes that also adds the outcomes
	// it applied to the rollups (GroupCommit.CountsInApply): each
	// outcome's share follows its columns (counted, 1 or 0; minute;
	// delivered, failed, dead_lettered; the latency bucket its attempt
	// counts one in, -1 for none: shares).
	qApplyCountedOutcomes = query("ApplyCountedOutcomes")
	// qDeleteAttemptsOf deletes the attempts logged for the deliveries $1
	// (a list): an outcome's attempt logged in the apply's round trip whose
	// delivery turned out not to exist.
	qDeleteAttemptsOf = query("DeleteAttemptsOf")
	// qMissingDeliveries returns those of the deliveries $1 (a list) that
	// do not exist.
	qMissingDeliveries = query("MissingDeliveries")
	// qLogAttempts (rows: delivery_id, number, started_at, duration_us,
	// status_code, outcome, error, response_body) logs attempts, replacing
	// a logged attempt with the same number: the newest report wins.
	qLogAttempts = query("LogAttempts")
	// qAddStats (rows: minute, account, subscription, endpoint, delivered,
	// failed, dead_lettered, lat0 … lat15) adds to the delivery rollups,
	// one row per (minute, subscription, endpoint), at most once each.
	qAddStats = query("AddStats")
	// qInsertDeadLetterCopies (rows: id, at, dead-lettered delivery)
	// writes the delivery of each dead letter: the dead-lettered
	// delivery's subscription, account and event, pending on the
	// dead-letter URL's endpoint its subscription names now (none:
	// nothing is written), due at `at`, the attempt's end (its round start
	// too; the event's publish time when that is earlier), created at the
	// event's publish time as every delivery of the event is. An ID
	// already stored is left alone.
	qInsertDeadLetterCopies = query("InsertDeadLetterCopies")
	// qActiveSubscriptions returns those of the subscriptions $1 (a list)
	// that are push subscriptions not deactivated.
	qActiveSubscriptions = query("ActiveSubscriptions")
)

// recordReq is one Record call: applied is set anew on every run.
type recordReq struct {
	outcomes []store.Outcome
	applied  []bool
}

// Record implements store.DeliveryStore. For each outcome, in order, it
// writes the delivery's new state if the delivery is still pending (and,
// when o.LeaseOwner is set, still leased by that owner): LastAttemptAt
// becomes the attempt's start and the lease is cleared. It appends the
// attempt to the log unless Attempt.Number is 0, replacing a logged
// attempt with the same number. An outcome for a delivery that no longer
// exists is skipped with a warning. An outcome with an invalid status or
// no delivery ID fails the call before anything is written.
//
// A queued outcome writes status queued, receivable at its NextAttemptAt.
// With Deactivate too, once its state change applied, the delivery's
// subscription is deactivated in the same transaction (deactivateAll);
// Deactivate on an outcome of another status is ignored. The
// subscriptions whose deliveries it queued are announced after the
// commit. A dead-lettered outcome with DeadLetterCopy, when its state
// change applies, writes the delivery of the dead letter on the
// dead-letter URL's endpoint its subscription names in this transaction
// (qInsertDeadLetterCopies): DeadLetterCopy.ID; its other fields are
// ignored. The outcomes whose state changes applied are added to the
// delivery rollups (store.StatsStore) in the same transaction.
//
// The call is one request of the writer's group commit (writer.go);
// applied says which outcomes' state changes applied.
func (s *Store) Record(ctx context.Context, outcomes []store.Outcome) (applied []bool, err error) {
	if len(outcomes) == 0 {
		if err := s.w.checkOpen(); err != nil {
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
	rec := &recordReq{outcomes: outcomes}
	r := &request{rec: rec, rows: len(outcomes)}
	if err := s.w.write(ctx, r); err != nil {
		return nil, err
	}
	s.queuedHere(r.queued.IDs)
	return rec.applied, nil
}

// deactivates reports whether o deactivates its subscription when applied.
func deactivates(o *store.Outcome) bool {
	return o.Deactivate && o.Status == delivery.StatusQueued
}

// copiesDeadLetter reports whether o writes the delivery of a dead letter
// when applied.
func copiesDeadLetter(o *store.Outcome) bool {
	return o.DeadLetterCopy != nil && o.Status == delivery.StatusDeadLettered
}

// applied is a delivery an outcome changed (qApplyOutcomes).
type applied struct {
	account, subscription, endpoint string
	status                          delivery.Status
}

// record applies the outcomes of recs, in order. Outcomes go in rounds in
// which each delivery appears once (a statement cannot change a row
// twice); a delivery's later outcome goes in a later round, which sees
// the earlier one's effect, as if applied one by one. The subscriptions of
// the deliveries it queued go into their requests' queued.
func (s *Store) record(ctx context.Context, x driver.Executor, recs []*request) error {
	var rounds [][]*store.Outcome
	owner := map[*store.Outcome]*request{}
	last := map[string]int{} // delivery ID → the last round holding it
	roundOf := make([][]int, len(recs))
	for k, r := range recs {
		r.queued.Reset()
		r.rec.applied = make([]bool, len(r.rec.outcomes))
		roundOf[k] = make([]int, len(r.rec.outcomes))
		for i := range r.rec.outcomes {
			o := &r.rec.outcomes[i]
			n := 0
			if prev, ok := last[o.Attempt.DeliveryID]; ok {
				n = prev + 1
			}
			last[o.Attempt.DeliveryID], roundOf[k][i] = n, n
			owner[o] = r
			if n == len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[n] = append(rounds[n], o)
		}
	}
	if len(rounds) == 0 {
		return nil
	}
	counted := s.w.gc.CountsInApply
	done := make([]map[string]applied, len(rounds))
	var stmts []Statement
	for i, round := range rounds {
		done[i] = make(map[string]applied, len(round))
		stmts = append(stmts, applyRound(round, counted, done[i]))
		if !counted {
			continue
		}
		if at := attemptsOf(round, nil); len(at.id) > 0 { // logged blind: see afterRounds
			stmts = append(stmts, Statement{Query: qLogAttempts, Args: at.args()})
		}
	}
	if err := pipeline(ctx, x, stmts...); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	for k, r := range recs {
		for i := range r.rec.outcomes {
			_, r.rec.applied[i] = done[roundOf[k][i]][r.rec.outcomes[i].Attempt.DeliveryID]
		}
	}
	return s.afterRounds(ctx, x, rounds, done, owner)
}

// applyRound is the statement that writes the states of one round's
// outcomes, with the rollups when counted (qApplyCountedOutcomes), and
// notes the deliveries it changed in done, by ID.
func applyRound(round []*store.Outcome, counted bool, done map[string]applied) Statement {
	n := len(round)
	var (
		id, status, owner                        = make([]string, n), make([]string, n), make([]string, n)
		lastOutcome, reason                      = make(driver.FreeText, n), make(driver.FreeText, n)
		attempts, roundAttempts, lastCode        = make([]int64, n), make([]int64, n), make([]int64, n)
		firstFailure, next, started, deliveredAt = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i, o := range round {
		a := &o.Attempt
		id[i], status[i], owner[i] = a.DeliveryID, string(o.Status), o.LeaseOwner
		attempts[i], roundAttempts[i], lastCode[i] = int64(o.Attempts), int64(o.RoundAttempts), int64(o.LastStatusCode)
		firstFailure[i], next[i], started[i] = sqlrow.UnixMS(o.FirstFailure), sqlrow.UnixMS(o.NextAttemptAt), sqlrow.UnixMS(a.StartedAt)
		lastOutcome[i], reason[i], deliveredAt[i] = o.LastOutcome, o.DeadLetterReason, sqlrow.UnixMS(o.DeliveredAt)
	}
	st := Statement{Query: qApplyOutcomes, Args: []any{id, status, attempts, roundAttempts, firstFailure, next, started,
		lastCode, lastOutcome, reason, deliveredAt, owner}}
	if counted {
		st.Query, st.Args = qApplyCountedOutcomes, append(st.Args, shares(round)...)
	}
	st.Each = func(r driver.Row) error {
		var id string
		var a applied
		err := r.Scan(&id, &a.account, &a.subscription, &a.endpoint, &a.status)
		done[id] = a
		return err
	}
	return st
}

// shares are qApplyCountedOutcomes' columns after qApplyOutcomes': each
// outcome's share of the rollups (statsShare), its latency bucket as an
// index (15 columns fewer than the share's own, which the statement
// expands).
func shares(round []*store.Outcome) []any {
	n := len(round)
	counted, minute, bucket := make([]int64, n), make([]int64, n), make([]int64, n)
	delivered, failed, deadLettered := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, o := range round {
		c, ok := statsShare(o)
		if !ok {
			continue
		}
		counted[i], minute[i], bucket[i] = 1, sqlrow.StatsMinute(o), int64(sqlrow.StatsBucket(o))
		delivered[i], failed[i], deadLettered[i] = c[0], c[1], c[2]
	}
	return []any{counted, minute, delivered, failed, deadLettered, bucket}
}

// attemptsOf are the attempts of round to log: every one made (Number
// 0: none was), but those of the deliveries in missing.
func attemptsOf(round []*store.Outcome, missing map[string]bool) attemptRows {
	var at attemptRows
	for _, o := range round {
		if o.Attempt.Number != 0 && !missing[o.Attempt.DeliveryID] {
			at.add(o)
		}
	}
	return at
}

// afterRounds does what follows the rounds' state changes: it finds the
// deliveries that do not exist (only when some outcome did not apply),
// logs the other attempts, adds the rollups, writes the deliveries of dead
// letters and deactivates the subscriptions the outcomes ask to.
func (s *Store) afterRounds(ctx context.Context, x driver.Executor, rounds [][]*store.Outcome, done []map[string]applied, owner map[*store.Outcome]*request) error {
	counted := s.w.gc.CountsInApply
	missing, err := s.missing(ctx, x, rounds, done)
	if err != nil {
		return err
	}
	if counted && len(missing) > 0 { // their attempts went with the apply
		if _, err := x.Exec(ctx, qDeleteAttemptsOf, slices.Collect(maps.Keys(missing))); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	}
	var st statsRows
	var cp copyRows
	var deact []deactivation
	var stmts []Statement
	for i, round := range rounds {
		for _, o := range round {
			a, ok := done[i][o.Attempt.DeliveryID]
			if !ok {
				continue
			}
			if !counted {
				st.add(o, &a)
			}
			if copiesDeadLetter(o) {
				cp.add(o)
			}
			if a.status == delivery.StatusQueued {
				owner[o].queued.Add(a.subscription)
				if deactivates(o) {
					deact = append(deact, deactivation{a.subscription, sqlrow.UnixMS(o.Attempt.StartedAt), sqlrow.UnixMS(o.NextAttemptAt), o.DeactivateReason, owner[o]})
				}
			}
		}
		if at := attemptsOf(round, missing); !counted && len(at.id) > 0 {
			stmts = append(stmts, Statement{Query: qLogAttempts, Args: at.args()})
		}
	}
	if len(st.keys) > 0 {
		stmts = append(stmts, Statement{Query: qAddStats, Args: st.args()})
	}
	if len(cp.id) > 0 {
		stmts = append(stmts, Statement{Query: qInsertDeadLetterCopies, Args: []any{cp.id, cp.at, cp.from}})
	}
	if err := pipeline(ctx, x, stmts...); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return s.deactivateAll(ctx, x, deact)
}

// missing returns, among the outcomes of the rounds in which some did not
// apply, the deliveries that do not exist, and warns of each: their
// attempts are not logged.
func (s *Store) missing(ctx context.Context, x driver.Executor, rounds [][]*store.Outcome, done []map[string]applied) (map[string]bool, error) {
	var ids []string
	for i, round := range rounds {
		if len(done[i]) == len(round) {
			continue
		}
		for _, o := range round {
			if _, ok := done[i][o.Attempt.DeliveryID]; !ok {
				ids = append(ids, o.Attempt.DeliveryID)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	missing, err := idsOf(ctx, x, qMissingDeliveries, ids)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	for _, round := range rounds {
		for _, o := range round {
			if missing[o.Attempt.DeliveryID] {
				s.log.Warn("record: no such delivery; attempt not logged", "delivery_id", o.Attempt.DeliveryID, "attempt", o.Attempt.Number)
			}
		}
	}
	return missing, nil
}

// attemptRows are the columns of qLogAttempts.
type attemptRows struct {
	id             []string
	outcome, err   driver.FreeText
	number, code   []int64
	started, durUS []int64
	body           [][]byte
}

func (a *attemptRows) add(o *store.Outcome) {
	at := &o.Attempt
	a.id, a.number, a.started = append(a.id, at.DeliveryID), append(a.number, int64(at.Number)), append(a.started, sqlrow.UnixMS(at.StartedAt))
	a.durUS, a.code = append(a.durUS, at.Duration.Microseconds()), append(a.code, int64(at.StatusCode))
	body := at.ResponseBody
	if body == nil {
		body = []byte{}
	}
	a.outcome, a.err, a.body = append(a.outcome, at.Outcome), append(a.err, at.Error), append(a.body, body)
}

func (a *attemptRows) args() []any {
	return []any{a.id, a.number, a.started, a.durUS, a.code, a.outcome, a.err, a.body}
}

// copyRows are the columns of qInsertDeadLetterCopies.
type copyRows struct {
	id, from []string
	at       []int64
}

func (c *copyRows) add(o *store.Outcome) {
	c.id, c.at, c.from = append(c.id, o.DeadLetterCopy.ID), append(c.at, sqlrow.AttemptDueMS(&o.Attempt)), append(c.from, o.Attempt.DeliveryID)
}

// statsKey is a row of the delivery rollups.
type statsKey struct {
	minute                          int64
	account, subscription, endpoint string
}

// statsRows add up the applied outcomes that count (sqlrow.StatsCounted)
// per rollup row: delivered, failed (an attempt that did not deliver),
// dead-lettered, and each attempt's latency bucket.
type statsRows struct {
	at     map[statsKey]int
	keys   []statsKey
	counts [][3 + stats.Buckets]int64
}

func (st *statsRows) add(o *store.Outcome, a *applied) {
	if !sqlrow.StatsCounted(o) {
		return
	}
	k := statsKey{sqlrow.StatsMinute(o), a.account, a.subscription, a.endpoint}
	i, ok := st.at[k]
	if !ok {
		if st.at == nil {
			st.at = map[statsKey]int{}
		}
		i = len(st.keys)
		st.at[k] = i
		st.keys = append(st.keys, k)
		st.counts = append(st.counts, [3 + stats.Buckets]int64{})
	}
	share, _ := statsShare(o)
	for j := range share {
		st.counts[i][j] += share[j]
	}
}

// statsShare is what outcome o adds to its rollup row when applied
// (delivered, failed: an attempt that did not deliver, dead_lettered,
// then one for its attempt's latency bucket), and whether it counts
// (sqlrow.StatsCounted).
func statsShare(o *store.Outcome) (c [3 + stats.Buckets]int64, counts bool) {
	if !sqlrow.StatsCounted(o) {
		return c, false
	}
	bucket := sqlrow.StatsBucket(o)
	switch {
	case o.Status == delivery.StatusDelivered:
		c[0] = 1
	case bucket >= 0:
		c[1] = 1
	}
	if o.Status == delivery.StatusDeadLettered {
		c[2] = 1
	}
	if bucket >= 0 {
		c[3+bucket] = 1
	}
	return c, true
}

// args are qAddStats' columns, in key order (minute, subscription,
// endpoint): two writers adding to the same rows lock them in one order.
func (st *statsRows) args() []any {
	order := make([]int, len(st.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ka, kb := st.keys[a], st.keys[b]
		return cmp.Or(cmp.Compare(ka.minute, kb.minute), strings.Compare(ka.subscription, kb.subscription),
			strings.Compare(ka.endpoint, kb.endpoint))
	})
	n := len(st.keys)
	minute, acc, sub, ep := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	cols := make([][]int64, 3+stats.Buckets)
	for j := range cols {
		cols[j] = make([]int64, n)
	}
	for i, at := range order {
		k := st.keys[at]
		minute[i], acc[i], sub[i], ep[i] = k.minute, k.account, k.subscription, k.endpoint
		for j := range cols {
			cols[j][i] = st.counts[at][j]
		}
	}
	args := []any{minute, acc, sub, ep}
	for _, c := range cols {
		args = append(args, c)
	}
	return args
}

// deactivation is a subscription a Record batch deactivates: when its
// other pending deliveries become receivable (the deactivating attempt's
// start, Unix ms), when its state changed (the outcome's NextAttemptAt,
// Unix ms) and why.
type deactivation struct {
	subscription string
	at, changed  int64
	reason       string
	by           *request // its queued gets the subscription
}

// deactivateAll deactivates the subscriptions of ds (the first entry of
// each wins) that are push subscriptions not deactivated yet, at one new
// catalog version, and queues their pending deliveries, leased ones
// included (their holders' outcomes then only log their attempts); their
// IDs go into the queued of the requests that asked. Nothing changes, and the version stays, when none
// is. The batch holds the catalog lock (guard), so no subscription write
// changes their states meanwhile.
func (s *Store) deactivateAll(ctx context.Context, x driver.Executor, ds []deactivation) error {
	if len(ds) == 0 {
		return nil
	}
	var subs sqlrow.IDSet
	for _, d := range ds {
		subs.Add(d.subscription)
	}
	active, err := idsOf(ctx, x, qActiveSubscriptions, subs.IDs)
	if err != nil || len(active) == 0 {
		return err
	}
	v, err := s.bumpCatalog(ctx, x)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if !active[d.subscription] {
			continue
		}
		delete(active, d.subscription) // the first entry wins
		if _, err := x.Exec(ctx, qDeactivateSubscription, d.reason, d.changed, v, d.subscription); err != nil {
			return fmt.Errorf("deactivate subscription %s: %w", d.subscription, err)
		}
		if _, err := x.Exec(ctx, qQueuePending, d.at, d.subscription); err != nil {
			return fmt.Errorf("queue the pending deliveries of subscription %s: %w", d.subscription, err)
		}
		d.by.queued.Add(d.subscription)
	}
	return nil
}

// idsOf runs q, a statement that returns IDs, on the list ids, and
// returns the set of those it returned.
func idsOf(ctx context.Context, x driver.Executor, q driver.Query, ids []string) (map[string]bool, error) {
	set := map[string]bool{}
	err := x.Query(ctx, q, func(r driver.Row) error {
		var id string
		err := r.Scan(&id)
		set[id] = true
		return err
	}, ids)
	return set, err
}
