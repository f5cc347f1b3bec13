package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/server"
)

// jobRes is the API's job resource, as tests read it.
type jobRes struct {
	ID         string     `json:"id"`
	Kind       string     `json:"kind"`
	State      string     `json:"state"`
	Total      int        `json:"total"`
	Done       int        `json:"done"`
	Errors     int        `json:"errors"`
	FinishedAt *time.Time `json:"finished_at"`
}

// recoverCase is a subscription whose receiver refused (404: dead-lettered
// at once) e0 before since, e1, e2, e4, e5 in [since, until) and e6 at
// until, and took e3; the receiver now takes everything.
type recoverCase struct {
	sub          string
	since, until time.Time
	rc           *receiver
}

// inRange are the events recoverCase's recover brings back.
var inRange = []string{"e1", "e2", "e4", "e5"}

func newRecoverCase(b *bundle) recoverCase {
	b.t.Helper()
	rc, failing := switchable(b.t, http.StatusNotFound, true)
	c := recoverCase{sub: b.subscribe(map[string]any{"name": "recover", "url": rc.URL}), rc: rc}
	publishEnded := func(id string) {
		b.publish(id, "t")
		eventually(b.t, id+" attempted", func() bool { return byEvent(rc)[id] == 1 })
		b.settle()
	}
	publishEnded("e0")
	b.clk.Advance(time.Minute)
	c.since = b.clk.Now()
	publishEnded("e1")
	publishEnded("e2")
	failing.Store(false)
	publishEnded("e3")
	failing.Store(true)
	publishEnded("e4")
	publishEnded("e5")
	b.clk.Advance(time.Minute)
	c.until = b.clk.Now()
	publishEnded("e6")
	failing.Store(false)
	return c
}

// start posts the recover and returns its job as answered.
func (c recoverCase) start(b *bundle) jobRes {
	b.t.Helper()
	var j jobRes
	body := map[string]any{"since": c.since.Format(time.RFC3339Nano), "until": c.until.Format(time.RFC3339Nano)}
	if code, raw := b.do("POST", "/v1/subscriptions/"+c.sub+"/recover", body, &j); code != http.StatusAccepted ||
		j.Kind != "recover" || j.State != "running" || j.Total != len(inRange) {
		b.t.Fatalf("recover: %d %s", code, raw)
	}
	return j
}

// check checks that the job is done and that each event in the range was
// delivered once more (one refusal, one delivery) and the others not.
func (c recoverCase) check(b *bundle, id string) {
	b.t.Helper()
	var j jobRes
	eventually(b.t, "the job done", func() bool {
		b.do("GET", "/v1/jobs/"+id, nil, &j)
		return j.State == "done"
	})
	if j.Done != len(inRange) || j.Errors != 0 || j.Total != len(inRange) || j.FinishedAt == nil {
		b.t.Fatalf("job at its end: %+v", j)
	}
	eventually(b.t, "the recovered deliveries delivered", func() bool {
		n := 0
		for _, d := range b.deliveries(c.sub) {
			if d.Status == "delivered" {
				n++
			}
		}
		return n == len(inRange)+1
	})
	b.settle()
	want := map[string]int{"e0": 1, "e3": 1, "e6": 1}
	for _, id := range inRange {
		want[id] = 2
	}
	equalCounts(b.t, byEvent(c.rc), want)
	for _, d := range b.deliveries(c.sub) {
		if (d.EventID == "e0" || d.EventID == "e6") != (d.Status == "dead_lettered") {
			b.t.Fatalf("%s after the recover: %s", d.EventID, d.Status)
		}
	}
}

// byEvent counts the receiver's requests by event id.
func byEvent(rc *receiver) map[string]int {
	n := map[string]int{}
	for i := range rc.count() {
		var ev struct{ ID string }
		_ = json.Unmarshal(rc.request(i).body, &ev)
		n[ev.ID]++
	}
	return n
}

