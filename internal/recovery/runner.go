// Package recovery is the job runner: the service that works the
// operator's stored jobs (internal/job: recovers) in batches. Every node
// runs one. A runner claims one running job at a time with a lease
// (store.JobStore), works one batch of it a round (the control plane's
// RecoverBatch: at most job.BatchSize deliveries, one store transaction
// that also stores the job's progress and renews the lease), and lets the
// job go when it ends or the runner stops. A job whose node stopped is
// therefore taken up where its last batch ended: at once when the node
// released it, and, where leases expire (PostgreSQL), by another node
// once its lease (Lease) ended.
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
	// Lease is how long a claimed job is held past its last batch.
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
	ReleaseJob(ctx context.Context, id, owner string) error
}

// Batches works a batch of a held job: the control plane (control.Service).
type Batches interface {
	RecoverBatch(ctx context.Context, id, owner string, limit int, until time.Time) (job.Job, error)
}

// Runner is the job runner. Its loop is Loop (startstop); Stop releases
// the job it holds.
type Runner struct {
	loop    *startstop.Loop
	store   Store
	batches Batches
	clock   clock.Clock
	owner   string
	pace    time.Duration
	log     *slog.Logger
	batch   int
	held    string // the job held; the loop's goroutine only, and Stop after it
}

// New returns a runner that has not started: owner names this node in the
// jobs' leases, batch is the most deliveries of a batch (job.BatchSize
// unless a test makes it smaller), pace the pause between two batches of a
// job (zero: none). Tests follow it through its loop's signals (Loops): it
// sleeps pace after each batch of a job it holds.
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

// Stop stops the loop (a batch in progress finishes) and releases the job
// held, so that another runner takes it at once.
func (r *Runner) Stop() {
	r.loop.Stop()
	if r.held == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := r.store.ReleaseJob(ctx, r.held, r.owner); err != nil {
		r.log.Warn("releasing a job at stop", "job_id", r.held, "err", err)
	}
	r.held = ""
}

// round claims a job when it holds none and works one batch of it; it
// returns the pause before the next round.
func (r *Runner) round(ctx context.Context) time.Duration {
	// Bounded, not cancelled by Stop: Stop waits for the batch.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	if r.held == "" {
		now := r.clock.Now()
		j, ok, err := r.store.ClaimJob(ctx, r.owner, now, now.Add(Lease))
		if err != nil {
			r.log.Warn("claiming a job", "err", err)
		}
		if !ok {
			return Idle
		}
		r.held = j.ID
	}
	j, err := r.batches.RecoverBatch(ctx, r.held, r.owner, r.batch, r.clock.Now().Add(Lease))
	if errors.Is(err, store.ErrConflict) { // no longer ours (or it ended)
		r.held = ""
		return 0
	}
	if err != nil { // the batch is tried again (the job is still held)
		r.log.Warn("a batch of a job", "job_id", r.held, "err", err)
		return Idle
	}
	if j.Finished() {
		r.log.Info("job ended", "job_id", j.ID, "kind", j.Kind, "state", j.State, "done", j.Done, "errors", j.Errors)
		r.held = ""
		return 0
	}
	return r.pace
}
