package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	insertJobSQL = `INSERT INTO jobs (id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses, total, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	getJobSQL = `SELECT ` + sqlrow.JobColumns + ` FROM jobs WHERE id = $1`
	// countRecoverSQL counts a status's deliveries in a recover's range,
	// up to a limit, on the partial index deliveries_subscription_status
	// (the literal condition lets a generic plan use it).
	countRecoverSQL = `SELECT COUNT(*) FROM (SELECT 1 FROM deliveries
WHERE subscription_id = $1 AND status = $2 AND status <> 'delivered' AND id >= $3 AND id < $4 LIMIT $5) AS c`
	// claimJobSQL: a job is free when no one holds it or its holder's
	// lease ended before now ($2); SKIP LOCKED lets nodes claim side by side.
	claimJobSQL = `UPDATE jobs SET lease_owner = $1, lease_until = $3
WHERE id = (SELECT id FROM jobs WHERE state = 'running' AND (lease_owner = '' OR lease_until < $2)
	ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING ` + sqlrow.JobColumns
	releaseJobSQL = `UPDATE jobs SET lease_owner = '', lease_until = 0 WHERE id = $1 AND lease_owner = $2`
	// lockJobSQL locks a running job held by $2 whose lease lasts at least
	// until now ($3).
	lockJobSQL     = `SELECT ` + sqlrow.JobColumns + ` FROM jobs WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND lease_until >= $3 FOR UPDATE`
	recoverLookSQL = `SELECT id FROM deliveries WHERE subscription_id = $1 AND status = $2 AND status <> 'delivered'
	AND id >= $3 AND id > $4 AND id < $5 ORDER BY id LIMIT $6 FOR UPDATE`
	recoverMoveSQL = `UPDATE deliveries SET ` + restartSet + `
WHERE id = ANY($2) AND status = $3` + redrivable + ` RETURNING id, endpoint_id`
	saveJobSQL = `UPDATE jobs SET state = $1, total = $2, done = $3, errors = $4, error = $5, cursor_status = $6, cursor_id = $7,
	finished_at = $8, lease_owner = $9, lease_until = $10 WHERE id = $11`
)

// CreateJob implements store.JobStore in one transaction, each status's
// count a seek of deliveries_subscription_status.
func (s *Store) CreateJob(ctx context.Context, j job.Job) (job.Job, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, subscriptionExistsSQL, j.SubscriptionID).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("subscription %s: %w", j.SubscriptionID, store.ErrNotFound)
			}
			return err
		}
		from, before := sqlrow.RecoverWindow(j)
		j.Total = 0
		for _, st := range j.Statuses {
			var n int
			if err := tx.QueryRow(ctx, countRecoverSQL, j.SubscriptionID, string(st), from, before, job.CountLimit-j.Total).Scan(&n); err != nil {
				return err
			}
			j.Total += n
		}
		_, err := tx.Exec(ctx, insertJobSQL, sqlrow.JobValues(j)...)
		return err
	})
	if err != nil {
		return job.Job{}, fmt.Errorf("create job: %w", err)
	}
	return j, nil
}

// GetJob implements store.JobStore.
func (s *Store) GetJob(ctx context.Context, id string) (job.Job, error) {
	if err := s.checkOpen(); err != nil {
		return job.Job{}, err
	}
	j, err := queryRow(ctx, s, func(sc scanner) (job.Job, error) { return sqlrow.ScanJob(sc) }, getJobSQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return job.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return j, s.err(err)
}

// ClaimJob implements store.JobStore: a lease that ended is taken over.
func (s *Store) ClaimJob(ctx context.Context, owner string, now, until time.Time) (job.Job, bool, error) {
	var j job.Job
	var found bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		j, err = sqlrow.ScanJob(tx.QueryRow(ctx, claimJobSQL, owner, sqlrow.UnixMS(now), sqlrow.UnixMS(until)))
		found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	return j, found, err
}

// ReleaseJob implements store.JobStore.
func (s *Store) ReleaseJob(ctx context.Context, id, owner string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, releaseJobSQL, id, owner)
		return err
	})
}

// RecoverBatch implements store.JobStore in one transaction: the job row
// is locked (a node whose lease ended cannot write a batch beside the one
// that took it over), the subscription row in share mode (as Redrive), the
// deliveries looked at for update; Redeliver's statement (restartSet)
// moves them, checking each one's status again.
func (s *Store) RecoverBatch(ctx context.Context, id, owner string, limit int, now, until time.Time) (job.Job, store.RedriveResult, error) {
	var j job.Job
	var res store.RedriveResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		res = store.RedriveResult{}
		j, err = sqlrow.ScanJob(tx.QueryRow(ctx, lockJobSQL, id, owner, sqlrow.UnixMS(now)))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("job %s is not held by %s: %w", id, owner, store.ErrConflict)
		} else if err != nil {
			return err
		}
		var one int
		switch err := tx.QueryRow(ctx, subscriptionExistsSQL, j.SubscriptionID).Scan(&one); {
		case errors.Is(err, pgx.ErrNoRows):
			j.State, j.Error = job.StateFailed, "the subscription was deleted"
		case err != nil:
			return err
		default:
			if j, res, err = recoverStep(ctx, tx, j, limit, now); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, saveJobSQL, sqlrow.JobProgress(&j, owner, now, until)...)
		return err
	})
	if err != nil {
		return job.Job{}, store.RedriveResult{}, fmt.Errorf("recover batch: %w", err)
	}
	return j, res, nil
}

// recoverStep looks at the batch's deliveries and moves those it can.
func recoverStep(ctx context.Context, tx pgx.Tx, j job.Job, limit int, now time.Time) (job.Job, store.RedriveResult, error) {
	status := string(j.Statuses[j.CursorStatus])
	from, before := sqlrow.RecoverWindow(j)
	rows, err := tx.Query(ctx, recoverLookSQL, j.SubscriptionID, status, from, j.CursorID, before, limit)
	if err != nil {
		return j, store.RedriveResult{}, err
	}
	looked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return j, store.RedriveResult{}, err
	}
	var res store.RedriveResult
	if len(looked) > 0 {
		rows, err := tx.Query(ctx, recoverMoveSQL, sqlrow.UnixMS(now), looked, status)
		if err == nil {
			res, err = redriven(rows, looked)
		}
		if err != nil {
			return j, store.RedriveResult{}, err
		}
	}
	return sqlrow.RecoverStep(j, looked, res, limit), res, nil
}
