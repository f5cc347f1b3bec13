package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Queued deliveries and their locks (store.QueueStore). The queries that
// look queued deliveries up repeat the condition of the partial index
// deliveries_queued, status = 'queued', literally, so that SQLite uses it
// (0006_queue.sql); INDEXED BY makes one that stops doing so fail instead
// of scanning the table. The others find a delivery by its ID.

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
	// receiveExtra bounds the deliveries one Receive may end (dead-letter
	// or drop) on top of the Max it returns, so that a long run of expired
	// ones cannot hold the writer: the rest end at the next Receive.
	receiveExtra = 1000
)

const (
	// receiveSQL: a subscription's receivable deliveries, oldest due first
	// (ties in ID order, which the index holds after next_attempt_at), with
	// the token of their previous lock and their event's payload size
	// (octet_length reads no payload).
	receiveSQL = `SELECT ` + deliveryCols + `, d.lock_token, octet_length(e.payload)
FROM deliveries AS d INDEXED BY deliveries_queued CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.subscription_id = ? AND d.status = 'queued' AND d.next_attempt_at <= ?
ORDER BY d.next_attempt_at, d.id LIMIT ?`

	// payloadSQL reads the payload of a delivery Receive locked.
	payloadSQL = `SELECT payload FROM events WHERE seq = ?`

	// lockSQL locks a received delivery: it is receivable again when the
	// lock ends.
	lockSQL = `UPDATE deliveries SET receives = receives + 1, lock_token = ?, lock_until = ?, next_attempt_at = ?
WHERE id = ?`
	endQueuedSQL = `UPDATE deliveries SET status = ?, dead_letter_reason = ?, lock_token = '', lock_until = 0
WHERE id = ?`

	// nextQueuedSQL: the earliest next_attempt_at of a subscription's
	// queued deliveries (NULL when it has none), one seek, and the first
	// entries' events read by key: a delivery whose event is not stored
	// yet (a staged publish's, staged.go) is not receivable.
	nextQueuedSQL = `SELECT (SELECT d.next_attempt_at FROM deliveries AS d INDEXED BY deliveries_queued
	CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.subscription_id = ? AND d.status = 'queued' ORDER BY d.next_attempt_at LIMIT 1)`

	// countQueuedRows are the queued deliveries' entries of
	// deliveries_queued (CountQueued, CountBacklog).
	countQueuedRows = `SELECT 1 FROM deliveries AS d INDEXED BY deliveries_queued WHERE d.status = 'queued'`
	countQueuedSQL  = `SELECT COUNT(*) FROM (` + countQueuedRows + `)`

	// lockHeld applies a Settle only to a delivery still queued for the
	// subscription under the token's live lock: id, subscription, token,
	// now.
	lockHeld = `
WHERE id = ? AND subscription_id = ? AND status = 'queued' AND lock_token = ? AND lock_until > ?`
	acknowledgeSQL = `UPDATE deliveries SET status = 'delivered', delivered_at = ?, lock_token = '', lock_until = 0` + lockHeld
	releaseLockSQL = `UPDATE deliveries SET next_attempt_at = ?, lock_token = '', lock_until = 0` + lockHeld
	rejectSQL      = `UPDATE deliveries SET status = ?, dead_letter_reason = ?, lock_token = '', lock_until = 0` + lockHeld
	renewSQL       = `UPDATE deliveries SET lock_until = ?, next_attempt_at = ?` + lockHeld
)

// receivable is a row of receiveSQL.
type receivable struct {
	delivery.Delivery
	lockToken string
	size      int64 // the payload's bytes
}

