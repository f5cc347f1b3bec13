package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
)

// JobsFrom is the schema version before the one that added jobs
// (0018_jobs.sql): RunUpgrades opens JobsData written at it.
const JobsFrom = 17

// JobsData is written into a database at schema version JobsFrom: as
// OrderingData (nothing since changed what it writes).
const JobsData = OrderingData

// CheckJobsUpgrade checks a store opened on a database at JobsFrom holding
// JobsData: a recover of a subscription made after the upgrade is created,
// claimed and worked to its end.
func CheckJobsUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	sub := b.subIn("acc_000000000000000000000sess", "https://upgraded.example/hook")
	id := b.endedAt(sub, b.now, delivery.StatusDeadLettered)
	j := recoverJob(b, sub, b.now, time.Time{})
	for j.State == job.StateRunning {
		j = recoverBatch(b, j.ID, "n1", 10)
	}
	if j.State != job.StateDone || j.Done != 1 {
		t.Fatalf("recover after the upgrade: %+v", j)
	}
	if d := b.get(id); d.Status != delivery.StatusPending {
		t.Fatalf("recovered delivery after the upgrade: %s", d.Status)
	}
}
