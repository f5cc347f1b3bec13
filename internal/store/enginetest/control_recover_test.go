package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// newRecover is a recover job of sub over [since, until) of the default
// statuses, made at b.now, not yet stored.
func newRecover(b *bundle, sub subscription.Subscription, since, until time.Time) job.Job {
	return job.Job{ID: b.id("job_"), Kind: job.KindRecover, AccountID: sub.AccountID,
		SubscriptionID: sub.ID, State: job.StateRunning, Since: since, Until: until,
		Statuses: job.DefaultStatuses, CreatedAt: b.now}
}

// recoverJob creates a recover job of sub over [since, until) of the
// default statuses (no limit of jobs) and returns it as stored.
func recoverJob(b *bundle, sub subscription.Subscription, since, until time.Time) job.Job {
	b.t.Helper()
	j, err := b.s.CreateJob(b.ctx, newRecover(b, sub, since, until), 0)
	if err != nil {
		b.t.Fatalf("CreateJob: %v", err)
	}
	return j
}

// claimJob claims the next job for owner at b.now, its lease to an hour
// on, and returns its ID ("" when there is none).
func claimJob(b *bundle, owner string) string {
	b.t.Helper()
	j, ok, err := b.s.ClaimJob(b.ctx, owner, b.now, b.at(time.Hour))
	if err != nil {
		b.t.Fatalf("ClaimJob: %v", err)
	}
	if !ok {
		return ""
	}
	return j.ID
}

// recoverBatch claims the next job for owner, which must be id, and runs
// one batch of it at b.now (which gives it back).
func recoverBatch(b *bundle, id, owner string, limit int) job.Job {
	b.t.Helper()
	if got := claimJob(b, owner); got != id {
		b.t.Fatalf("ClaimJob: %q; want %s", got, id)
	}
	j, _, err := b.s.RecoverBatch(b.ctx, id, owner, limit, b.now)
	if err != nil {
		b.t.Fatalf("RecoverBatch: %v", err)
	}
	return j
}

// endedAt makes a delivery to sub made at `at` (its id of that time, as
// a publish makes it) whose one attempt ended it: dead-lettered, dropped,
// delivered, or, for pending, failed and due again in 1000 hours.
func (b *bundle) endedAt(sub subscription.Subscription, at time.Time, status delivery.Status) string {
	b.t.Helper()
	ev := b.event(at, sub)
	id := ids.New(ids.Delivery.Prefix, at)
	ev.Deliveries[0].ID, ev.Deliveries[0].Claimed = id, true
	b.publish(ev)
	o := deadLettered(id, 1, at, at)
	switch status {
	case delivery.StatusDropped:
		o.Status, o.DeadLetterReason = status, delivery.ReasonSubscriptionDeleted
	case delivery.StatusDelivered:
		o = succeeded(id, 1, at)
	case delivery.StatusPending:
		o = failed(id, 1, at, at, b.at(1000*time.Hour))
	}
	b.record(o)
	return id
}

