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
	// countRunningJobsSQL counts an account's running jobs (jobs_account).
	countRunningJobsSQL = `SELECT COUNT(*) FROM jobs WHERE account_id = $1 AND state = 'running'`
	// lockAccountJobsSQL makes the creates of an account's jobs (the count,
	// then the insert) take turns across nodes: a transaction-level
	// advisory lock of the schema's account, in the bigint key space (as
	// migrateLockSQL; two accounts whose hashes are equal share a lock,
	// which at worst makes one create wait for the other's).
	lockAccountJobsSQL = `SELECT pg_advisory_xact_lock(hashtextextended('herald.jobs:' || current_schema() || ':' || $1::text, 0))`
	// claimJobSQL: a job is free when no one else holds it ($1 is the
	// claimer) or its holder's lease ended before now ($2); the next is
	// the oldest job of the account whose turn (job_turns) is the oldest,
	// one never served first. It reads and sorts every running job
	// (jobs_running): at most --max-jobs-per-account for each account.
	// SKIP LOCKED lets nodes claim side by side.
	claimJobSQL = `UPDATE jobs SET lease_owner = $1, lease_until = $3
WHERE id = (SELECT j.id FROM jobs AS j LEFT JOIN job_turns AS t ON t.account_id = j.account_id
	WHERE j.state = 'running' AND (j.lease_owner IN ('', $1) OR j.lease_until < $2)
	ORDER BY COALESCE(t.turn, 0), j.created_at, j.id LIMIT 1 FOR UPDATE OF j SKIP LOCKED)
RETURNING ` + sqlrow.JobColumns
	// takeTurnSQL moves account $1 to the end of the turns: the turn after
	// the last one given (two nodes claiming at once may give the same
	// turn, which only leaves the order of those two to the next claim).
	takeTurnSQL = `INSERT INTO job_turns (account_id, turn) SELECT $1::text, COALESCE(MAX(turn), 0) + 1 FROM job_turns WHERE true
ON CONFLICT (account_id) DO UPDATE SET turn = excluded.turn`
	// lockJobSQL locks a running job held by $2 whose lease lasts at least
	// until now ($3).
	lockJobSQL     = `SELECT ` + sqlrow.JobColumns + ` FROM jobs WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND lease_until >= $3 FOR UPDATE`
	recoverLookSQL = `SELECT id FROM deliveries WHERE subscription_id = $1 AND status = $2 AND status <> 'delivered'
	AND id >= $3 AND id > $4 AND id < $5 ORDER BY id LIMIT $6 FOR UPDATE`
	recoverMoveSQL = `UPDATE deliveries SET ` + restartSet + `
WHERE id = ANY($2) AND status = $3` + redrivable + ` RETURNING id, endpoint_id`
	saveJobSQL = `UPDATE jobs SET state = $1, total = $2, done = $3, errors = $4, error = $5, cursor_status = $6, cursor_id = $7,
	finished_at = $8, lease_owner = '', lease_until = 0 WHERE id = $9`
	// deleteFinishedJobsSQL deletes at most $2 jobs that ended before $1,
	// those that ended first first (jobs_finished).
	deleteFinishedJobsSQL = `DELETE FROM jobs WHERE id = ANY(ARRAY(
	SELECT id FROM jobs WHERE state <> 'running' AND finished_at < $1 ORDER BY finished_at LIMIT $2))`
	// forgetTurnsSQL deletes the turns of the accounts that have no job
	// (a seek of jobs_account each).
	forgetTurnsSQL = `DELETE FROM job_turns AS t WHERE NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.account_id = t.account_id)`
)

// CreateJob implements store.JobStore in one transaction, each status's
// count a seek of deliveries_subscription_status; the account's running
// jobs are counted after its lock (lockAccountJobsSQL), in a statement of
// their own, so the count sees every create committed before, on any node,
// and no other can commit until this one ends.
func (s *backend) CreateJob(ctx context.Context, j job.Job, max int) (job.Job, error) {
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
		if max > 0 {
			var running int
			if _, err := tx.Exec(ctx, lockAccountJobsSQL, j.AccountID); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, countRunningJobsSQL, j.AccountID).Scan(&running); err != nil {
				return err
			}
			if err := store.CheckJobLimit(running, max); err != nil {
				return err
			}
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
func (s *backend) GetJob(ctx context.Context, id string) (job.Job, error) {
	if err := s.checkOpen(); err != nil {
		return job.Job{}, err
	}
	j, err := queryRow(ctx, s, func(sc scanner) (job.Job, error) { return sqlrow.ScanJob(sc) }, getJobSQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return job.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return j, s.err(err)
}

// ClaimJob implements store.JobStore in one transaction: the claim, then
// the account's turn (a lease that ended is taken over).
func (s *backend) ClaimJob(ctx context.Context, owner string, now, until time.Time) (job.Job, bool, error) {
	var j job.Job
	var found bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		j, err = sqlrow.ScanJob(tx.QueryRow(ctx, claimJobSQL, owner, sqlrow.UnixMS(now), sqlrow.UnixMS(until)))
		found = err == nil
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		_, err = tx.Exec(ctx, takeTurnSQL, j.AccountID)
		return err
	})
	return j, found, err
}

// RecoverBatch implements store.JobStore in one transaction: the job row
// is locked (a node whose lease ended cannot write a batch beside the one
// that took it over), the subscription row in share mode (as Redrive), the
// deliveries looked at for update; Redeliver's statement (restartSet)
// moves them, checking each one's status again.
func (s *backend) RecoverBatch(ctx context.Context, id, owner string, limit int, now time.Time) (job.Job, store.RedriveResult, error) {
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
		_, err = tx.Exec(ctx, saveJobSQL, sqlrow.JobProgress(&j, now)...)
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

// DeleteFinishedJobs implements store.JobStore in one transaction.
func (s *backend) DeleteFinishedJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, deleteFinishedJobsSQL, sqlrow.UnixMS(before), limit)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, forgetTurnsSQL)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return n, nil
}
