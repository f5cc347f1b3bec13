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
	// countRunningJobsSQL counts an account's running jobs (jobs_account).
	countRunningJobsSQL = `SELECT COUNT(*) FROM jobs WHERE account_id = ? AND state = 'running'`
	// claimJobSQL: leases never expire here (one process owns the file;
	// Open clears them), so a job is free when no one else holds it (?1 is
	// the claimer); the next is the oldest job of the account whose turn
	// (job_turns) is the oldest, one never served first. It reads and
	// sorts every running job (jobs_running): at most
	// --max-jobs-per-account for each account.
	claimJobSQL = `UPDATE jobs SET lease_owner = ?1, lease_until = ?2
WHERE id = (SELECT j.id FROM jobs AS j LEFT JOIN job_turns AS t ON t.account_id = j.account_id
	WHERE j.state = 'running' AND j.lease_owner IN ('', ?1)
	ORDER BY COALESCE(t.turn, 0), j.created_at, j.id LIMIT 1)
RETURNING ` + sqlrow.JobColumns
	// takeTurnSQL moves account ? to the end of the turns: the turn after
	// the last one given.
	takeTurnSQL = `INSERT INTO job_turns (account_id, turn) SELECT ?, COALESCE(MAX(turn), 0) + 1 FROM job_turns WHERE true
ON CONFLICT (account_id) DO UPDATE SET turn = excluded.turn`
	jobLeaseSQL    = `SELECT lease_owner FROM jobs WHERE id = ? AND state = 'running'`
	recoverLookSQL = `SELECT id FROM deliveries WHERE subscription_id = ? AND status = ? AND id >= ? AND id > ? AND id < ? ORDER BY id LIMIT ?`
	recoverMoveSQL = `UPDATE deliveries SET ` + restartSet + ` WHERE id = ? AND status = ?` + redrivable + ` RETURNING endpoint_id`
	saveJobSQL     = `UPDATE jobs SET state = ?, total = ?, done = ?, errors = ?, error = ?, cursor_status = ?, cursor_id = ?,
	finished_at = ?, lease_owner = '', lease_until = 0 WHERE id = ?`
	clearJobLeaseSQL = `UPDATE jobs SET lease_owner = '', lease_until = 0 WHERE lease_owner <> ''`
	// deleteFinishedJobsSQL deletes at most ?2 jobs that ended before ?1,
	// those that ended first first (jobs_finished).
	deleteFinishedJobsSQL = `DELETE FROM jobs WHERE id IN (
	SELECT id FROM jobs WHERE state <> 'running' AND finished_at < ?1 ORDER BY finished_at LIMIT ?2)`
	// forgetTurnsSQL deletes the turns of the accounts that have no job
	// (a seek of jobs_account each).
	forgetTurnsSQL = `DELETE FROM job_turns WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.account_id = job_turns.account_id)`
)

// CreateJob implements store.JobStore. The count runs on a read
// connection first (each status's a seek of deliveries_subscription_status),
// so that counting up to job.CountLimit never holds the writer; the write
// then checks the subscription and the account's running jobs (on the one
// writer, so concurrent creates cannot pass max) and inserts the job.
func (s *backend) CreateJob(ctx context.Context, j job.Job, max int) (job.Job, error) {
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
		var running int
		if err := w.scanRow(countRunningJobsSQL, []any{j.AccountID}, &running); err != nil {
			return err
		}
		if err := store.CheckJobLimit(running, max); err != nil {
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
func (s *backend) GetJob(ctx context.Context, id string) (job.Job, error) {
	j, err := sqlrow.ScanJob(s.readRow(ctx, getJobSQL, id))
	if isNoRows(err) {
		return job.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return j, s.readErr(err)
}

// ClaimJob implements store.JobStore in one write: the claim, then the
// account's turn (now is not needed: leases here end only when given back,
// or when the store is opened again).
func (s *backend) ClaimJob(ctx context.Context, owner string, _, until time.Time) (job.Job, bool, error) {
	var j job.Job
	var found bool
	err := s.write(ctx, func(w *writer) error {
		var err error
		j, err = sqlrow.ScanJob(w.row(claimJobSQL, owner, sqlrow.UnixMS(until)))
		found = err == nil
		switch {
		case isNoRows(err):
			return nil
		case err != nil:
			return err
		}
		_, err = w.exec(takeTurnSQL, j.AccountID)
		return err
	})
	return j, found, err
}

// RecoverBatch implements store.JobStore in one write: each delivery is
// moved by a statement of Redeliver's (restartSet) that checks its status
// again.
func (s *backend) RecoverBatch(ctx context.Context, id, owner string, limit int, now time.Time) (job.Job, store.RedriveResult, error) {
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
		_, err = w.exec(saveJobSQL, sqlrow.JobProgress(&j, now)...)
		return err
	})
	if err != nil {
		return job.Job{}, store.RedriveResult{}, fmt.Errorf("recover batch: %w", err)
	}
	return j, res, nil
}

// recoverStep looks at the batch's deliveries and moves those it can.
func (s *backend) recoverStep(w *writer, j job.Job, res *store.RedriveResult, limit int, now time.Time) (job.Job, error) {
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

// DeleteFinishedJobs implements store.JobStore in one write.
func (s *backend) DeleteFinishedJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(w *writer) error {
		var err error
		if n, err = w.execN(deleteFinishedJobsSQL, sqlrow.UnixMS(before), limit); err != nil {
			return err
		}
		_, err = w.exec(forgetTurnsSQL)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return int(n), nil
}
