package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/job"
)

// JobStore keeps the operator's jobs (job.Job) and works a recover's
// batches. A job is leased to one runner for one batch at a time: a runner
// claims the job whose turn it is (ClaimJob: accounts take turns) and its
// batch (RecoverBatch) is one transaction that moves its deliveries, stores
// the job's progress and gives the job back, so a batch is never half done,
// a job goes on where its last batch ended on any node, and no account's
// big jobs hold another's small one.
type JobStore interface {
	// CreateJob stores j, running and unleased, with Total the count of
	// the deliveries it would recover now (counting stops at
	// job.CountLimit), and returns it. ErrNotFound when its subscription
	// does not exist. A *JobLimitError, and nothing stored, when j's
	// account already has max running jobs (running or waiting for a
	// turn; max 0: no limit): the count is read in the transaction that
	// inserts, under a lock of the account's jobs (SQLite: the one
	// writer), so concurrent creates on any number of processes never
	// take an account past max.
	CreateJob(ctx context.Context, j job.Job, max int) (job.Job, error)
	// GetJob returns a job. ErrNotFound.
	GetJob(ctx context.Context, id string) (job.Job, error)
	// ClaimJob leases to owner, until `until`, the next running job that
	// no one else holds (never leased, given back, held by owner itself,
	// or, where leases expire, its lease ended before now), in turn: of
	// the account served least recently (one never served first), its
	// oldest job (CreatedAt, then ID). The claim serves the account: it
	// goes to the end of the turns. false when there is no such job.
	ClaimJob(ctx context.Context, owner string, now, until time.Time) (job.Job, bool, error)
	// RecoverBatch works the next batch of a recover that owner holds and
	// gives the job back (its lease ends, so the next claim takes the
	// next account's turn): the next at most limit deliveries of its
	// subscription in its current status (Statuses[CursorStatus]) created
	// in [Since, Until), by id after CursorID, are made due again as
	// Redeliver makes them (those a dead letter's whose subscription
	// names no dead-letter URL are counted in Errors and left); when
	// fewer than limit were left in the status, the job goes to the
	// next, and after the last it is done (FinishedAt now). A job whose
	// subscription is gone fails. It returns the job as stored and what
	// moved. ErrConflict when owner does not hold the job's lease (at
	// now) or the job has ended (nothing changes).
	RecoverBatch(ctx context.Context, id, owner string, limit int, now time.Time) (job.Job, RedriveResult, error)
	// DeleteFinishedJobs deletes at most limit of the jobs that ended
	// (done or failed) before `before`, those that ended first first, and
	// forgets the turn of every account left with no job; it returns how
	// many jobs it deleted (the retention clean-up's, --job-retention).
	DeleteFinishedJobs(ctx context.Context, before time.Time, limit int) (int, error)
}

// ErrJobLimit: CreateJob found the account with as many running jobs as
// allowed. The call wrote nothing; a *JobLimitError says the limit.
var ErrJobLimit = errors.New("the account has as many jobs running or waiting as allowed")

// JobLimitError is the ErrJobLimit CreateJob returns, with the limit it
// applied.
type JobLimitError struct{ Limit int }

func (e *JobLimitError) Error() string { return fmt.Sprintf("%v (%d)", ErrJobLimit, e.Limit) }

// Is makes errors.Is(err, ErrJobLimit) true.
func (e *JobLimitError) Is(target error) bool { return target == ErrJobLimit }

// CheckJobLimit is the rule of CreateJob's limit: a *JobLimitError when an
// account with running jobs running already may not start another (max 0:
// no limit).
func CheckJobLimit(running, max int) error {
	if max > 0 && running >= max {
		return &JobLimitError{Limit: max}
	}
	return nil
}
