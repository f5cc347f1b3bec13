package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
)

// JobTurnsFrom is the schema version before the one that added the jobs'
// turns and their indexes (0020_job_turns.sql): RunUpgrades opens
// JobTurnsData written at it.
const JobTurnsFrom = 19

// JobTurnsData is written into a database at schema version JobTurnsFrom:
// TracingData, and three jobs of the account acc_…sess: one done long ago,
// two running, one of them leased to a node that is gone.
const JobTurnsData = TracingData + `
INSERT INTO jobs (id, kind, account_id, subscription_id, state, since_ms, statuses, total, done, created_at, finished_at)
VALUES ('job_v19_done', 'recover', 'acc_000000000000000000000sess', 'sub_v19_gone', 'done', 1767603600000,
	'dead_lettered,dropped', 0, 0, 1767603600000, 1767603600000);
INSERT INTO jobs (id, kind, account_id, subscription_id, state, since_ms, statuses, created_at, lease_owner, lease_until)
VALUES ('job_v19_running', 'recover', 'acc_000000000000000000000sess', 'sub_v19_gone', 'running', 1767603600000,
	'dead_lettered,dropped', 1767603601000, '', 0),
       ('job_v19_leased', 'recover', 'acc_000000000000000000000sess', 'sub_v19_gone', 'running', 1767603600000,
	'dead_lettered,dropped', 1767603602000, 'gone-node', 1767603660000);
`

// CheckJobTurnsUpgrade checks a store opened on a database at JobTurnsFrom
// holding JobTurnsData: the running jobs count toward the account's limit,
// the old finished one is deleted by the retention and the running ones
// kept, and a job of another account created after the upgrade is claimed
// before the account's second job (its lease, of a node gone, over) once
// the first took a turn.
func CheckJobTurnsUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	b.now = time.UnixMilli(1767607200000).UTC() // an hour after the jobs, past the old lease
	sess := b.subIn("acc_000000000000000000000sess", "https://upgraded.example/hook")
	if _, err := b.s.CreateJob(b.ctx, newRecover(b, sess, b.now, time.Time{}), 2); !errors.Is(err, store.ErrJobLimit) {
		t.Fatalf("a third running job of the account after the upgrade: %v; want ErrJobLimit", err)
	}
	if n, err := b.s.DeleteFinishedJobs(b.ctx, b.now, 100); err != nil || n != 1 {
		t.Fatalf("DeleteFinishedJobs after the upgrade = %d, %v; want 1", n, err)
	}
	if _, err := b.s.GetJob(b.ctx, "job_v19_done"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old finished job after the retention: %v; want ErrNotFound", err)
	}
	other := recoverJob(b, b.sub("https://upgraded.example/other"), b.now, time.Time{})
	if got := claimJob(b, "n1"); got != "job_v19_running" {
		t.Fatalf("the first claim after the upgrade: %q; want the oldest running job, job_v19_running", got)
	}
	if j, _, err := b.s.RecoverBatch(b.ctx, "job_v19_running", "n1", 10, b.now); err != nil || j.State != job.StateFailed {
		t.Fatalf("a batch of job_v19_running (its subscription is gone): %+v, %v; want it failed", j, err)
	}
	for _, want := range []string{other.ID, "job_v19_leased"} {
		if got := claimJob(b, "n1"); got != want {
			t.Fatalf("a claim after the account's turn: %q; want %s", got, want)
		}
		if _, _, err := b.s.RecoverBatch(b.ctx, want, "n1", 10, b.now); err != nil {
			t.Fatalf("a batch of %s: %v", want, err)
		}
	}
}
