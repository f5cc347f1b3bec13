package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Queued deliveries and their locks (store.QueueStore). A queued delivery
// is receivable when next_attempt_at <= now; Receive locks it by moving
// next_attempt_at and lock_until to the lock's end and writing a new
// lock_token, so an expired lock needs no write to make it receivable
// again. Settle changes only a delivery whose lock_token is the token and
// whose lock has not expired, so a token whose lock expired and was
// received again under another settles nothing. The statements that look
// queued deliveries up repeat the condition of the partial indexes of
// queued deliveries (SQLite's 0006_queue.sql, PostgreSQL's on
// open_deliveries since 0021), status = 'queued', literally, so that every
// plan (PostgreSQL's generic ones, SQLite's) can use them.
var (
	// qReceivable: up to $3 receivable deliveries of subscription $1 at
	// now $2, oldest due first (ties in ID order, which the index holds
	// after next_attempt_at): id, receives, round_start, lock_token (of
	// their previous lock) and their payload's bytes (octet_length reads
	// no payload). PostgreSQL locks them (FOR UPDATE SKIP LOCKED: two
	// receives, on any nodes, never get the same delivery); SQLite's one
	// writer needs no lock, and a delivery whose event is not stored yet
	// (a staged publish's) is not receivable there. Those the transaction
	// handled already are not receivable any more: it ended them, or
	// locked them until after now.
	qReceivable = query("Receivable")
	// qLockReceived locks the deliveries of lock tokens $1 (each token
	// names its delivery: store.LockTokenDelivery) until $2, receives + 1,
	// and returns them as they now are (sqlrow.ScanDelivery) with their
	// payloads.
	qLockReceived = query("LockReceived")
	// qEndReceived ends deliveries $1 with status $2 and reason $3,
	// unlocked, and returns them as they now are (sqlrow.ScanDelivery).
	qEndReceived = query("EndReceived")
	// qNextQueued: the earliest next_attempt_at of subscription $1's
	// queued deliveries (locked ones included), one index seek; no row, or
	// NULL, when it has none.
	qNextQueued = query("NextQueued")
	// qCountQueued counts the entries of the partial index of queued
	// deliveries: time in proportion to the queued backlog.
	qCountQueued = query("CountQueued")

	// The actions of Settle on the live locks of subscription $1 at now $2
	// (lock_until after it), of deliveries $3 under tokens $4, no delivery
	// given twice: each returns the id of every delivery it changed. Each
	// delivery is a primary-key seek: the subscription is a filter, which
	// no index serves, or the planner may prefer to scan the
	// subscription's entries of the queued deliveries' index.
	//
	// qSettleAcknowledge delivers them at $2.
	qSettleAcknowledge = query("SettleAcknowledge")
	// qSettleRelease unlocks them, receivable again at $5.
	qSettleRelease = query("SettleRelease")
	// qSettleReject ends them with status $5 (dead-lettered or dropped)
	// and reason $6, unlocked.
	qSettleReject = query("SettleReject")
	// qSettleRenew moves their locks' end (and next_attempt_at) to $5.
	qSettleRenew = query("SettleRenew")
	// qAddAcknowledgedStats adds deliveries $1, acknowledged, to the
	// rollups (store.StatsStore) of minute $2: delivered, no attempt.
	qAddAcknowledgedStats = query("AddAcknowledgedStats")
)

// The reasons Receive ends a delivery with: the values of
// retry.ReasonMaxAttempts and retry.ReasonTTL (the store does not import
// the retry policies).
const (
	reasonMaxReceives = "MaxDeliveryAttemptsExceeded"
	reasonTTL         = "TimeToLiveExceeded"
)

const (
	// maxReceive bounds ReceiveRequest.Max, maxSettle the tokens of one
	// Settle.
	maxReceive = 1000
	maxSettle  = 1000
	// maxEnded bounds the deliveries one Receive ends (dead-letters or
	// drops) on its way to Max receivable ones, so that a long run of
	// expired ones cannot hold the transaction: the next call ends more.
	maxEnded = 1000
)