func equalCounts(t *testing.T, got, want map[string]int) {
	t.Helper()
	for id, n := range want {
		if got[id] != n {
			t.Fatalf("requests by event: %v; want %v", got, want)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("requests by event: %v; want %v", got, want)
	}
}

// TestRecoverFailedInRange: a recover makes exactly the dead letters of its
// time range due again, and the receiver, which now accepts, gets each once
// more; those before since and at until stay dead-lettered, the delivered
// one is not sent again.
func TestRecoverFailedInRange(t *testing.T) {
	b := setup(t)
	c := newRecoverCase(b)
	j := c.start(b)
	c.check(b, j.ID)
}

// TestRecoverResumesAfterRestart: the process stops after the job's first
// batch (its runner asleep for its pace: a batch of two, then an hour's
// pause on the fake clock); another process on the same store finishes it
// with no delivery sent twice. On PostgreSQL the second process starts
// beside the first, still pausing, and takes the job's next batches at
// once: a batch gives its job back, so no node holds a job between two.
func TestRecoverResumesAfterRestart(t *testing.T) {
	a := setup(t, func(c *server.Config) { c.RecoverBatch, c.RecoverPace = 2, time.Hour })
	c := newRecoverCase(a)
	j := c.start(a)
	var got jobRes
	eventually(t, "the first batch", func() bool {
		a.do("GET", "/v1/jobs/"+j.ID, nil, &got)
		return got.Done == 2
	})
	a.settle() // its deliveries sent; the runner sleeps its pace
	if a.do("GET", "/v1/jobs/"+j.ID, nil, &got); got.Done != 2 || got.State != "running" {
		t.Fatalf("after the first batch: %+v", got)
	}
	second := func(cfg *server.Config) {
		cfg.Store, cfg.DataDir, cfg.RecoverBatch = a.cfg.Store, a.cfg.DataDir, 2
		cfg.Clock = clock.NewFake(a.clk.Now())
	}
	closeA := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.srv.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var b *bundle
	if a.srv.Store.Capabilities().Shared {
		b = setup(t, second)
		eventually(t, "the job done by the second node", func() bool {
			b.do("GET", "/v1/jobs/"+j.ID, nil, &got)
			return got.State == "done"
		})
		if a.do("GET", "/v1/jobs/"+j.ID, nil, &got); got.State != "done" {
			t.Fatalf("the job as the first node reads it: %+v", got)
		}
	}
	closeA()
	if b == nil {
		b = setup(t, second)
	}
	c.check(b, j.ID)
}

// TestRecoverRefusesBadInput: each bad body is refused naming its field,
// and nothing changes; an unknown job is not found, another account's
// subscription and job are not found either.
func TestRecoverRefusesBadInput(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "r", "url": rc.URL})
	p := "/v1/subscriptions/" + sub + "/recover"
	refuseAll(t, b, []refusal{
		{name: "no since", method: "POST", path: p, body: `{}`, field: "since", detail: "required"},
		{name: "since not a time", method: "POST", path: p, body: `{"since": "yesterday"}`, field: "since", detail: "RFC 3339"},
		{name: "since a number", method: "POST", path: p, body: `{"since": 5}`, field: "since"},
		{name: "until not a time", method: "POST", path: p, body: `{"since": "2026-01-05T09:00:00Z", "until": "soon"}`, field: "until"},
		{name: "until before since", method: "POST", path: p, body: `{"since": "2026-01-05T09:00:00Z", "until": "2026-01-05T08:00:00Z"}`, field: "until", detail: "after since"},
		{name: "until equal to since", method: "POST", path: p, body: `{"since": "2026-01-05T09:00:00Z", "until": "2026-01-05T09:00:00Z"}`, field: "until"},
		{name: "an unknown status", method: "POST", path: p, body: `{"since": "2026-01-05T09:00:00Z", "statuses": ["dead_lettered", "pending"]}`, field: "statuses[1]", detail: "dead_lettered, dropped or queued"},
		{name: "a status twice", method: "POST", path: p, body: `{"since": "2026-01-05T09:00:00Z", "statuses": ["queued", "queued"]}`, field: "statuses[1]", detail: "twice"},
		{name: "no status", method: "POST", path: p, body: `{"since": "2026-01-05T09:00:00Z", "statuses": []}`, field: "statuses"},
		{name: "an unknown field", method: "POST", path: p, body: `{"since": "2026-01-05T09:00:00Z", "from": "x"}`, field: "from"},
	})
	for path, method := range map[string]string{"/v1/subscriptions/sub_00000000000000000000000000/recover": "POST",
		"/v1/jobs/job_00000000000000000000000000": "GET", "/v1/jobs/" + sub: "GET"} {
		if code, raw := b.do(method, path, map[string]any{"since": "2026-01-05T09:00:00Z"}, nil); code != http.StatusNotFound {
			t.Fatalf("%s %s: %d %s; want 404", method, path, code, raw)
		}
	}
	var j jobRes
	if code, raw := b.do("POST", p, map[string]any{"since": "2026-01-05T09:00:00Z", "statuses": []string{"queued"}}, &j); code != http.StatusAccepted {
		t.Fatalf("recover of queued deliveries: %d %s", code, raw)
	}
	tn := newTenant(b, "other")
	if code, _ := b.doAs(tn.accountKey, "POST", p, map[string]any{"since": "2026-01-05T09:00:00Z"}, nil); code != http.StatusNotFound {
		t.Fatalf("another account's recover: %d; want 404", code)
	}
	if code, _ := b.doAs(tn.accountKey, "GET", "/v1/jobs/"+j.ID, nil, nil); code != http.StatusNotFound {
		t.Fatalf("another account's job: %d; want 404", code)
	}
}
