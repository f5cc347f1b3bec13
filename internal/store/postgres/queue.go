package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Queued deliveries and their locks (store.QueueStore). A queued delivery
// is receivable when next_attempt_at <= now; Receive locks it by moving
// next_attempt_at and lock_until to the lock's end and writing a new
// lock_token, so an expired lock needs no write to make it receivable
// again. Candidates are locked with FOR UPDATE SKIP LOCKED, as in ClaimDue:
// two receives, on any nodes, never get the same delivery, and a delivery
// one of them locked is receivable again only once its lock_until has
// passed by the other's now (nodes' clocks must agree to well within a
// lock). Settle changes only a delivery whose lock_token is the token and
// whose lock has not expired, in one statement, so a token whose lock
// expired and was received again under another settles nothing.
//
// The queries repeat the WHERE clause of the partial indexes of 0006_queue.sql
// (queuedRows) literally, so that every plan, generic ones included, can
// use them.

// queuedRows is the condition of the partial indexes of queued deliveries.
const queuedRows = `d.status = 'queued'`

// Dead-letter reasons of Receive: retry.ReasonMaxAttempts and
// retry.ReasonTTL (the store does not import retry).
const (
	reasonMaxReceives = "MaxDeliveryAttemptsExceeded"
	reasonTTL         = "TimeToLiveExceeded"
)

// maxEnded bounds how many deliveries one Receive ends (dead-letters or
// drops) on its way to Max receivable ones; the next call ends more.
const maxEnded = 1000

// maxReceive bounds ReceiveRequest.Max, maxTokens the tokens of one
// Settle.
const (
	maxReceive = 1000
	maxTokens  = 1000
)

const (
	// receivableSQL locks, oldest due first, up to $3 receivable deliveries
	// of subscription $1 at now $2, skipping those another transaction
	// holds. It returns what Receive decides on, with the size of each
	// one's payload (octet_length reads a TOASTed value's size, not the
	// value). Those this transaction handled already are not receivable
	// any more: it ended them, or locked them until after now.
	receivableSQL = `SELECT d.id, d.receives, d.round_start, d.lock_token,
	coalesce((SELECT octet_length(e.payload) FROM events AS e WHERE e.seq = d.event_seq), 0)
FROM deliveries AS d
WHERE d.subscription_id = $1 AND ` + queuedRows + ` AND d.next_attempt_at <= $2
ORDER BY d.next_attempt_at, d.id
LIMIT $3
FOR UPDATE SKIP LOCKED`

	// takeSQL applies Receive's decisions to the deliveries it locked: a
	// delivery with a token ($3) is locked with it until $5 (Receives + 1);
	// one without ends with status $2 and reason $4, unlocked. It returns
	// them as they now are, the locked ones with their payloads (the
	// ended ones with none).
	takeSQL = `UPDATE deliveries AS d SET
	status = u.status,
	dead_letter_reason = CASE WHEN u.token <> '' THEN d.dead_letter_reason ELSE u.reason END,
	receives = d.receives + CASE WHEN u.token <> '' THEN 1 ELSE 0 END,
	next_attempt_at = CASE WHEN u.token <> '' THEN $5 ELSE d.next_attempt_at END,
	lock_token = u.token,
	lock_until = CASE WHEN u.token <> '' THEN $5 ELSE 0 END
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(id, status, token, reason), events AS e
WHERE d.id = u.id AND e.seq = d.event_seq
RETURNING ` + deliveryCols + `, CASE WHEN u.token <> '' THEN e.payload END`

	// nextQueuedSQL: the earliest next_attempt_at of subscription $1's
	// queued deliveries (locked ones included), one index seek.
	nextQueuedSQL = `SELECT d.next_attempt_at FROM deliveries AS d
WHERE d.subscription_id = $1 AND ` + queuedRows + `
ORDER BY d.next_attempt_at, d.id
LIMIT 1`

	countQueuedSQL = `SELECT COUNT(*) FROM deliveries AS d WHERE ` + queuedRows

	// settleWhere: the live locks of tokens t of subscription $1 at now $2.
	// Each token is a primary-key seek: the subscription is compared as an
	// expression (|| ''), which no index serves, or the planner may prefer
	// to scan the subscription's entries of deliveries_queued for each
	// token.
	settleWhere = `
FROM unnest($3::text[], $4::text[]) AS t(id, token)
WHERE d.id = t.id AND d.subscription_id || '' = $1 AND ` + queuedRows + ` AND d.lock_token = t.token AND d.lock_until > $2
RETURNING t.token`
	unlock = `lock_token = '', lock_until = 0`

	// acknowledgeSQL adds the deliveries it acknowledged to the rollups
	// (store.StatsStore): delivered, in the minute of now.
	acknowledgeSQL = `WITH upd AS (
	UPDATE deliveries AS d SET status = 'delivered', delivered_at = $2, ` + unlock + settleWhere + `,
		d.account_id, d.subscription_id, d.endpoint_id
), st AS (
	INSERT INTO delivery_stats (minute, account_id, subscription_id, endpoint_id, delivered)
	SELECT $2 - $2 % 60000, account_id, subscription_id, endpoint_id, count(*) FROM upd
	GROUP BY account_id, subscription_id, endpoint_id ORDER BY subscription_id, endpoint_id
	ON CONFLICT (minute, subscription_id, endpoint_id) DO UPDATE SET delivered = delivery_stats.delivered + excluded.delivered
)
SELECT token FROM upd`
	// releaseSQL: $5 is when the delivery is receivable again.
	releaseLockSQL = `UPDATE deliveries AS d SET next_attempt_at = $5, ` + unlock + settleWhere
	// rejectSQL: $5 is dead_lettered or dropped.
	rejectSQL = `UPDATE deliveries AS d SET status = $5, dead_letter_reason = '` + delivery.ReasonRejected + `', ` + unlock + settleWhere
	// renewSQL: $5 is the lock's new end.
	renewSQL = `UPDATE deliveries AS d SET next_attempt_at = $5, lock_until = $5` + settleWhere
)