// Receive implements store.QueueStore on the writer, oldest due first. It
// reads the receivable deliveries in batches (their payloads' sizes, not
// the payloads) until it has locked r.Max of them or the next would cross
// r's bound of bytes (r.Take), none is left, or it has read r.Max + 1000 (the deliveries it
// ends do not count against r.Max, but are bounded so); then it reads the
// payloads of those it locked, one at a time. A lock token is the delivery
// ID, a dot and 26 random base32 characters (128 bits, crypto/rand).
// r.Max must be 1..1000 and r.LockFor positive. NextAt is read after the
// locks are written, so it is at most the earliest new lock's end.
func (s *backend) Receive(ctx context.Context, r store.ReceiveRequest) (store.ReceiveResult, error) {
	if r.Max < 1 || r.Max > maxReceive {
		return store.ReceiveResult{}, fmt.Errorf("receive: max %d is not in 1..%d", r.Max, maxReceive)
	}
	if r.LockFor <= 0 {
		return store.ReceiveResult{}, fmt.Errorf("receive: lock duration %v is not positive", r.LockFor)
	}
	now := sqlrow.UnixMS(r.Now)
	until := sqlrow.UnixMS(r.Now.Add(r.LockFor))
	ended := delivery.StatusDropped
	if r.DeadLetter {
		ended = delivery.StatusDeadLettered
	}
	var res store.ReceiveResult
	err := s.write(ctx, func(w *writer) error {
		res = store.ReceiveResult{}
		var bytes int64
		bounded := false // the next delivery would cross the bound of bytes
		full := func() bool { return len(res.Received) >= r.Max || bounded }
	read:
		for read, budget := 0, r.Max+receiveExtra; !full() && read < budget; {
			limit := min(r.Max-len(res.Received), budget-read)
			batch, err := w.receivable(r.SubscriptionID, now, limit)
			if err != nil {
				return fmt.Errorf("receive %s: %w", r.SubscriptionID, err)
			}
			read += len(batch)
			for _, c := range batch {
				if full() {
					break read // the rest stay receivable, unlocked
				}
				d := c.Delivery
				if reason := endReason(d, r, now); reason != "" {
					if _, err := w.exec(endQueuedSQL, string(ended), reason, d.ID); err != nil {
						return fmt.Errorf("receive: end %s: %w", d.ID, err)
					}
					d.Status, d.DeadLetterReason, d.LockedUntil = ended, reason, time.Time{}
					res.Ended = append(res.Ended, d)
					continue
				}
				total, ok := r.Take(len(res.Received), bytes, d.ID, c.size)
				if !ok {
					bounded = true
					break read // it and the rest stay receivable, unlocked
				}
				token := store.LockToken(d.ID, rand.Text())
				if _, err := w.exec(lockSQL, token, until, until, d.ID); err != nil {
					return fmt.Errorf("receive: lock %s: %w", d.ID, err)
				}
				if c.lockToken != "" {
					res.ExpiredLocks++
				}
				d.Receives++
				d.LockedUntil, d.NextAttemptAt = sqlrow.FromUnixMS(until), sqlrow.FromUnixMS(until)
				res.Received = append(res.Received, store.Received{Delivery: d, LockToken: token})
				bytes = total
			}
			if len(batch) < limit {
				break
			}
		}
		for i := range res.Received {
			rc := &res.Received[i]
			if err := w.scanRow(payloadSQL, []any{rc.EventSeq}, &rc.Payload); err != nil {
				return fmt.Errorf("receive: the event of %s: %w", rc.ID, err)
			}
		}
		var next sql.NullInt64
		if err := w.scanRow(nextQueuedSQL, []any{r.SubscriptionID}, &next); err != nil {
			return fmt.Errorf("receive %s: next: %w", r.SubscriptionID, err)
		}
		if next.Valid {
			res.NextAt = sqlrow.FromUnixMS(next.Int64)
		}
		return nil
	})
	if err != nil {
		return store.ReceiveResult{}, err
	}
	return res, nil
}

