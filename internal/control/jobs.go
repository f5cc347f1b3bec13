package control

import (
	"context"

	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/job"
)

// Kicker is the job runner as the control plane drives it: told of a new
// job, it looks for one at once instead of at its next idle round.
type Kicker interface {
	Kick()
}

// Recover stores j (a recover checked by job.RecoverRequest) as a new job,
// with its id and creation time, counted (store.JobStore's CreateJob), and
// tells this node's job runner. store.ErrNotFound when the subscription
// does not exist; a *store.JobLimitError, and no job, when its account has
// MaxJobsPerAccount jobs running or waiting already.
func (s *Service) Recover(ctx context.Context, j job.Job) (job.Job, error) {
	now := s.Clock.Now()
	j.ID, j.CreatedAt = ids.New(ids.Job.Prefix, now), now
	j, err := s.Store.CreateJob(ctx, j, s.MaxJobsPerAccount)
	if err != nil {
		return job.Job{}, err
	}
	if s.Jobs != nil {
		s.Jobs.Kick()
	}
	return j, nil
}

// RecoverBatch works the next batch (at most limit deliveries) of a
// recover owner claimed, which gives the job back, and tells the scheduler
// of the endpoints of the deliveries it made due, as a redrive does.
// store.ErrConflict when owner no longer holds the job.
func (s *Service) RecoverBatch(ctx context.Context, id, owner string, limit int) (job.Job, error) {
	now := s.Clock.Now()
	j, res, err := s.Store.RecoverBatch(ctx, id, owner, limit, now)
	if _, err := s.redriven(ctx, res, err, now); err != nil {
		return job.Job{}, err
	}
	return j, nil
}