// Receive implements store.QueueStore in one write transaction. It takes
// receivable deliveries (qReceivable: their payloads' sizes, not the
// payloads), oldest due first, and decides on each in turn: one received
// r.MaxReceives times already ends with reason MaxDeliveryAttemptsExceeded,
// one whose round started r.TTL or more before r.Now with
// TimeToLiveExceeded (dead-lettered, or dropped when !r.DeadLetter; its
// lock cleared); any other is locked until r.Now + r.LockFor under a new
// token (store.LockToken: the delivery ID, a dot and 26 random base32
// characters, 128 bits of crypto/rand), until the next would bring those
// it locked over r's bound of bytes (r.Take): it and the deliveries after
// it stay as they were. It reads more while deliveries it ended leave room
// below r.Max and the bytes, ending at most maxEnded per call. Received
// and Ended are in the order their deliveries were due (then ID order),
// the received with their payloads. r.Max must be 1..1000 and r.LockFor
// positive. NextAt is read in the same transaction, after the locks are
// written: the earliest next_attempt_at of every queued delivery of the
// subscription, the ones just locked included (so at most the new locks'
// end).
func (s *Store) Receive(ctx context.Context, r store.ReceiveRequest) (store.ReceiveResult, error) {
	if r.Max < 1 || r.Max > maxReceive {
		return store.ReceiveResult{}, fmt.Errorf("receive: max %d is not in 1..%d", r.Max, maxReceive)
	}
	if r.LockFor <= 0 {
		return store.ReceiveResult{}, fmt.Errorf("receive: lock duration %v is not positive", r.LockFor)
	}
	var res store.ReceiveResult
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		res, err = receive(ctx, x, r)
		return err
	})
	if err != nil {
		return store.ReceiveResult{}, fmt.Errorf("receive from %s: %w", r.SubscriptionID, err)
	}
	return res, nil
}

