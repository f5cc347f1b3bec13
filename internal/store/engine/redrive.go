package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Redelivery and redrive (store.DeliveryStore). Each one makes the same
// change, the restart (qRestartDeliveries): a fresh attempt budget, due at
// $1 (round_start and next_attempt_at), unleased and unlocked, pending, or
// queued when the subscription is a pull or a deactivated one; attempts
// and the last_* fields stay (with attempts > 0 the delivery is due in the
// retry lane), dead_letter_reason and delivered_at are cleared; it goes to
// its subscription's current endpoint, the delivery of a dead letter to
// its subscription's dead-letter URL's. A look (a select, locking for
// update on PostgreSQL the deliveries it returns, as the restart's UPDATE
// would) chooses the ids: the redrives' leave out the deliveries of dead
// letters whose subscription names no dead-letter URL any more, which
// would go nowhere.
var (
	// qRedeliveryState reads delivery $1's status, lease_until,
	// subscription_id and dead_letter_of (locked for update on
	// PostgreSQL).
	qRedeliveryState = query("RedeliveryState")
	// qSubscriptionDeadLetterEndpoint reads subscription $1's
	// dead_letter_endpoint_id ('': it names no dead-letter URL).
	qSubscriptionDeadLetterEndpoint = query("SubscriptionDeadLetterEndpoint")
	// qRestartDeliveries restarts at $1 the deliveries among the ids $2,
	// whatever their status (each by the primary key), and returns each
	// one's id, endpoint_id, status and subscription_id (redriven).
	qRestartDeliveries = query("RestartDeliveries")
	// qRedriveAllLook returns the ids of subscription $1's dead letters
	// a redrive moves (a seek of the subscription's status index).
	qRedriveAllLook = query("RedriveAllLook")
	// qRedriveIDsLook returns those among the ids $2 (each id by a key).
	qRedriveIDsLook = query("RedriveIDsLook")
	// qRedriveAccountIDsLook returns the ids of account $1's dead letters
	// among the ids $2 that a redrive moves and whose subscription exists
	// (locked in share mode on PostgreSQL, as qSubscriptionExists): a
	// deleted subscription's dead letters stay dead-lettered, with
	// nowhere to go.
	qRedriveAccountIDsLook = query("RedriveAccountIDsLook")
)

// Redeliver implements store.DeliveryStore in one write. The delivery
// becomes pending (queued, for a pull or deactivated subscription), due at
// now, unleased, with RoundAttempts 0, RoundStart now, FirstFailure
// cleared, and DeadLetterReason and DeliveredAt cleared; Attempts and the
// Last* fields are kept (so a delivery attempted before is due in the
// retry lane). ErrConflict when it is pending and its lease has not ended
// by now (leaseEnded: where leases do not expire, while it is leased).
// ErrSubscriptionDeleted when its subscription is gone (on PostgreSQL the
// subscription row is locked in share mode until the change commits, so a
// delete cannot slip in between). The delivery of a dead letter goes to
// its subscription's dead-letter URL's endpoint: ErrConflict when the
// subscription names no dead-letter URL any more (read under that share
// lock, which an update of the subscription waits for too). A delivery
// queued is announced (queued).
func (s *Store) Redeliver(ctx context.Context, id string, now time.Time) (delivery.Delivery, error) {
	var d delivery.Delivery
	_, err := s.redrive(ctx, func(x driver.Executor, q *sqlrow.IDSet) (store.RedriveResult, error) {
		if err := s.checkRedeliver(ctx, x, id, now); err != nil {
			return store.RedriveResult{}, err
		}
		if _, err := s.redriven(ctx, x, []string{id}, nil, q, sqlrow.UnixMS(now)); err != nil {
			return store.RedriveResult{}, fmt.Errorf("redeliver %s: %w", id, err)
		}
		var err error
		if d, err = sqlrow.ScanDelivery(x.QueryRow(ctx, qGetDelivery, id)); err != nil {
			return store.RedriveResult{}, fmt.Errorf("redeliver %s: %w", id, err)
		}
		return store.RedriveResult{}, nil
	})
	if err != nil {
		return delivery.Delivery{}, err
	}
	return d, nil
}

// checkRedeliver is nil when Redeliver may restart delivery id at now in
// x, else the error Redeliver returns: ErrNotFound, ErrSubscriptionDeleted
// or ErrConflict. It locks the delivery for update and its subscription in
// share mode (PostgreSQL).
func (s *Store) checkRedeliver(ctx context.Context, x driver.Executor, id string, now time.Time) error {
	var status, sub, deadLetterOf string
	var lease int64
	if err := x.QueryRow(ctx, qRedeliveryState, id).Scan(&status, &lease, &sub, &deadLetterOf); err != nil {
		if errors.Is(err, driver.ErrNoRows) {
			return fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
		}
		return err
	}
	switch err := subscriptionExists(ctx, x, sub); {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("delivery %s: %w", id, store.ErrSubscriptionDeleted)
	case err != nil:
		return err
	}
	if delivery.Status(status) == delivery.StatusPending && lease != 0 && lease >= s.leaseEnded(now) {
		return fmt.Errorf("delivery %s is being attempted: %w", id, store.ErrConflict)
	}
	if deadLetterOf == "" {
		return nil
	}
	var ep string
	if err := x.QueryRow(ctx, qSubscriptionDeadLetterEndpoint, sub).Scan(&ep); err != nil {
		return err
	}
	if ep == "" {
		return fmt.Errorf("delivery %s is a dead letter's and its subscription has no dead-letter URL: %w", id, store.ErrConflict)
	}
	return nil
}

