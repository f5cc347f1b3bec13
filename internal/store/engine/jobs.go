package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Recover jobs (store.JobStore). A job's row holds sqlrow.JobColumns; its
// lease is lease_owner and lease_until.
var (
	// qCountRecover counts the deliveries of subscription $1 in status $2
	// with an id in [$3, $4) (sqlrow.RecoverWindow), up to $5: a seek of
	// the subscription's status index (SQLite's
	// deliveries_subscription_status, PostgreSQL's
	// open_deliveries_subscription).
	qCountRecover = query("CountRecover")
	// qCountRunningJobs counts account $1's running jobs (jobs_account).
	qCountRunningJobs = query("CountRunningJobs")
	// qLockAccountJobs makes the creates of account $1's jobs take turns
	// until the transaction ends (PostgreSQL: an advisory lock; run only
	// on a shared store).
	qLockAccountJobs = query("LockAccountJobs")
	// qInsertJob inserts a job (sqlrow.JobValues).
	qInsertJob = query("InsertJob")
	// qGetJob reads job $1 (sqlrow.JobColumns).
	qGetJob = query("GetJob")
	// qClaimJob leases to $1 until $3 the next running job no one else
	// holds (unleased, held by $1, or its lease ended before $2) and
	// returns it (sqlrow.JobColumns): the oldest job (created_at, id) of
	// the account whose turn (job_turns) is the oldest, one never served
	// first. Nodes claim side by side (PostgreSQL: SKIP LOCKED).
	qClaimJob = query("ClaimJob")
	// qTakeTurn moves account $1 to the end of the turns: the turn after
	// the last one given.
	qTakeTurn = query("TakeTurn")
	// qLockJob reads job $1 when it is running and held by $2 with a lease
	// lasting at least until $3 (sqlrow.JobColumns), locked for the
	// transaction (PostgreSQL: FOR UPDATE).
	qLockJob = query("LockJob")
	// qRecoverLook returns the ids of at most $6 deliveries of
	// subscription $1 in status $2, at or after $3, after $4, before $5,
	// in id order (locked for update on PostgreSQL), each with whether the
	// restart may move it (qRestartDeliveries): not the delivery of a dead
	// letter whose subscription names no dead-letter URL any more.
	qRecoverLook = query("RecoverLook")
	// qSaveJob stores a job's progress (sqlrow.JobProgress) and ends its
	// lease.
	qSaveJob = query("SaveJob")
	// qDeleteFinishedJobs deletes at most $2 jobs that ended before $1,
	// those that ended first first (jobs_finished).
	qDeleteFinishedJobs = query("DeleteFinishedJobs")
	// qForgetTurns deletes the turns of the accounts that have no job (a
	// seek of jobs_account each).
	qForgetTurns = query("ForgetTurns")
)

// CreateJob implements store.JobStore. Each status's count (a seek of the
// subscription's status index, up to job.CountLimit in all) is read
// first, outside the write, so that counting never holds SQLite's writer
// nor the account's lock; the write then checks the subscription (locked
// in share mode on PostgreSQL), and, with a limit, the account's running
// jobs after the account's lock (qLockAccountJobs on a shared store;
// SQLite's one writer otherwise), in a statement of its own, so the count
// sees every create committed before, on any node, and no other can
// commit until this one ends; then it inserts the job.
func (s *Store) CreateJob(ctx context.Context, j job.Job, max int) (job.Job, error) {
	from, before := sqlrow.RecoverWindow(j)
	j.Total = 0
	for _, st := range j.Statuses {
		var n int
		err := s.drv.Reader().QueryRow(ctx, qCountRecover, j.SubscriptionID, string(st), from, before, job.CountLimit-j.Total).Scan(&n)
		if err != nil {
			return job.Job{}, fmt.Errorf("create job: %w", err)
		}
		j.Total += n
	}
	err := s.write(ctx, func(x driver.Executor) error {
		if err := subscriptionExists(ctx, x, j.SubscriptionID); err != nil {
			return err
		}
		if max > 0 {
			if s.opts.Capabilities.Shared {
				if _, err := x.Exec(ctx, qLockAccountJobs, j.AccountID); err != nil {
					return err
				}
			}
			var running int
			if err := x.QueryRow(ctx, qCountRunningJobs, j.AccountID).Scan(&running); err != nil {
				return err
			}
			if err := store.CheckJobLimit(running, max); err != nil {
				return err
			}
		}
		_, err := x.Exec(ctx, qInsertJob, sqlrow.JobValues(j)...)
		return err
	})
	if err != nil {
		return job.Job{}, fmt.Errorf("create job: %w", err)
	}
	return j, nil
}

