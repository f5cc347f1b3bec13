package enginetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// CheckJobTurns checks that accounts take turns, on nodes: stores on one
// database (the conformance suite passes its one store, a shared backend
// several), which claim in turn. Account a has two recovers (a1 of three
// dead letters, a2), b one of one dead letter, c one of two; every claim
// is followed by a batch of one delivery, which gives the job back. The
// claims go a1 b1 c1 a1 b1 c1 …, whichever node claims: each account's
// oldest job, the account served least recently first, so b1 (three
// batches) is done at the eighth claim while a1 and a2 still run, and a2
// starts only once a1 is done. Before, the oldest job was worked to its
// end first.
func CheckJobTurns(t *testing.T, nodes ...store.Store) {
	t.Helper()
	checkJobTurns(setup(t, func(*testing.T) store.Store { return nodes[0] }), nodes...)
}

func checkJobTurns(b *bundle, nodes ...store.Store) {
	t := b.t
	t.Helper()
	subOf := func(name string, deadLetters int) subscription.Subscription {
		sub := b.subIn(b.account(name).ID, "https://turns.example/"+name)
		for range deadLetters {
			b.endedAt(sub, b.now, delivery.StatusDeadLettered)
		}
		return sub
	}
	subA, subB, subC := subOf("a", 3), subOf("b", 1), subOf("c", 2)
	a1, a2 := recoverJob(b, subA, b.now, time.Time{}), recoverJob(b, subA, b.now, time.Time{})
	b1, c1 := recoverJob(b, subB, b.now, time.Time{}), recoverJob(b, subC, b.now, time.Time{})
	names := map[string]string{a1.ID: "a1", a2.ID: "a2", b1.ID: "b1", c1.ID: "c1"}

	var claimed []string
	state := map[string]job.State{}
	for i := range 13 {
		node, owner := nodes[i%len(nodes)], fmt.Sprint("n", i%len(nodes))
		j, ok, err := node.ClaimJob(b.ctx, owner, b.now, b.at(time.Hour))
		if err != nil || !ok {
			t.Fatalf("ClaimJob after %v: %v, %v", claimed, ok, err)
		}
		if j, _, err = node.RecoverBatch(b.ctx, j.ID, owner, 1, b.now); err != nil {
			t.Fatalf("RecoverBatch after %v: %v", claimed, err)
		}
		claimed, state[names[j.ID]] = append(claimed, names[j.ID]), j.State
		if names[j.ID] == "b1" && j.Finished() && (state["a1"] != job.StateRunning || state["a2"] != "") {
			t.Fatalf("b1 ended after %v, with a1 %s and a2 %q; want a1 running and a2 not started", claimed, state["a1"], state["a2"])
		}
	}
	equal(t, "the jobs claimed in turn", claimed,
		[]string{"a1", "b1", "c1", "a1", "b1", "c1", "a1", "b1", "c1", "a1", "c1", "a1", "a2"})
	equal(t, "the jobs' states", state, map[string]job.State{"a1": job.StateDone, "b1": job.StateDone,
		"c1": job.StateDone, "a2": job.StateRunning})
}

// testRecoverTurns: CheckJobTurns on the suite's one store.
func testRecoverTurns(t *testing.T, b *bundle) { checkJobTurns(b, b.s) }

// CheckJobLimit checks CreateJob's limit of an account's running jobs.
// nodes are stores on one database (the conformance suite passes its one
// store, a shared backend several: several processes). Twice limit
// creates in one account race through every node at once: exactly limit
// succeed, every other one fails with a *store.JobLimitError naming the
// limit and stores nothing; once one of the account's jobs is done,
// exactly one more can be created; another account still creates its own;
// and with no limit (0) the full account creates one more.
func CheckJobLimit(t *testing.T, limit int, nodes ...store.Store) {
	t.Helper()
	checkJobLimit(setup(t, func(*testing.T) store.Store { return nodes[0] }), limit, nodes...)
}

func checkJobLimit(b *bundle, limit int, nodes ...store.Store) {
	t := b.t
	t.Helper()
	full, other := b.subIn(b.account("full").ID, "https://limit.example/a"), b.subIn(b.account("other").ID, "https://limit.example/b")
	// One status and nothing to recover: one batch ends a job.
	newJob := func(sub subscription.Subscription) job.Job {
		j := newRecover(b, sub, b.now, time.Time{})
		j.Statuses = []delivery.Status{delivery.StatusDeadLettered}
		return j
	}
	jobs := make([]job.Job, 2*limit)
	for i := range jobs {
		jobs[i] = newJob(full)
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = nodes[i%len(nodes)].CreateJob(b.ctx, jobs[i], limit)
		}()
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		var le *store.JobLimitError
		switch {
		case err == nil:
			created++
		case errors.As(err, &le) && errors.Is(err, store.ErrJobLimit) && le.Limit == limit:
			if _, err := b.s.GetJob(b.ctx, jobs[i].ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("refused %s: GetJob = %v, want ErrNotFound", jobs[i].ID, err)
			}
		default:
			t.Errorf("CreateJob %d: %v, want nil or a *JobLimitError with limit %d", i, err, limit)
		}
	}
	if created != limit {
		t.Fatalf("%d creates at once in an account with a limit of %d: %d succeeded, want exactly %d", len(jobs), limit, created, limit)
	}

	last := nodes[len(nodes)-1]
	id := claimJob(b, "n1")
	if j, _, err := b.s.RecoverBatch(b.ctx, id, "n1", 10, b.now); err != nil || j.State != job.StateDone {
		t.Fatalf("a batch of %s: %+v, %v; want it done", id, j, err)
	}
	if _, err := last.CreateJob(b.ctx, newJob(full), limit); err != nil {
		t.Fatalf("a create after a job ended: %v", err)
	}
	if _, err := b.s.CreateJob(b.ctx, newJob(full), limit); !errors.Is(err, store.ErrJobLimit) {
		t.Fatalf("a create past the limit again: %v, want ErrJobLimit", err)
	}
	if _, err := last.CreateJob(b.ctx, newJob(other), limit); err != nil {
		t.Fatalf("another account's create: %v", err)
	}
	if _, err := b.s.CreateJob(b.ctx, newJob(full), 0); err != nil {
		t.Fatalf("a create with no limit: %v", err)
	}
}

// testJobLimit: CheckJobLimit on the suite's one store.
func testJobLimit(t *testing.T, b *bundle) { checkJobLimit(b, 4, b.s) }
