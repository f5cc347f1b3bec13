package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	insertJobSQL = `INSERT INTO jobs (id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses, total, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	getJobSQL = `SELECT ` + sqlrow.JobColumns + ` FROM jobs WHERE id = ?`
	// countRecoverSQL counts a status's deliveries in a recover's range,
	// up to a limit, on deliveries_subscription_status.
	countRecoverSQL = `SELECT COUNT(*) FROM (SELECT 1 FROM deliveries
WHERE subscription_id = ? AND status = ? AND id >= ? AND id < ? LIMIT ?)`
	// claimJobSQL: leases never expire here (one process owns the file;
	// Open clears them), so a job is free when no one holds it.
	claimJobSQL = `UPDATE jobs SET lease_owner = ?, lease_until = ?
WHERE id = (SELECT id FROM jobs WHERE state = 'running' AND lease_owner = '' ORDER BY created_at LIMIT 1)
RETURNING ` + sqlrow.JobColumns
	releaseJobSQL  = `UPDATE jobs SET lease_owner = '', lease_until = 0 WHERE id = ? AND lease_owner = ?`
	jobLeaseSQL    = `SELECT lease_owner FROM jobs WHERE id = ? AND state = 'running'`
	recoverLookSQL = `SELECT id FROM deliveries WHERE subscription_id = ? AND status = ? AND id >= ? AND id > ? AND id < ? ORDER BY id LIMIT ?`
	recoverMoveSQL = `UPDATE deliveries SET ` + restartSet + ` WHERE id = ? AND status = ?` + redrivable + ` RETURNING endpoint_id`
	saveJobSQL     = `UPDATE jobs SET state = ?, total = ?, done = ?, errors = ?, error = ?, cursor_status = ?, cursor_id = ?,
	finished_at = ?, lease_owner = ?, lease_until = ? WHERE id = ?`
	clearJobLeaseSQL = `UPDATE jobs SET lease_owner = '', lease_until = 0 WHERE lease_owner <> ''`
)

// CreateJob implements store.JobStore. The count runs on a read
// connection first (each status's a seek of deliveries_subscription_status),
// so that counting up to job.CountLimit never holds the writer; the write
// then checks the subscription and inserts the job.
func (s *Store) CreateJob(ctx context.Context, j job.Job) (job.Job, error) {
	from, before := sqlrow.RecoverWindow(j)
	j.Total = 0
	for _, st := range j.Statuses {
		var n int
		if err := s.readRow(ctx, countRecoverSQL, j.SubscriptionID, string(st), from, before, job.CountLimit-j.Total).Scan(&n); err != nil {
			return job.Job{}, fmt.Errorf("create job: %w", s.readErr(err))
		}
		j.Total += n
	}
	err := s.write(ctx, func(w *writer) error {
		var one int
		if err := w.scanRow(subscriptionExistsSQL, []any{j.SubscriptionID}, &one); err != nil {
			if isNoRows(err) {
				return fmt.Errorf("subscription %s: %w", j.SubscriptionID, store.ErrNotFound)
			}
			return err
		}
		_, err := w.exec(insertJobSQL, sqlrow.JobValues(j)...)
		return err
	})
	if err != nil {
		return job.Job{}, fmt.Errorf("create job: %w", err)
	}
	return j, nil
}

// GetJob implements store.JobStore.
func (s *Store) GetJob(ctx context.Context, id string) (job.Job, error) {
	j, err := sqlrow.ScanJob(s.readRow(ctx, getJobSQL, id))
	if isNoRows(err) {
		return job.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return j, s.readErr(err)
}

// ClaimJob implements store.JobStore (now is not needed: leases here end
// only when released, or when the store is opened again).
func (s *Store) ClaimJob(ctx context.Context, owner string, _, until time.Time) (job.Job, bool, error) {
	var j job.Job
	var found bool
	err := s.write(ctx, func(w *writer) error {
		var err error
		j, err = sqlrow.ScanJob(w.row(claimJobSQL, owner, sqlrow.UnixMS(until)))
		found = err == nil
		if isNoRows(err) {
			return nil
		}
		return err
	})
	return j, found, err
}

// ReleaseJob implements store.JobStore.
func (s *Store) ReleaseJob(ctx context.Context, id, owner string) error {
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(releaseJobSQL, id, owner)
		return err
	})
}

// RecoverBatch implements store.JobStore in one write: each delivery is
// moved by a statement of Redeliver's (restartSet) that checks its status
// again.
func (s *Store) RecoverBatch(ctx context.Context, id, owner string, limit int, now, until time.Time) (job.Job, store.RedriveResult, error) {
	var j job.Job
	var res store.RedriveResult
	err := s.write(ctx, func(w *writer) error {
		res = store.RedriveResult{}
		var holder string
		if err := w.scanRow(jobLeaseSQL, []any{id}, &holder); err != nil || holder != owner {
			if err == nil || isNoRows(err) {
				return fmt.Errorf("job %s is not held by %s: %w", id, owner, store.ErrConflict)
			}
			return err
		}
		var err error
		if j, err = sqlrow.ScanJob(w.row(getJobSQL, id)); err != nil {
			return err
		}
		var one int
		switch err := w.scanRow(subscriptionExistsSQL, []any{j.SubscriptionID}, &one); {
		case isNoRows(err):
			j.State, j.Error = job.StateFailed, "the subscription was deleted"
		case err != nil:
			return err
		default:
			if j, err = s.recoverStep(w, j, &res, limit, now); err != nil {
				return err
			}
		}
		_, err = w.exec(saveJobSQL, sqlrow.JobProgress(&j, owner, now, until)...)
		return err
	})
	if err != nil {
		return job.Job{}, store.RedriveResult{}, fmt.Errorf("recover batch: %w", err)
	}
	return j, res, nil
}

// recoverStep looks at the batch's deliveries and moves those it can.
func (s *Store) recoverStep(w *writer, j job.Job, res *store.RedriveResult, limit int, now time.Time) (job.Job, error) {
	status := string(j.Statuses[j.CursorStatus])
	from, before := sqlrow.RecoverWindow(j)
	rows, err := w.query(recoverLookSQL, j.SubscriptionID, status, from, j.CursorID, before, limit)
	if err != nil {
		return j, err
	}
	var looked []string
	for rows.Next() {
		var did string
		if err := rows.Scan(&did); err != nil {
			rows.Close()
			return j, err
		}
		looked = append(looked, did)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return j, err
	}
	at := sqlrow.UnixMS(now)
	for _, did := range looked {
		if err := redriven(w, res, recoverMoveSQL, at, at, did, status); err != nil {
			return j, err
		}
	}
	return sqlrow.RecoverStep(j, looked, *res, limit), nil
}