// Receive implements store.QueueStore in one transaction (run again after
// a deadlock or serialization failure). It locks receivable deliveries
// (receivableSQL), oldest due first, and decides on each in turn: one
// received r.MaxReceives times already ends with reason
// MaxDeliveryAttemptsExceeded, one whose round started r.TTL or more before
// r.Now with TimeToLiveExceeded (dead-lettered, or dropped when
// !r.DeadLetter; its lock cleared); any other is locked until
// r.Now + r.LockFor under a new token (store.LockToken with 26 random
// characters), until the next would bring those it locked over r's bound
// of bytes (r.Take): it and the deliveries after it stay as they were. It
// reads more while deliveries it ended leave room below r.Max and the
// bytes, ending at most maxEnded per call. Received and Ended are in the
// order their deliveries were due (then ID order). r.Max must be 1..1000
// and r.LockFor positive. NextAt is read in the same transaction, after the
// locks are written: it is the earliest next_attempt_at of every queued
// delivery of the subscription, the ones just locked included (so at most
// the new locks' end).
func (s *backend) Receive(ctx context.Context, r store.ReceiveRequest) (store.ReceiveResult, error) {
	if err := s.checkOpen(); err != nil {
		return store.ReceiveResult{}, err
	}
	if r.Max < 1 || r.Max > maxReceive {
		return store.ReceiveResult{}, fmt.Errorf("receive: max %d is not in 1..%d", r.Max, maxReceive)
	}
	if r.LockFor <= 0 {
		return store.ReceiveResult{}, fmt.Errorf("receive: lock duration %v is not positive", r.LockFor)
	}
	var res store.ReceiveResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = receive(ctx, tx, r)
		return err
	})
	if err != nil {
		return store.ReceiveResult{}, fmt.Errorf("receive from %s: %w", r.SubscriptionID, err)
	}
	return res, nil
}

// candidate is a delivery receivableSQL locked.
type candidate struct {
	id         string
	receives   int
	roundStart int64
	token      string // its lock token before: an expired lock's
	size       int64  // its payload's bytes
}

