package store

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/job"
)

// JobStore keeps the operator's jobs (job.Job) and works a recover's
// batches. A job is leased to one runner at a time (its owner, until a
// time); a batch is one transaction that moves its deliveries and stores
// the job's progress together, so a batch is never half done and a job
// taken over after a restart or by another node goes on where the last
// batch ended.
type JobStore interface {
	// CreateJob stores j, running and unleased, with Total the count of
	// the deliveries it would recover now (counting stops at
	// job.CountLimit), and returns it. ErrNotFound when its subscription
	// does not exist.
	CreateJob(ctx context.Context, j job.Job) (job.Job, error)
	// GetJob returns a job. ErrNotFound.
	GetJob(ctx context.Context, id string) (job.Job, error)
	// ClaimJob leases the oldest running job that no one holds (never
	// leased, released, or, where leases expire, its lease ended before
	// now) to owner until `until`; false when there is none.
	ClaimJob(ctx context.Context, owner string, now, until time.Time) (job.Job, bool, error)
	// ReleaseJob ends owner's lease of the job (nothing when another holds it).
	ReleaseJob(ctx context.Context, id, owner string) error
	// RecoverBatch works the next batch of a recover that owner holds:
	// the next at most limit deliveries of its subscription in its
	// current status (Statuses[CursorStatus]) created in [Since, Until),
	// by id after CursorID, are made due again as Redeliver makes them
	// (those a dead letter's whose subscription names no dead-letter URL
	// are counted in Errors and left); when fewer than limit were left in
	// the status, the job goes to the next, and after the last it is
	// done. A job whose subscription is gone fails. The lease is renewed
	// until `until` (released when the job ends). It returns the job as
	// stored and what moved. ErrConflict when owner does not hold the
	// job's lease or it has ended (nothing changes).
	RecoverBatch(ctx context.Context, id, owner string, limit int, now, until time.Time) (job.Job, RedriveResult, error)
}
