package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
)

// The recover jobs' budgets (docs/recover.md, "Turns, limit and
// retention"): accounts take turns, an account has at most
// --max-jobs-per-account jobs, finished jobs go after --job-retention.

// deadLettersOf makes a subscription of tn named name whose receiver
// refused n events, published by tn (404: dead-lettered at once; fewer
// than the 10 consecutive failures that put an endpoint on probation), and
// now takes everything; it returns the subscription's id.
func deadLettersOf(b *bundle, tn tenant, name string, n int) string {
	b.t.Helper()
	rc, failing := switchable(b.t, http.StatusNotFound, true)
	var sub struct{ ID string }
	if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions",
		map[string]any{"name": name, "url": rc.URL, "event_types": []string{"t"}}, &sub); code != http.StatusCreated {
		b.t.Fatalf("create subscription: %d %s", code, raw)
	}
	for i := range n {
		ev := map[string]any{"specversion": "1.0", "id": fmt.Sprint(name, i), "source": "/jobs", "type": "t"}
		if code, raw := b.doAs(tn.pubKey, "POST", "/v1/events", ev, nil); code != http.StatusAccepted {
			b.t.Fatalf("publish: %d %s", code, raw)
		}
	}
	eventually(b.t, fmt.Sprint(n, " dead letters of ", name), func() bool {
		dead := 0
		for _, d := range deliveriesAs(b, tn.accountKey, sub.ID) {
			if d.Status == "dead_lettered" {
				dead++
			}
		}
		return dead == n
	})
	b.settle()
	failing.Store(false)
	return sub.ID
}

// recoverAll posts, with tn's account key, a recover of every dead letter
// of sub since the fake clock's start and returns the answer.
func recoverAll(b *bundle, tn tenant, sub string) (*http.Response, []byte) {
	b.t.Helper()
	return b.send("POST", "/v1/subscriptions/"+sub+"/recover",
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + tn.accountKey},
		`{"since": "`+start.Format(time.RFC3339)+`"}`)
}

// startRecover starts a recover of every dead letter of tn's sub and
// returns its job.
func startRecover(b *bundle, tn tenant, sub string) jobRes {
	b.t.Helper()
	resp, raw := recoverAll(b, tn, sub)
	var j jobRes
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &j) != nil {
		b.t.Fatalf("recover of %s: %d %s", sub, resp.StatusCode, raw)
	}
	return j
}

// getJob reads a job of tn's (the zero jobRes when it is not found).
func getJob(b *bundle, tn tenant, id string) jobRes {
	b.t.Helper()
	var j jobRes
	if code, raw := b.doAs(tn.accountKey, "GET", "/v1/jobs/"+id, nil, &j); code == http.StatusNotFound {
		return jobRes{}
	} else if code != http.StatusOK {
		b.t.Fatalf("GET /v1/jobs/%s: %d %s", id, code, raw)
	}
	return j
}

// TestRecoverAccountsTakeTurns: account A starts four recovers of 6 dead
// letters each, then account B one of a single dead letter; the runner
// works a batch of one delivery and then pauses a minute of the fake
// clock. B's job is done while every one of A's still runs: the runner
// takes the accounts in turn instead of working A's jobs to their end
// first (before, B's job waited for A's batches: the 66.5 s of the attack
// battery's finding).
func TestRecoverAccountsTakeTurns(t *testing.T) {
	const pace = time.Minute
	b := setup(t, func(c *server.Config) { c.RecoverBatch, c.RecoverPace = 1, pace })
	ta, tb := newTenant(b, "a"), newTenant(b, "b")
	subA, subB := deadLettersOf(b, ta, "big", 6), deadLettersOf(b, tb, "small", 1)
	var big []jobRes
	for range 4 {
		big = append(big, startRecover(b, ta, subA))
	}
	b.settle()
	b.clk.Advance(time.Second) // B's job the newest, by its time
	small := startRecover(b, tb, subB)
	for round := 0; ; round++ {
		b.settle()
		if getJob(b, tb, small.ID).State == "done" {
			break
		}
		if round == 30 {
			t.Fatalf("B's job not done after %d rounds of the runner: %+v", round, getJob(b, tb, small.ID))
		}
		b.clk.Advance(pace)
	}
	for i, j := range big {
		if got := getJob(b, ta, j.ID); got.State != "running" {
			t.Errorf("A's job %d when B's is done: %+v; want it running", i, got)
		}
	}
	begun := 0
	for _, j := range big {
		begun += getJob(b, ta, j.ID).Done
	}
	if begun == 0 {
		t.Errorf("A's jobs when B's is done: none begun; want A to have had turns too")
	}
}