// testRecoverRange: a recover moves exactly the dead-lettered and dropped
// deliveries made in its range, in batches that store its progress and
// give the job back, and a batch of a job another holds (or no one)
// changes nothing.
func testRecoverRange(t *testing.T, b *bundle) {
	sub := b.sub("https://recover.example/hook")
	since, until := b.at(time.Hour), b.at(2*time.Hour)
	dead := delivery.StatusDeadLettered
	before := b.endedAt(sub, b.at(30*time.Minute), dead)
	in := []string{b.endedAt(sub, since, dead), b.endedAt(sub, b.at(70*time.Minute), dead),
		b.endedAt(sub, b.at(80*time.Minute), delivery.StatusDropped)}
	after := b.endedAt(sub, until, dead)
	delivered := b.endedAt(sub, b.at(90*time.Minute), delivery.StatusDelivered)
	waiting := b.endedAt(sub, b.at(95*time.Minute), delivery.StatusPending)

	j := recoverJob(b, sub, since, until)
	if j.Total != 3 || j.Done != 0 || j.State != job.StateRunning {
		t.Fatalf("created: %+v; want total 3, running", j)
	}
	if got := claimJob(b, "n1"); got != j.ID {
		t.Fatalf("ClaimJob: %q; want %s", got, j.ID)
	}
	if got := claimJob(b, "n2"); got != "" {
		t.Fatalf("a second ClaimJob of a held job: %s", got)
	}
	if _, _, err := b.s.RecoverBatch(b.ctx, j.ID, "n2", 2, b.now); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a batch of another's job: %v; want ErrConflict", err)
	}
	j, _, err := b.s.RecoverBatch(b.ctx, j.ID, "n1", 2, b.now)
	if err != nil || j.Done != 2 || j.State != job.StateRunning {
		t.Fatalf("after the first batch: %+v, %v", j, err)
	}
	if _, _, err := b.s.RecoverBatch(b.ctx, j.ID, "n1", 2, b.now); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second batch without a claim (the first gave the job back): %v; want ErrConflict", err)
	}
	for j.State == job.StateRunning {
		j = recoverBatch(b, j.ID, "n2", 2)
	}
	got, err := b.s.GetJob(b.ctx, j.ID)
	if err != nil || got.State != job.StateDone || got.Done != 3 || got.Errors != 0 || got.Total != 3 || !got.FinishedAt.Equal(b.now) {
		t.Fatalf("GetJob after the last batch: %+v, %v", got, err)
	}
	for _, id := range in {
		if d := b.get(id); d.Status != delivery.StatusPending || d.RoundAttempts != 0 {
			t.Fatalf("recovered %s: %+v", id, d)
		}
	}
	for id, want := range map[string]delivery.Status{before: delivery.StatusDeadLettered, after: delivery.StatusDeadLettered,
		delivered: delivery.StatusDelivered} {
		if d := b.get(id); d.Status != want {
			t.Fatalf("%s outside the recover: %s; want %s", id, d.Status, want)
		}
	}
	if d := b.get(waiting); d.RoundAttempts != 1 || !d.NextAttemptAt.Equal(b.at(1000*time.Hour)) {
		t.Fatalf("a pending delivery was touched: %+v", d)
	}
	if got := claimJob(b, "n1"); got != "" {
		t.Fatalf("a finished job was claimed: %s", got)
	}
	if _, _, err := b.s.RecoverBatch(b.ctx, j.ID, "n2", 2, b.now); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a batch of a finished job: %v; want ErrConflict", err)
	}
}

// testRecoverLease: where leases expire, an ended one lets another owner
// take the job and the old owner's batch is refused; a job its owner holds
// (a round that ended before its batch) is its owner's to claim again, not
// another's; a job whose subscription is gone fails.
func testRecoverLease(t *testing.T, b *bundle) {
	sub := b.sub("https://lease.example/hook")
	b.endedAt(sub, b.now, delivery.StatusDeadLettered)
	j := recoverJob(b, sub, b.now, time.Time{})
	if _, ok, _ := b.s.ClaimJob(b.ctx, "n1", b.now, b.at(time.Minute)); !ok {
		t.Fatal("no job to claim")
	}
	holder := "n1"
	if b.s.Capabilities().LeasesExpire {
		if _, ok, _ := b.s.ClaimJob(b.ctx, "n2", b.at(2*time.Minute), b.at(time.Hour)); !ok {
			t.Fatal("an ended lease was not taken over")
		}
		if _, _, err := b.s.RecoverBatch(b.ctx, j.ID, "n1", 10, b.at(2*time.Minute)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("the old owner's batch: %v; want ErrConflict", err)
		}
		holder = "n2"
	}
	if got := claimJob(b, "n3"); got != "" {
		t.Fatalf("a held job was claimed by another: %s", got)
	}
	if got := claimJob(b, holder); got != j.ID {
		t.Fatalf("its holder's claim again: %q; want %s", got, j.ID)
	}
	deleteSub(b, sub)
	got, _, err := b.s.RecoverBatch(b.ctx, j.ID, holder, 10, b.now)
	if err != nil || got.State != job.StateFailed || got.Error == "" || got.Done != 0 {
		t.Fatalf("a job whose subscription is gone: %+v, %v", got, err)
	}
	if _, ok, _ := b.s.ClaimJob(b.ctx, "n3", b.at(3*time.Hour), b.at(4*time.Hour)); ok {
		t.Fatal("a finished job was claimed")
	}
	if _, err := b.s.GetJob(b.ctx, "job_00000000000000000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetJob of an unknown job: %v", err)
	}
}
