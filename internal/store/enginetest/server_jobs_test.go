package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// endJob claims the next job, which must be id, and works one batch of at
// most 10 deliveries at `at`, which must end it.
func endJob(b *bundle, id string, at time.Time) job.Job {
	b.t.Helper()
	j, ok, err := b.s.ClaimJob(b.ctx, "cleaner", at, at.Add(time.Hour))
	if err != nil || !ok || j.ID != id {
		b.t.Fatalf("ClaimJob at %v: %s, %v, %v; want %s", at, j.ID, ok, err, id)
	}
	if j, _, err = b.s.RecoverBatch(b.ctx, id, "cleaner", 10, at); err != nil || !j.Finished() {
		b.t.Fatalf("RecoverBatch of %s at %v: %+v, %v; want it ended", id, at, j, err)
	}
	return j
}

// oneBatchJob stores a recover of sub's dead letters (none: one batch ends
// it).
func oneBatchJob(b *bundle, sub subscription.Subscription) job.Job {
	b.t.Helper()
	j := newRecover(b, sub, b.now, time.Time{})
	j.Statuses = []delivery.Status{delivery.StatusDeadLettered}
	j, err := b.s.CreateJob(b.ctx, j, 0)
	if err != nil {
		b.t.Fatalf("CreateJob: %v", err)
	}
	return j
}

// testDeleteFinishedJobs: DeleteFinishedJobs deletes, those that ended
// first first and at most limit a call, the jobs done or failed before
// `before`; it keeps a running job and one that ended at `before` or later.
func testDeleteFinishedJobs(t *testing.T, b *bundle) {
	sub, gone := b.sub("https://retention.example/a"), b.sub("https://retention.example/b")
	done := endJob(b, oneBatchJob(b, sub).ID, b.at(time.Minute))
	failed := oneBatchJob(b, gone)
	deleteSub(b, gone)
	if failed = endJob(b, failed.ID, b.at(2*time.Minute)); failed.State != job.StateFailed {
		t.Fatalf("a job whose subscription is gone: %+v", failed)
	}
	recent := endJob(b, oneBatchJob(b, sub).ID, b.at(10*time.Minute))
	running := oneBatchJob(b, sub)

	before := b.at(10 * time.Minute)
	for _, want := range []job.Job{done, failed} {
		if n, err := b.s.DeleteFinishedJobs(b.ctx, before, 1); err != nil || n != 1 {
			t.Fatalf("DeleteFinishedJobs(limit 1) = %d, %v; want 1 (%s)", n, err, want.ID)
		}
		if _, err := b.s.GetJob(b.ctx, want.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetJob(%s) after its deletion: %v; want ErrNotFound", want.ID, err)
		}
	}
	if n, err := b.s.DeleteFinishedJobs(b.ctx, before, 100); err != nil || n != 0 {
		t.Fatalf("DeleteFinishedJobs again = %d, %v; want 0", n, err)
	}
	for _, kept := range []job.Job{recent, running} {
		if got, err := b.s.GetJob(b.ctx, kept.ID); err != nil || got.State != kept.State {
			t.Fatalf("GetJob(%s) kept: %+v, %v", kept.ID, got, err)
		}
	}
}

// testDeleteFinishedJobsForgetsTurns: an account whose last job was
// deleted loses its place in the turns (its row with it), and comes first
// again when it starts another: q's job and then p's took a turn, p's
// ended and was deleted, and p's new job is claimed before q's.
func testDeleteFinishedJobsForgetsTurns(t *testing.T, b *bundle) {
	q := b.subIn(b.account("q").ID, "https://turns.example/q")
	b.endedAt(q, b.now, delivery.StatusDeadLettered)
	qj := recoverJob(b, q, b.now, time.Time{})
	p := b.subIn(b.account("p").ID, "https://turns.example/p")
	pj := oneBatchJob(b, p)
	if j := recoverBatch(b, qj.ID, "n1", 1); j.State != job.StateRunning {
		t.Fatalf("q's job after a batch: %+v", j)
	}
	endJob(b, pj.ID, b.at(time.Minute))
	if n, err := b.s.DeleteFinishedJobs(b.ctx, b.at(time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("DeleteFinishedJobs = %d, %v; want 1", n, err)
	}
	next := oneBatchJob(b, p)
	if got := claimJob(b, "n1"); got != next.ID {
		t.Fatalf("claimed %s; want p's new job %s (q's is %s)", got, next.ID, qj.ID)
	}
}