// receive is Receive's transaction: rounds of reading receivable
// deliveries and deciding on each, until the request is served, then
// NextAt.
func receive(ctx context.Context, tx pgx.Tx, r store.ReceiveRequest) (store.ReceiveResult, error) {
	rc := newReceiver(r)
	for len(rc.res.Received) < r.Max && !rc.bounded && rc.nEnded < maxEnded {
		more, err := rc.round(ctx, tx)
		if err != nil {
			return rc.res, err
		}
		if !more {
			break
		}
	}
	var next *int64
	switch err := tx.QueryRow(ctx, nextQueuedSQL, r.SubscriptionID).Scan(&next); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return rc.res, err
	default:
		rc.res.NextAt = sqlrow.FromUnixMS(*next)
	}
	return rc.res, nil
}

// receiver is one Receive's state across its rounds.
type receiver struct {
	r          store.ReceiveRequest
	now, until int64  // r.Now and the locks' end, Unix milliseconds
	ended      string // the status of a delivery it ends
	res        store.ReceiveResult
	nEnded     int   // deliveries ended
	locked     int   // deliveries locked
	bytes      int64 // of those locked, as r.Take counts them
	bounded    bool  // the next delivery would cross the bound of bytes
}

func newReceiver(r store.ReceiveRequest) *receiver {
	rc := &receiver{r: r, now: sqlrow.UnixMS(r.Now), until: sqlrow.UnixMS(r.Now.Add(r.LockFor)), ended: string(delivery.StatusDropped)}
	if r.DeadLetter {
		rc.ended = string(delivery.StatusDeadLettered)
	}
	return rc
}

// decisions are what one round does to the candidates it takes, index by
// index: the new status, the lock token ("" for one it ends) and the
// reason of one it ends.
type decisions struct {
	ids, status, tokens, reasons []string
}

// round locks the receivable deliveries still wanted (receivableSQL),
// decides on each (decide) and writes the decisions (takeSQL). more is
// false when no round should follow: nothing more is receivable, or the
// bytes are reached.
func (rc *receiver) round(ctx context.Context, tx pgx.Tx) (more bool, err error) {
	want := rc.r.Max - len(rc.res.Received)
	rows, err := tx.Query(ctx, receivableSQL, rc.r.SubscriptionID, rc.now, want)
	if err != nil {
		return false, err
	}
	cs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (c candidate, err error) {
		return c, row.Scan(&c.id, &c.receives, &c.roundStart, &c.token, &c.size)
	})
	if err != nil || len(cs) == 0 {
		return false, err
	}
	d, full := rc.decide(cs)
	rows, err = tx.Query(ctx, takeSQL, d.ids, d.status, d.tokens, d.reasons, rc.until)
	if err != nil {
		return false, err
	}
	taken, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Received, error) {
		var got store.Received
		dl, err := scanDelivery(row, &got.Payload)
		got.Delivery = dl
		return got, err
	})
	if err != nil {
		return false, err
	}
	rc.collect(d, taken)
	return !full && len(cs) >= want, nil
}

// decide decides on the candidates in due order until the locked ones
// reach r.Max or the next would cross r's bound of bytes (r.Take; full:
// that one and the rest stay as they are): one received r.MaxReceives
// times ends with reasonMaxReceives, one whose round is past r.TTL with
// reasonTTL, any other is locked under a new token.
func (rc *receiver) decide(cs []candidate) (d decisions, full bool) {
	for _, c := range cs {
		if rc.locked >= rc.r.Max {
			return d, true
		}
		status, token, reason := string(delivery.StatusQueued), "", ""
		switch {
		case rc.r.MaxReceives > 0 && c.receives >= rc.r.MaxReceives:
			status, reason = rc.ended, reasonMaxReceives
		case rc.r.TTL > 0 && c.roundStart+rc.r.TTL.Milliseconds() <= rc.now:
			status, reason = rc.ended, reasonTTL
		default:
			total, ok := rc.r.Take(rc.locked, rc.bytes, c.id, c.size)
			if !ok {
				rc.bounded = true
				return d, true
			}
			token = store.LockToken(c.id, rand.Text())
			if c.token != "" {
				rc.res.ExpiredLocks++
			}
			rc.locked++
			rc.bytes = total
		}
		d.ids, d.status = append(d.ids, c.id), append(d.status, status)
		d.tokens, d.reasons = append(d.tokens, token), append(d.reasons, reason)
	}
	return d, false
}

