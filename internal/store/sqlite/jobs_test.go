package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
)

// TestRedeliveryTellsOnQueued: a redelivery, a redrive and a recover batch
// that queue deliveries tell Options.OnQueued of their subscription after
// the commit; one that moves nothing tells nothing.
func TestRedeliveryTellsOnQueued(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	log := &onQueuedLog{t: t}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "herald.db"), Options{OnQueued: func(subs []string) {
		log.calls, log.counts = append(log.calls, append([]string(nil), subs...)), append(log.counts, 0)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p := pullSubscription(t, s, "p", now)
	ev := queuedEvent("e1", now, p)
	if _, err := s.Publish(ctx, []store.NewEvent{ev}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	log.expect("Publish", p.ID)
	id := ev.Deliveries[0].ID
	if d, err := s.Redeliver(ctx, id, now); err != nil || d.Status != delivery.StatusQueued {
		t.Fatalf("Redeliver = %+v, %v; want queued", d, err)
	}
	log.expect("Redeliver", p.ID)
	if res, err := s.Redrive(ctx, p.ID, nil, now); err != nil || res.Count != 0 {
		t.Fatalf("Redrive = %+v, %v; want nothing moved", res, err)
	}
	log.expect("Redrive of nothing")
	j, err := s.CreateJob(ctx, job.Job{ID: "job_1", Kind: job.KindRecover, AccountID: p.AccountID, SubscriptionID: p.ID,
		State: job.StateRunning, Since: now.Add(-time.Hour), Statuses: []delivery.Status{delivery.StatusQueued}, CreatedAt: now}, 0)
	if err != nil || j.Total != 1 {
		t.Fatalf("CreateJob = %+v, %v; want a job of 1", j, err)
	}
	if _, ok, err := s.ClaimJob(ctx, "me", now, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("ClaimJob = %v, %v", ok, err)
	}
	if j, res, err := s.RecoverBatch(ctx, j.ID, "me", 10, now); err != nil || res.Count != 1 || j.State != job.StateDone {
		t.Fatalf("RecoverBatch = %+v, %+v, %v; want 1 moved, done", j, res, err)
	}
	log.expect("RecoverBatch", p.ID)
}