// TestRecoverJobLimit: with --max-jobs-per-account 2, an account's third
// recover while two run answers 429 with Retry-After, naming the limit and
// the flag, and stores nothing (the state the API shows is unchanged, and
// once one of the two is done, exactly one more is accepted). Another
// account is not affected.
func TestRecoverJobLimit(t *testing.T) {
	const pace = time.Minute
	b := setup(t, func(c *server.Config) { c.MaxJobsPerAccount, c.RecoverBatch, c.RecoverPace = 2, 1, pace })
	ta, tb := newTenant(b, "a"), newTenant(b, "b")
	subA, subB := deadLettersOf(b, ta, "a", 3), deadLettersOf(b, tb, "b", 1)
	running := []jobRes{startRecover(b, ta, subA), startRecover(b, ta, subA)}
	refused := func(when string) {
		t.Helper()
		before := b.state()
		resp, raw := recoverAll(b, ta, subA)
		var p struct{ Type, Detail string }
		_ = json.Unmarshal(raw, &p)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "5" ||
			resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("Location") != "" ||
			p.Type != "urn:herald:problem:limit-reached" || !strings.Contains(p.Detail, "2 jobs") ||
			!strings.Contains(p.Detail, "--max-jobs-per-account") {
			t.Fatalf("%s: %d %v %s; want 429 with Retry-After 5, limit-reached naming 2 jobs and --max-jobs-per-account",
				when, resp.StatusCode, resp.Header, raw)
		}
		if after := b.state(); after != before {
			t.Fatalf("%s: the refused recover changed the state:\nbefore %s\nafter  %s", when, before, after)
		}
	}
	refused("a third recover")
	startRecover(b, tb, subB)
	// A's jobs were made at the same time: either may be worked first.
	oneDone := func() bool {
		return getJob(b, ta, running[0].ID).State == "done" || getJob(b, ta, running[1].ID).State == "done"
	}
	for round := 0; !oneDone(); round++ {
		if round == 30 {
			t.Fatalf("neither of A's jobs done after %d rounds", round)
		}
		b.clk.Advance(pace)
		b.settle()
	}
	startRecover(b, ta, subA)
	refused("a recover past the limit again")
}

// TestRecoverJobRetention: a finished job is answered for --job-retention
// (an hour here) after it ended, and deleted by the next clean-up after
// that.
func TestRecoverJobRetention(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.JobRetention = time.Hour })
	tn := newTenant(b, "a")
	j := startRecover(b, tn, deadLettersOf(b, tn, "a", 1))
	eventually(t, "the job done", func() bool { return getJob(b, tn, j.ID).State == "done" })
	b.settle()
	ended := *getJob(b, tn, j.ID).FinishedAt
	b.clk.Advance(ended.Add(time.Hour).Sub(b.clk.Now())) // its clean-up keeps it: it ended an hour ago, not more
	b.settle()
	if got := getJob(b, tn, j.ID); got.State != "done" {
		t.Fatalf("the job at its retention's end: %+v; want it kept", got)
	}
	b.clk.Advance(time.Minute) // the next clean-up
	b.settle()
	if got := getJob(b, tn, j.ID); got.ID != "" {
		t.Fatalf("the job a minute past its retention: %+v; want it deleted (404)", got)
	}
}