// receivable reads up to limit of a subscription's receivable deliveries.
func (w *writer) receivable(subscriptionID string, now int64, limit int) ([]receivable, error) {
	rows, err := w.query(receiveSQL, subscriptionID, now, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []receivable
	for rows.Next() {
		var c receivable
		d, err := scanDelivery(rows, &c.lockToken, &c.size)
		if err != nil {
			return nil, err
		}
		c.Delivery = d
		out = append(out, c)
	}
	return out, rows.Err()
}

// endReason is why Receive ends d instead of locking it ("" : it does not).
func endReason(d delivery.Delivery, r store.ReceiveRequest, now int64) string {
	switch {
	case r.MaxReceives > 0 && d.Receives >= r.MaxReceives:
		return reasonMaxReceives
	case r.TTL > 0 && sqlrow.UnixMS(d.RoundStart)+r.TTL.Milliseconds() <= now:
		return reasonTTL
	}
	return ""
}

// Settle implements store.QueueStore: one guarded update per token, all in
// one write, which adds the acknowledged deliveries to the rollups
// (store.StatsStore): delivered, in the minute of r.Now. A token that is not a lock token (no dot), names another
// subscription's delivery, was settled (a token repeated in the call is
// settled by its first occurrence, but for Renew) or whose lock ended at
// or before r.Now gets ErrLockLost. At most 1000 tokens. After the commit,
// a Release that released any passes the subscription to Options.OnQueued
// (its deliveries are receivable again, at once or after r.Delay).
func (s *backend) Settle(ctx context.Context, r store.SettleRequest) ([]error, error) {
	if len(r.Tokens) > maxSettle {
		return nil, fmt.Errorf("settle: %d tokens, over %d", len(r.Tokens), maxSettle)
	}
	now := sqlrow.UnixMS(r.Now)
	var q string
	var args []any
	switch r.Action {
	case store.Acknowledge:
		q, args = acknowledgeSQL, []any{now}
	case store.Release:
		q, args = releaseLockSQL, []any{sqlrow.UnixMS(r.Now.Add(r.Delay))}
	case store.Reject:
		status := delivery.StatusDropped
		if r.DeadLetter {
			status = delivery.StatusDeadLettered
		}
		q, args = rejectSQL, []any{string(status), delivery.ReasonRejected}
	case store.Renew:
		if r.LockFor <= 0 {
			return nil, fmt.Errorf("settle: lock duration %v is not positive", r.LockFor)
		}
		end := sqlrow.UnixMS(r.Now.Add(r.LockFor))
		q, args = renewSQL, []any{end, end}
	default:
		return nil, fmt.Errorf("settle: unknown action %d", r.Action)
	}
	if len(r.Tokens) == 0 {
		if s.closed.Load() {
			return nil, store.ErrClosed
		}
		return []error{}, nil
	}
	results := make([]error, len(r.Tokens))
	var released bool
	var acked []any // the acknowledged deliveries' rollup input
	err := s.write(ctx, func(w *writer) error {
		released, acked = false, acked[:0]
		for i, token := range r.Tokens {
			results[i] = store.ErrLockLost
			id := store.LockTokenDelivery(token)
			if id == "" {
				continue
			}
			n, err := w.execN(q, append(args[:len(args):len(args)], id, r.SubscriptionID, token, now)...)
			if err != nil {
				return fmt.Errorf("settle %s: %w", id, err)
			}
			if n > 0 {
				results[i] = nil
				released = released || r.Action == store.Release
				if r.Action == store.Acknowledge {
					acked = acknowledgedStats(acked, id, r.Now)
				}
			}
		}
		return w.addStats(acked)
	})
	if err != nil {
		return nil, err
	}
	if released {
		s.notifyQueued(sqlrow.IDSet{IDs: []string{r.SubscriptionID}})
	}
	return results, nil
}

// CountQueued implements store.QueueStore. It counts the entries of
// deliveries_queued, so it takes time in proportion to the queued backlog.
func (s *backend) CountQueued(ctx context.Context) (int64, error) {
	var n int64
	if err := s.readRow(ctx, countQueuedSQL).Scan(&n); err != nil {
		return 0, s.readErr(err)
	}
	return n, nil
}

// there. It runs after the commit, on the caller's goroutine.
func (s *backend) notifyQueued(set sqlrow.IDSet) {
	if s.onQueued != nil && len(set.IDs) > 0 {
		s.onQueued(set.IDs)
	}
}
