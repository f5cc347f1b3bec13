package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/server"
)

var jobAt = regexp.MustCompile(`^/console/jobs/(job_[0-9a-z]+)$`)

// TestRecoverFromThePage: the subscription page's Recover form starts a
// recover as the API does; its job's page shows the progress to the end,
// and the dead letters are delivered to the receiver, now cured; a since
// that is not a time is a 400 page naming it, and nothing starts; another
// account's job is not found.
func TestRecoverFromThePage(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	rc := newReceiver(t)
	sub := n.subscribe(ts.shopKey, "orders", rc.URL+"/dead")
	dead := n.deadLetters(ts.shopKey, sub, "evt-1", "evt-2")
	rc.cure()
	a := signInAs(n, ts.shopKey)
	if page := n.get("/console/subscriptions/"+sub, a.cookie); !strings.Contains(page.body, `id="recover-form"`) {
		t.Fatalf("the subscription's page has no Recover form:\n%s", page.body)
	}
	p := a.post("/console/subscriptions/"+sub+"/recover", map[string]string{"since": "yesterday"})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "since must be an RFC 3339 time") {
		t.Fatalf("a since that is not a time: %d\n%s", p.status, p.body)
	}
	p = a.post("/console/subscriptions/"+sub+"/recover", map[string]string{"since": "2000-01-01T00:00:00Z"})
	m := jobAt.FindStringSubmatch(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || m == nil {
		t.Fatalf("recover: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	eventually(t, "the job's page shows it done", func() bool {
		page := n.get("/console/jobs/"+m[1], a.cookie)
		return page.status == http.StatusOK && strings.Contains(page.body, `id="job-state">done<`) &&
			strings.Contains(page.body, `id="progress">2 of 2 made due again<`)
	})
	for _, id := range dead {
		eventually(t, "a recovered delivery delivered", func() bool { return n.delivery(id).Status == delivery.StatusDelivered })
	}
	if page := n.get("/console/jobs/"+m[1], signInAs(n, ts.rivalKey).cookie); page.status != http.StatusNotFound {
		t.Fatalf("another account's job: %d", page.status)
	}
}

var portalJobAt = regexp.MustCompile(`^/portal/jobs/(job_[0-9a-z]+)$`)

// TestPortalRecover: the portal's subscription page has the Recover form
// (CSRF checked); it starts a recover whose job's page shows it to its end,
// and the dead letters are delivered; a session scoped to another
// subscription sees neither the form's action nor the job.
func TestPortalRecover(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	rc := newReceiver(t)
	sub := n.subscribe(ts.shopKey, "orders", rc.URL+"/dead")
	other := n.subscribe(ts.shopKey, "other", rc.URL+"/ok")
	dead := n.deadLetters(ts.shopKey, sub, "evt-1")
	rc.cure()
	ck := openPortal(n, portalLink(n, ts.shopKey, map[string]any{"subscription_ids": []string{sub}}))
	page := n.get("/portal/subscriptions/"+sub, ck)
	if !strings.Contains(page.body, `id="recover-form"`) {
		t.Fatalf("the portal's subscription page has no Recover form:\n%s", page.body)
	}
	csrf := csrfOf(t, page)
	if p := n.post("/portal/subscriptions/"+sub+"/recover", ck, url.Values{"since": {"2000-01-01T00:00:00Z"}}); p.status != http.StatusForbidden {
		t.Fatalf("a recover without CSRF: %d", p.status)
	}
	if p := n.post("/portal/subscriptions/"+sub+"/recover", ck, url.Values{"csrf": {csrf}, "since": {"2000-01-01T00:00:00Z"}, "until": {"1999-01-01T00:00:00Z"}}); p.status != http.StatusBadRequest || !strings.Contains(p.body, "until must be after since") {
		t.Fatalf("until before since: %d\n%s", p.status, p.body)
	}
	if n.delivery(dead[0]).Status != delivery.StatusDeadLettered {
		t.Fatal("a refused recover changed the dead letter")
	}
	p := n.post("/portal/subscriptions/"+sub+"/recover", ck, url.Values{"csrf": {csrf}, "since": {"2000-01-01T00:00:00Z"}})
	m := portalJobAt.FindStringSubmatch(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || m == nil {
		t.Fatalf("recover: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	eventually(t, "the job's page shows it done", func() bool {
		page := n.get("/portal/jobs/"+m[1], ck)
		return page.status == http.StatusOK && strings.Contains(page.body, `id="progress">1 of 1 made due again<`)
	})
	eventually(t, "the recovered delivery delivered", func() bool { return n.delivery(dead[0]).Status == delivery.StatusDelivered })
	scoped := openPortal(n, portalLink(n, ts.shopKey, map[string]any{"subscription_ids": []string{other}}))
	if page := n.get("/portal/jobs/"+m[1], scoped); page.status != http.StatusNotFound {
		t.Fatalf("another scope's job: %d", page.status)
	}
}

// TestRecoverJobLimitPages: with --max-jobs-per-account 1 and a job
// running (the job runner stopped, so it stays so), the console's Recover
// form and the portal's answer a 429 page with Retry-After naming the
// limit and the flag, and start nothing (the job's API answer would be a
// Location; the page is the error page).
func TestRecoverJobLimitPages(t *testing.T) {
	dir, storeURL := testStore(t)
	n := newNode(t, dir, storeURL, clock.NewFake(start), false, func(s *server.Server) { s.Control.MaxJobsPerAccount = 1 })
	n.srv.Jobs.Stop()
	ts := twoTenants(n)
	sub := n.subscribe(ts.shopKey, "orders", newReceiver(t).URL)
	a := signInAs(n, ts.shopKey)
	form := map[string]string{"since": "2000-01-01T00:00:00Z"}
	if p := a.post("/console/subscriptions/"+sub+"/recover", form); p.status != http.StatusSeeOther || jobAt.FindStringSubmatch(p.header.Get("Location")) == nil {
		t.Fatalf("the first recover: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	limited := func(what string, p page) {
		t.Helper()
		if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != "5" || p.header.Get("Location") != "" ||
			!strings.Contains(p.body, "1 jobs running or waiting") || !strings.Contains(p.body, "--max-jobs-per-account") {
			t.Fatalf("%s past the limit: %d, Retry-After %q, Location %q\n%s", what, p.status, p.header.Get("Retry-After"), p.header.Get("Location"), p.body)
		}
	}
	limited("the console's recover", a.post("/console/subscriptions/"+sub+"/recover", form))
	ck := openPortal(n, portalLink(n, ts.shopKey, map[string]any{"subscription_ids": []string{sub}}))
	csrf := csrfOf(t, n.get("/portal/subscriptions/"+sub, ck))
	limited("the portal's recover", n.post("/portal/subscriptions/"+sub+"/recover", ck, url.Values{"csrf": {csrf}, "since": {"2000-01-01T00:00:00Z"}}))
}
