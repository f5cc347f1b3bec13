package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/delivery"
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