// Redrive implements store.DeliveryStore in one write: a look for all of
// the subscription's dead letters or for those among ids, then their
// restart. IDs that do not name a dead-lettered delivery of the
// subscription are ignored, and so are the deliveries of dead letters when
// the subscription names no dead-letter URL any more. ErrNotFound when the
// subscription does not exist (it is locked in share mode on PostgreSQL).
// Endpoints are returned once each: for ids, in the order of ids; for all,
// in no particular order.
func (s *Store) Redrive(ctx context.Context, subscriptionID string, ids []string, now time.Time) (store.RedriveResult, error) {
	at := sqlrow.UnixMS(now)
	return s.redrive(ctx, func(x driver.Executor, q *sqlrow.IDSet) (store.RedriveResult, error) {
		if err := subscriptionExists(ctx, x, subscriptionID); err != nil {
			return store.RedriveResult{}, err
		}
		look, args := qRedriveAllLook, []any{subscriptionID}
		if len(ids) > 0 {
			look, args = qRedriveIDsLook, []any{subscriptionID, ids}
		}
		res, err := s.redriveLooked(ctx, x, ids, q, at, look, args...)
		if err != nil {
			return store.RedriveResult{}, fmt.Errorf("redrive %s: %w", subscriptionID, err)
		}
		return res, nil
	})
}

// RedriveIDs implements store.DeliveryStore in one write, a look and a
// restart. IDs that do not name a dead-lettered delivery of the account
// whose subscription exists are ignored, as Redrive ignores them.
// Endpoints are returned once each, in the order of ids.
func (s *Store) RedriveIDs(ctx context.Context, accountID string, ids []string, now time.Time) (store.RedriveResult, error) {
	res, err := s.redrive(ctx, func(x driver.Executor, q *sqlrow.IDSet) (store.RedriveResult, error) {
		return s.redriveLooked(ctx, x, ids, q, sqlrow.UnixMS(now), qRedriveAccountIDsLook, account.OrDefault(accountID), ids)
	})
	if err != nil {
		return store.RedriveResult{}, fmt.Errorf("redrive: %w", err)
	}
	return res, nil
}

// redrive runs move in one write, with a result and a set of queued
// subscriptions of its own each time the write runs it, announces the
// subscriptions after the commit (queuedHere) and returns the result (the
// zero result on an error).
func (s *Store) redrive(ctx context.Context, move func(x driver.Executor, q *sqlrow.IDSet) (store.RedriveResult, error)) (store.RedriveResult, error) {
	var res store.RedriveResult
	var q sqlrow.IDSet
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		q.Reset()
		res, err = move(x, &q)
		return err
	})
	if err != nil {
		return store.RedriveResult{}, err
	}
	s.queuedHere(q.IDs)
	return res, nil
}

// redriveLooked restarts at `at` the deliveries whose ids look (a redrive's
// look, run with args) returns, as redriven does, in the order of order
// (the look's when nil).
func (s *Store) redriveLooked(ctx context.Context, x driver.Executor, order []string, q *sqlrow.IDSet, at int64, look driver.Query, args ...any) (store.RedriveResult, error) {
	var ids []string
	if err := x.Query(ctx, look, appendID(&ids), args...); err != nil {
		return store.RedriveResult{}, err
	}
	return s.redriven(ctx, x, ids, order, q, at)
}

// redriven restarts at `at` the deliveries ids (qRestartDeliveries; none
// runs when there are none) and returns what moved: each endpoint once, in
// the order of order (of ids when nil); an id given twice counts once. The
// subscriptions of the deliveries it queued are added to q and announced
// to the other nodes (notifyQueued): a transaction runs one restart.
func (s *Store) redriven(ctx context.Context, x driver.Executor, ids, order []string, q *sqlrow.IDSet, at int64) (store.RedriveResult, error) {
	if len(ids) == 0 {
		return store.RedriveResult{}, nil
	}
	moved := map[string]string{} // delivery → endpoint
	err := x.Query(ctx, qRestartDeliveries, func(r driver.Row) error {
		var id, ep, status, sub string
		if err := r.Scan(&id, &ep, &status, &sub); err != nil {
			return err
		}
		moved[id] = ep
		if delivery.Status(status) == delivery.StatusQueued {
			q.Add(sub)
		}
		return nil
	}, at, ids)
	if err != nil {
		return store.RedriveResult{}, err
	}
	if order == nil {
		order = ids
	}
	var res store.RedriveResult
	seen := map[string]bool{}
	for _, id := range order {
		ep, ok := moved[id]
		if !ok {
			continue
		}
		delete(moved, id)
		res.Count++
		if !seen[ep] {
			seen[ep] = true
			res.Endpoints = append(res.Endpoints, ep)
		}
	}
	return res, s.notifyQueued(ctx, x, q.IDs)
}

// subscriptionExists is nil when subscription id exists (locked in share
// mode on PostgreSQL until x ends), else an ErrNotFound naming it.
func subscriptionExists(ctx context.Context, x driver.Executor, id string) error {
	var one int
	err := x.QueryRow(ctx, qSubscriptionExists, id).Scan(&one)
	if errors.Is(err, driver.ErrNoRows) {
		return fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	}
	return err
}