// collect adds the deliveries a round took to the result, in the order
// they were due (UPDATE ... RETURNING has none): those it locked to
// Received, those it ended to Ended.
func (rc *receiver) collect(d decisions, taken []store.Received) {
	byID := make(map[string]store.Received, len(taken))
	for _, t := range taken {
		byID[t.ID] = t
	}
	for i, id := range d.ids {
		t, ok := byID[id]
		switch {
		case !ok: // its event is gone: cannot happen while it is queued
		case d.tokens[i] == "":
			rc.res.Ended = append(rc.res.Ended, t.Delivery)
			rc.nEnded++
		default:
			t.LockToken = d.tokens[i]
			rc.res.Received = append(rc.res.Received, t)
		}
	}
}

// Settle implements store.QueueStore in one statement (its own
// transaction, run again after a deadlock or serialization failure): each
// token's delivery (store.LockTokenDelivery) changes if it is a queued
// delivery of r.SubscriptionID whose lock_token is the token and whose
// lock_until is after r.Now. A token given twice counts once: for Renew
// both get its result, for the other actions the second gets ErrLockLost
// (the first settled the lock). A Release notifies every node of the
// subscription (it has deliveries receivable again) and calls
// Options.OnQueued after the commit. More than 1000 tokens, an unknown
// action, or a Renew without a positive LockFor fail the call.
func (s *backend) Settle(ctx context.Context, r store.SettleRequest) ([]error, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if len(r.Tokens) > maxTokens {
		return nil, fmt.Errorf("settle: %d lock tokens, at most %d", len(r.Tokens), maxTokens)
	}
	now := sqlrow.UnixMS(r.Now)
	var query string
	args := []any{r.SubscriptionID, now, nil, nil}
	switch r.Action {
	case store.Acknowledge:
		query = acknowledgeSQL
	case store.Release:
		query, args = releaseLockSQL, append(args, sqlrow.UnixMS(r.Now.Add(r.Delay)))
	case store.Reject:
		status := delivery.StatusDropped
		if r.DeadLetter {
			status = delivery.StatusDeadLettered
		}
		query, args = rejectSQL, append(args, string(status))
	case store.Renew:
		if r.LockFor <= 0 {
			return nil, fmt.Errorf("settle: lock duration %v is not positive", r.LockFor)
		}
		query, args = renewSQL, append(args, sqlrow.UnixMS(r.Now.Add(r.LockFor)))
	default:
		return nil, fmt.Errorf("settle: unknown action %d", r.Action)
	}
	results := make([]error, len(r.Tokens))
	first := map[string]int{} // token → its first index
	var ids, tokens []string
	for i, tok := range r.Tokens {
		results[i] = store.ErrLockLost
		id := store.LockTokenDelivery(tok)
		if id == "" {
			continue
		}
		if _, dup := first[tok]; dup {
			continue
		}
		first[tok] = i
		ids, tokens = append(ids, id), append(tokens, tok)
	}
	if len(ids) == 0 {
		return results, nil
	}
	args[2], args[3] = ids, tokens
	var settled []string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		if settled, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if r.Action == store.Release && len(settled) > 0 {
			return s.notifyQueued(ctx, tx, []string{r.SubscriptionID})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	ok := make(map[string]bool, len(settled))
	for _, tok := range settled {
		ok[tok] = true
	}
	for i, tok := range r.Tokens {
		if ok[tok] && (first[tok] == i || r.Action == store.Renew) {
			results[i] = nil
		}
	}
	if r.Action == store.Release && len(settled) > 0 {
		s.queuedHere([]string{r.SubscriptionID})
	}
	return results, nil
}

// CountQueued implements store.QueueStore: it counts the entries of a
// partial index of queued deliveries, so it takes time proportional to
// their number, not to the deliveries'.
func (s *backend) CountQueued(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	n, err := queryRow(ctx, s, func(sc scanner) (n int64, err error) {
		return n, sc.Scan(&n)
	}, countQueuedSQL)
	if err != nil {
		return 0, fmt.Errorf("count queued: %w", s.err(err))
	}
	return n, nil
}
