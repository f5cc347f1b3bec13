// Package recovery is the job runner: the service that works the
// operator's stored jobs (internal/job: recovers) in batches. Every node
// runs one. Each round a runner claims the job whose turn it is, with a
// lease (store.JobStore's ClaimJob: the account served least recently
// first, then its oldest job), and works one batch of it (the control
// plane's RecoverBatch: at most job.BatchSize deliveries, one store
// transaction that also stores the job's progress and gives the job
// back). So accounts take turns a batch each, whatever the size of their
// jobs, and nodes take turns on one job: a job whose node stopped is taken
// up where its last batch ended, by the next claim on any node (where
// leases expire, PostgreSQL, a lease its node took but never used ends
// after Lease).
package recovery

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

const (
	// Lease is how long a claim holds a job for its batch.
	Lease = time.Minute
	// Idle is how long a runner without a job waits before it looks for
	// one again (a job created on its node wakes it at once).
	Idle = 5 * time.Second
	// callTimeout bounds each store call of a round.
	callTimeout = 30 * time.Second
)

// Store is what the runner needs of the store.
type Store interface {
	ClaimJob(ctx context.Context, owner string, now, until time.Time) (job.Job, bool, error)
}

// Batches works a batch of a claimed job: the control plane
// (control.Service).
type Batches interface {
	RecoverBatch(ctx context.Context, id, owner string, limit int) (job.Job, error)
}

// Runner is the job runner. Its loop is Loop (startstop).
type Runner struct {
	loop    *startstop.Loop
	store   Store
	batches Batches
	clock   clock.Clock
	owner   string
	pace    time.Duration
	log     *slog.Logger
	batch   int
}

// New returns a runner that has not started: owner names this node in the
// jobs' leases, batch is the most deliveries of a batch (job.BatchSize
// unless a test makes it smaller), pace the pause after each batch (zero:
// none). Tests follow it through its loop's signals (Loops): it sleeps
// pace after each batch, and Idle when it found no job.
func New(st Store, batches Batches, clk clock.Clock, owner string, batch int, pace time.Duration, log *slog.Logger) *Runner {
	r := &Runner{store: st, batches: batches, clock: clk, owner: owner, batch: batch, pace: pace, log: log}
	r.loop = startstop.NewLoop("job runner", clk, r.round)
	return r
}

// Start starts the runner's loop; its first round looks for a job at once.
func (r *Runner) Start(ctx context.Context) error { return r.loop.Start(ctx) }

// Started is closed once the runner runs.
func (r *Runner) Started() <-chan struct{} { return r.loop.Started() }

// Stopped is closed once the runner has stopped.
func (r *Runner) Stopped() <-chan struct{} { return r.loop.Stopped() }

// Kick makes the runner look for a job as soon as its round ends.
func (r *Runner) Kick() { r.loop.Kick() }

// Loops returns the runner's loop (tests read its signals).
func (r *Runner) Loops() []*startstop.Loop { return []*startstop.Loop{r.loop} }

// Stop stops the loop; a batch in progress finishes (and gives its job
// back).
func (r *Runner) Stop() { r.loop.Stop() }

// round claims the job whose turn it is and works one batch of it; it
// returns the pause before the next round. A batch that fails leaves the
// job leased to this node, which claims it again in its turn (and, where
// leases expire, another node once the lease ended).
func (r *Runner) round(ctx context.Context) time.Duration {
	// Bounded, not cancelled by Stop: Stop waits for the batch.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	now := r.clock.Now()
	j, ok, err := r.store.ClaimJob(ctx, r.owner, now, now.Add(Lease))
	if err != nil {
		r.log.Warn("claiming a job", "err", err)
	}
	if !ok {
		return Idle
	}
	id := j.ID
	j, err = r.batches.RecoverBatch(ctx, id, r.owner, r.batch)
	switch {
	case errors.Is(err, store.ErrConflict): // taken over meanwhile (or it ended)
		return 0
	case err != nil:
		r.log.Warn("a batch of a job", "job_id", id, "err", err)
		return Idle
	case j.Finished():
		r.log.Info("job ended", "job_id", j.ID, "kind", j.Kind, "state", j.State, "done", j.Done, "errors", j.Errors)
	}
	return r.pace
}