// receive is Receive's transaction: rounds of reading receivable
// deliveries and deciding on each, until the request is served, then
// NextAt.
func receive(ctx context.Context, x driver.Executor, r store.ReceiveRequest) (store.ReceiveResult, error) {
	rc := newReceiver(r)
	for len(rc.res.Received) < r.Max && !rc.bounded && len(rc.res.Ended) < maxEnded {
		more, err := rc.round(ctx, x)
		if err != nil {
			return rc.res, err
		}
		if !more {
			break
		}
	}
	var next *int64
	switch err := x.QueryRow(ctx, qNextQueued, r.SubscriptionID).Scan(&next); {
	case errors.Is(err, driver.ErrNoRows):
	case err != nil:
		return rc.res, fmt.Errorf("next: %w", err)
	case next != nil:
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

// candidate is a row of qReceivable.
type candidate struct {
	id         string
	receives   int
	roundStart int64
	token      string // its lock token before: an expired lock's
	size       int64  // its payload's bytes
}

// decision is what a round does to one candidate: lock it under token,
// or (token "") end it with reason.
type decision struct {
	id, token, reason string
}

// round takes the receivable deliveries still wanted (qReceivable),
// decides on each (decide) and writes the decisions (take). more is false
// when no round should follow: nothing more is receivable, or the bytes
// are reached.
func (rc *receiver) round(ctx context.Context, x driver.Executor) (more bool, err error) {
	want := rc.r.Max - len(rc.res.Received)
	var cs []candidate
	err = x.Query(ctx, qReceivable, func(row driver.Row) error {
		var c candidate
		err := row.Scan(&c.id, &c.receives, &c.roundStart, &c.token, &c.size)
		cs = append(cs, c)
		return err
	}, rc.r.SubscriptionID, rc.now, want)
	if err != nil || len(cs) == 0 {
		return false, err
	}
	ds, full := rc.decide(cs)
	if err := rc.take(ctx, x, ds); err != nil {
		return false, err
	}
	return !full && len(cs) >= want, nil
}

// decide decides on the candidates in due order until the locked ones
// reach r.Max or the next would cross r's bound of bytes (r.Take; full:
// that one and the rest stay as they are): one received r.MaxReceives
// times ends with reasonMaxReceives, one whose round is past r.TTL with
// reasonTTL, any other is locked under a new token.
func (rc *receiver) decide(cs []candidate) (ds []decision, full bool) {
	locked := len(rc.res.Received)
	for _, c := range cs {
		if locked >= rc.r.Max {
			return ds, true
		}
		switch {
		case rc.r.MaxReceives > 0 && c.receives >= rc.r.MaxReceives:
			ds = append(ds, decision{id: c.id, reason: reasonMaxReceives})
		case rc.r.TTL > 0 && c.roundStart+rc.r.TTL.Milliseconds() <= rc.now:
			ds = append(ds, decision{id: c.id, reason: reasonTTL})
		default:
			total, ok := rc.r.Take(locked, rc.bytes, c.id, c.size)
			if !ok {
				rc.bounded = true
				return ds, true
			}
			ds = append(ds, decision{id: c.id, token: store.LockToken(c.id, rand.Text())})
			if c.token != "" {
				rc.res.ExpiredLocks++
			}
			locked++
			rc.bytes = total
		}
	}
	return ds, false
}

// take writes a round's decisions (qLockReceived, then qEndReceived once
// per reason) and adds the deliveries to the result in the order they
// were due (UPDATE ... RETURNING has none): those it locked to Received,
// those it ended to Ended.
func (rc *receiver) take(ctx context.Context, x driver.Executor, ds []decision) error {
	var tokens []string
	ended := map[string][]string{} // reason → ids
	for _, d := range ds {
		if d.token != "" {
			tokens = append(tokens, d.token)
		} else {
			ended[d.reason] = append(ended[d.reason], d.id)
		}
	}
	taken := make(map[string]store.Received, len(ds))
	scan := func(row driver.Row) error {
		var got store.Received
		var err error
		got.Delivery, err = sqlrow.ScanDelivery(row, &got.Payload)
		taken[got.ID] = got
		return err
	}
	if len(tokens) > 0 {
		if err := x.Query(ctx, qLockReceived, scan, tokens, rc.until); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
	}
	for _, reason := range []string{reasonMaxReceives, reasonTTL} {
		if ids := ended[reason]; len(ids) > 0 {
			err := x.Query(ctx, qEndReceived, func(row driver.Row) error {
				d, err := sqlrow.ScanDelivery(row)
				taken[d.ID] = store.Received{Delivery: d}
				return err
			}, ids, rc.ended, reason)
			if err != nil {
				return fmt.Errorf("end: %w", err)
			}
		}
	}
	for _, d := range ds {
		t, ok := taken[d.id]
		switch {
		case !ok: // its event is gone: cannot happen while it is queued
		case d.token == "":
			rc.res.Ended = append(rc.res.Ended, t.Delivery)
		default:
			t.LockToken = d.token
			rc.res.Received = append(rc.res.Received, t)
		}
	}
	return nil
}

// Settle implements store.QueueStore in one write transaction: each
// token's delivery (store.LockTokenDelivery) changes if it is a queued
// delivery of r.SubscriptionID whose lock_token is the token and whose
// lock_until is after r.Now; an acknowledged one is added to the rollups
// (store.StatsStore): delivered, in the minute of r.Now. A token that is
// not a lock token (no dot), names another subscription's delivery, was
// settled, or whose lock ended at or before r.Now gets ErrLockLost. A token
// given twice counts once: for Renew both get its result, for the other
// actions the second gets ErrLockLost (the first settled the lock). A
// Release that released any tells every node of the subscription (it has
// deliveries receivable again, at once or after r.Delay; qNotifyQueued,
// on a shared store) and calls Options.OnQueued after the commit. More than
// 1000 tokens, an unknown action, or a Renew without a positive LockFor
// fail the call.
func (s *Store) Settle(ctx context.Context, r store.SettleRequest) ([]error, error) {
	if len(r.Tokens) > maxSettle {
		return nil, fmt.Errorf("settle: %d lock tokens, at most %d", len(r.Tokens), maxSettle)
	}
	q, extra, err := settleAction(r)
	if err != nil {
		return nil, err
	}
	rounds, first := settleRounds(r.Tokens)
	now := sqlrow.UnixMS(r.Now)
	var settled map[string]bool // the tokens that settled a lock
	err = s.write(ctx, func(x driver.Executor) error {
		settled = map[string]bool{}
		var ids []string // the deliveries settled
		for _, tokens := range rounds {
			named := make([]string, len(tokens))
			byID := make(map[string]string, len(tokens))
			for i, tok := range tokens {
				named[i] = store.LockTokenDelivery(tok)
				byID[named[i]] = tok
			}
			err := x.Query(ctx, q, func(row driver.Row) error {
				var id string
				err := row.Scan(&id)
				settled[byID[id]] = true
				ids = append(ids, id)
				return err
			}, append([]any{r.SubscriptionID, now, named, tokens}, extra...)...)
			if err != nil {
				return err
			}
		}
		return s.settled(ctx, x, r, ids)
	})
	if err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	results := make([]error, len(r.Tokens))
	for i, tok := range r.Tokens {
		results[i] = store.ErrLockLost
		if settled[tok] && (first[tok] == i || r.Action == store.Renew) {
			results[i] = nil
		}
	}
	if r.Action == store.Release && len(settled) > 0 && s.opts.OnQueued != nil {
		s.opts.OnQueued([]string{r.SubscriptionID})
	}
	return results, nil
}

// settleAction returns the statement of r's action and its arguments
// after the common four.
func settleAction(r store.SettleRequest) (driver.Query, []any, error) {
	switch r.Action {
	case store.Acknowledge:
		return qSettleAcknowledge, nil, nil
	case store.Release:
		return qSettleRelease, []any{sqlrow.UnixMS(r.Now.Add(r.Delay))}, nil
	case store.Reject:
		status := delivery.StatusDropped
		if r.DeadLetter {
			status = delivery.StatusDeadLettered
		}
		return qSettleReject, []any{string(status), delivery.ReasonRejected}, nil
	case store.Renew:
		if r.LockFor <= 0 {
			return "", nil, fmt.Errorf("settle: lock duration %v is not positive", r.LockFor)
		}
		return qSettleRenew, []any{sqlrow.UnixMS(r.Now.Add(r.LockFor))}, nil
	}
	return "", nil, fmt.Errorf("settle: unknown action %d", r.Action)
}

// settleRounds returns the distinct lock tokens of tokens (those that name
// a delivery) in rounds, each of which names a delivery at most once (the
// first round holds nearly always all: a delivery has one live token at a
// time), and the index of each token's first occurrence.
func settleRounds(tokens []string) (rounds [][]string, first map[string]int) {
	first = map[string]int{}
	round := map[string]int{} // delivery → the rounds holding it
	for i, tok := range tokens {
		id := store.LockTokenDelivery(tok)
		if _, dup := first[tok]; dup || id == "" {
			continue
		}
		first[tok] = i
		k := round[id]
		round[id]++
		if k == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[k] = append(rounds[k], tok)
	}
	return rounds, first
}

// settled writes what follows the settling of deliveries ids by r, in its
// transaction: the rollups of those acknowledged, and the news of a
// release to the other nodes.
func (s *Store) settled(ctx context.Context, x driver.Executor, r store.SettleRequest, ids []string) error {
	switch {
	case len(ids) == 0:
	case r.Action == store.Acknowledge:
		if _, err := x.Exec(ctx, qAddAcknowledgedStats, ids, sqlrow.MinuteMS(sqlrow.UnixMS(r.Now))); err != nil {
			return fmt.Errorf("add delivery stats: %w", err)
		}
	case r.Action == store.Release && s.opts.Capabilities.Shared:
		if _, err := x.Exec(ctx, qNotifyQueued, []string{r.SubscriptionID}); err != nil {
			return fmt.Errorf("announce queued deliveries: %w", err)
		}
	}
	return nil
}

// CountQueued implements store.QueueStore (qCountQueued).
func (s *Store) CountQueued(ctx context.Context) (int64, error) {
	var n int64
	if err := s.drv.Reader().QueryRow(ctx, qCountQueued).Scan(&n); err != nil {
		return 0, fmt.Errorf("count queued: %w", err)
	}
	return n, nil
}