// GetJob implements store.JobStore.
func (s *Store) GetJob(ctx context.Context, id string) (job.Job, error) {
	j, err := sqlrow.ScanJob(s.drv.Reader().QueryRow(ctx, qGetJob, id))
	if errors.Is(err, driver.ErrNoRows) {
		return job.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return j, err
}

// ClaimJob implements store.JobStore in one write: the claim, then the
// account's turn. A lease that ended before now is taken over where
// leases expire (leaseEnded); on SQLite a job's lease ends only when it is
// given back, or when the store is opened again.
func (s *Store) ClaimJob(ctx context.Context, owner string, now, until time.Time) (job.Job, bool, error) {
	var j job.Job
	var found bool
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		j, err = sqlrow.ScanJob(x.QueryRow(ctx, qClaimJob, owner, s.leaseEnded(now), sqlrow.UnixMS(until)))
		found = err == nil
		switch {
		case errors.Is(err, driver.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		_, err = x.Exec(ctx, qTakeTurn, j.AccountID)
		return err
	})
	return j, found, err
}

// RecoverBatch implements store.JobStore in one write: the job row is
// locked (a node whose lease ended cannot write a batch beside the one
// that took it over), the subscription row in share mode (as Redrive), the
// deliveries looked at for update (PostgreSQL), so that their status holds
// until the restart (qRestartDeliveries) moves those it may. The
// subscriptions whose deliveries it queued hear of it (queued).
func (s *Store) RecoverBatch(ctx context.Context, id, owner string, limit int, now time.Time) (job.Job, store.RedriveResult, error) {
	var j job.Job
	var res store.RedriveResult
	var q sqlrow.IDSet
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		res = store.RedriveResult{}
		q.Reset()
		j, err = sqlrow.ScanJob(x.QueryRow(ctx, qLockJob, id, owner, s.leaseEnded(now)))
		if errors.Is(err, driver.ErrNoRows) {
			return fmt.Errorf("job %s is not held by %s: %w", id, owner, store.ErrConflict)
		} else if err != nil {
			return err
		}
		switch err := subscriptionExists(ctx, x, j.SubscriptionID); {
		case errors.Is(err, store.ErrNotFound):
			j.State, j.Error = job.StateFailed, "the subscription was deleted"
		case err != nil:
			return err
		default:
			if j, res, err = s.recoverStep(ctx, x, j, limit, now, &q); err != nil {
				return err
			}
		}
		_, err = x.Exec(ctx, qSaveJob, sqlrow.JobProgress(&j, now)...)
		return err
	})
	if err != nil {
		return job.Job{}, store.RedriveResult{}, fmt.Errorf("recover batch: %w", err)
	}
	s.queuedHere(q.IDs)
	return j, res, nil
}

// recoverStep looks at the batch's deliveries and moves those it can,
// adding the subscriptions of those it queued to q.
func (s *Store) recoverStep(ctx context.Context, x driver.Executor, j job.Job, limit int, now time.Time, q *sqlrow.IDSet) (job.Job, store.RedriveResult, error) {
	status := string(j.Statuses[j.CursorStatus])
	from, before := sqlrow.RecoverWindow(j)
	var looked, movable []string
	err := x.Query(ctx, qRecoverLook, func(r driver.Row) error {
		var did string
		var ok bool
		if err := r.Scan(&did, &ok); err != nil {
			return err
		}
		looked = append(looked, did)
		if ok {
			movable = append(movable, did)
		}
		return nil
	}, j.SubscriptionID, status, from, j.CursorID, before, limit)
	if err != nil {
		return j, store.RedriveResult{}, err
	}
	res, err := s.redriven(ctx, x, movable, nil, q, sqlrow.UnixMS(now))
	if err != nil {
		return j, store.RedriveResult{}, err
	}
	return sqlrow.RecoverStep(j, looked, res, limit), res, nil
}

// DeleteFinishedJobs implements store.JobStore in one write.
func (s *Store) DeleteFinishedJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		if n, err = x.Exec(ctx, qDeleteFinishedJobs, sqlrow.UnixMS(before), limit); err != nil {
			return err
		}
		_, err = x.Exec(ctx, qForgetTurns)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return int(n), nil
}

// leaseEnded is the time, in Unix milliseconds, before which a lease
// (lease_until) has ended at now: now where leases expire
// (store.Capabilities.LeasesExpire), else 0, before every lease, since a
// lease then lasts until it is given back.
func (s *Store) leaseEnded(now time.Time) int64 {
	if !s.opts.Capabilities.LeasesExpire {
		return 0
	}
	return sqlrow.UnixMS(now)
}
