package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/source"
)

// The source pages' tests run on the store of testStore (SQLite, or
// PostgreSQL with HERALD_TEST_STORE=postgres). Their sources name brokers
// at 127.0.0.1:1, where nothing listens: each consumer runs and fails
// (its last error shown), and no test's broker is touched.

// Secrets of the tests' sources, which no page may show.
const (
	urlSecret  = "url-pw-5ecret"
	saslSecret = "sasl-pw-5ecret"
	saslSecond = "sasl-pw-second"
)

// deadURL is a NATS URL with a password where no broker listens.
const deadURL = "nats://alice:" + urlSecret + "@127.0.0.1:1"

// noSourceSecrets fails the test if the page shows a secret of the tests'
// sources.
func noSourceSecrets(t *testing.T, what string, p page) {
	t.Helper()
	for _, s := range []string{urlSecret, saslSecret, saslSecond} {
		if strings.Contains(p.body, s) {
			t.Fatalf("%s shows the secret %q:\n%s", what, s, p.body)
		}
	}
}

// newSourceAPI makes a source through the API and returns its answer.
func newSourceAPI(n *node, body map[string]any) map[string]any {
	n.t.Helper()
	return n.must(http.StatusCreated, adminKey, "POST", "/v1/sources", body)
}

// sourceAPI reads a source through the API.
func sourceAPI(n *node, id string) map[string]any {
	n.t.Helper()
	return n.must(http.StatusOK, adminKey, "GET", "/v1/sources/"+id, nil)
}

// sourceJSON is a source through the API as JSON (to compare), without
// what its consumer reports.
func sourceJSON(n *node, id string) string {
	n.t.Helper()
	s := sourceAPI(n, id)
	for _, k := range []string{"state", "lag", "last_error", "last_error_at", "counts"} {
		delete(s, k)
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// sourceCount is how many sources the API lists.
func sourceCount(n *node) int {
	n.t.Helper()
	return len(n.must(http.StatusOK, adminKey, "GET", "/v1/sources", nil)["data"].([]any))
}

// storedSource reads a source from the store, its secrets and all.
func storedSource(n *node, id string) source.Source {
	n.t.Helper()
	s, err := n.srv.Store.GetSource(context.Background(), id)
	if err != nil {
		n.t.Fatal(err)
	}
	return s
}

// TestSourcesList: the sources list is the admin's: empty, it says how to
// make one; it shows each source's name, type, what it reads, account,
// format, state, counts and last error, with a link to it, never a
// secret; an account key's session has no Sources in its navigation and
// gets the 404 page for every source page and action.
func TestSourcesList(t *testing.T) {
	n := setup(t)
	_, _, key := n.tenant("shop", "account")
	admin := signInAs(n, adminKey)
	p := n.get("/console/sources", admin.cookie)
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="no-sources"`) || !strings.Contains(p.body, "POST /v1/sources") ||
		!strings.Contains(p.body, `<a href="/console/sources" aria-current="page">Sources</a>`) {
		t.Fatalf("the empty list: %d\n%s", p.status, p.body)
	}
	nats := newSourceAPI(n, map[string]any{"name": "orders", "type": "nats", "url": deadURL, "subject": "orders.>",
		"format": "raw", "wrap": map[string]any{"type": "order.placed", "source": "/shop"}})["id"].(string)
	kafka := newSourceAPI(n, map[string]any{"name": "clicks", "type": "kafka", "brokers": []string{"127.0.0.1:1"}, "topic": "clicks",
		"sasl": map[string]any{"mechanism": "PLAIN", "username": "bob", "password": saslSecret}})["id"].(string)
	n.must(http.StatusOK, adminKey, "POST", "/v1/sources/"+kafka+"/pause", nil)
	eventually(t, "the NATS source failing", func() bool { return sourceAPI(n, nats)["state"] == "failing" })

	p = n.get("/console/sources", admin.cookie)
	noSourceSecrets(t, "the list", p)
	for id, want := range map[string][]string{
		nats:  {"orders", "nats", "subject orders.&gt;", "acc_default", "raw", `state-failing">failing`, `class="error">`},
		kafka: {"clicks", "kafka", "topic clicks", "cloudevents", `state-paused">paused`},
	} {
		row := regexp.MustCompile(`(?s)<tr id="source-` + id + `">.*?</tr>`).FindString(p.body)
		if !strings.Contains(row, `href="/console/sources/`+id+`"`) {
			t.Fatalf("the list has no row linking to %s:\n%s", id, p.body)
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Fatalf("%s's row lacks %q:\n%s", id, w, row)
			}
		}
	}

	shop := signInAs(n, key)
	if p := n.signedIn(shop.cookie); strings.Contains(p.body, `href="/console/sources"`) {
		t.Fatalf("an account key's navigation offers the sources:\n%s", p.body)
	}
	for _, path := range []string{"/console/sources", "/console/sources/new", "/console/sources/" + nats, "/console/sources/" + nats + "/edit",
		"/console/sources/" + nats + "/delete"} {
		if p := n.get(path, shop.cookie); p.status != http.StatusNotFound || strings.Contains(p.body, "orders.&gt;") {
			t.Fatalf("an account key's GET %s: %d\n%s", path, p.status, p.body)
		}
	}
	for _, path := range []string{"/console/sources/new", "/console/sources/" + nats + "/pause", "/console/sources/" + nats + "/delete",
		"/console/sources/" + nats + "/edit"} {
		if p := shop.post(path, map[string]string{"subject": "x", "type": "nats"}); p.status != http.StatusNotFound {
			t.Fatalf("an account key's POST %s: %d\n%s", path, p.status, p.body)
		}
	}
	if got := sourceAPI(n, nats); got["subject"] != "orders.>" || sourceCount(n) != 2 {
		t.Fatalf("after an account key's forms: %v, %d sources", got, sourceCount(n))
	}
}

// TestSourcePage: a source's page shows its settings with the URL's
// password and the SASL password masked as the API masks them, its state,
// lag, last error, counts and the node holding its lease; its dead letters
// with their reason, message id and the start of their body, escaped,
// fifty to a page.
func TestSourcePage(t *testing.T) {
	n := setup(t)
	admin := signInAs(n, adminKey)
	id := newSourceAPI(n, map[string]any{"name": "orders", "type": "nats", "url": deadURL, "subject": "orders.>", "stream": "ORDERS"})["id"].(string)
	eventually(t, "the source failing", func() bool { return sourceAPI(n, id)["state"] == "failing" })
	api := sourceAPI(n, id)
	ctx := context.Background()
	long := "<script>alert(1)</script>" + strings.Repeat("a", 600) + "TAIL-NOT-SHOWN"
	for i := range 51 {
		body := []byte(`{"n": ` + strings.Repeat("1", i+1) + `}`)
		if i == 50 {
			body = []byte(long)
		}
		if err := n.srv.Store.AddSourceDeadLetter(ctx, source.NewDeadLetter(id, "ORDERS-"+strings.Repeat("9", i+1), "not a CloudEvent", body,
			n.clk.Now().Add(time.Duration(i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}

	owner, _, err := n.srv.Store.SourceLeader(ctx, id, n.clk.Now())
	if err != nil || owner == "" {
		t.Fatalf("the source's lease: %q, %v; want this node's", owner, err)
	}
	p := n.get("/console/sources/"+id, admin.cookie)
	noSourceSecrets(t, "the source's page", p)
	for _, want := range []string{
		html.EscapeString(api["url"].(string)), "nats://alice:xxxxx@127.0.0.1:1", "<code>orders.&gt;</code>", "<code>ORDERS</code>",
		"<code>herald-" + id + "</code>", `id="state">failing`, `id="lag">unknown`, `id="dead-lettered">51`, `id="received">0`,
		html.EscapeString(api["last_error"].(string)), `id="leader">` + owner + "<", `id="pause"`, `href="/console/sources/` + id + `/delete"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("the source's page lacks %q:\n%s", want, p.body)
		}
	}
	rows := strings.Count(p.body, "<td>not a CloudEvent</td>")
	next := regexp.MustCompile(`href="(/console/sources/` + id + `\?cursor=[^"]+)" id="next-page"`).FindStringSubmatch(p.body)
	if rows != 50 || next == nil || !strings.Contains(p.body, "ORDERS-9<") {
		t.Fatalf("the first page of dead letters: %d rows, next %v", rows, next)
	}
	p = n.get(html.UnescapeString(next[1]), admin.cookie)
	if rows := strings.Count(p.body, "<td>not a CloudEvent</td>"); rows != 1 || strings.Contains(p.body, `id="next-page"`) {
		t.Fatalf("the second page of dead letters: %d rows\n%s", rows, p.body)
	}
	if !strings.Contains(p.body, "&lt;script&gt;alert(1)&lt;/script&gt;aaa") || strings.Contains(p.body, "<script>") ||
		strings.Contains(p.body, "TAIL-NOT-SHOWN") || !strings.Contains(p.body, "…</pre>") {
		t.Fatalf("the long dead letter's body is not shown escaped and cut:\n%s", p.body)
	}
	if p := n.get("/console/sources/src_00000000000000000000000000", admin.cookie); p.status != http.StatusNotFound {
		t.Fatalf("an unknown source's page: %d", p.status)
	}
}

// TestSourcePauseResumeDelete: the page's pause and resume forms pause
// and resume the source as the API's routes do (the API then says so),
// and say when nothing changed (paused, no node is named as consuming
// it); a form without the session's CSRF token
// changes nothing; delete asks first, then deletes it (the API then knows
// it no more) and the list says so.
func TestSourcePauseResumeDelete(t *testing.T) {
	n := setup(t)
	admin := signInAs(n, adminKey)
	id := newSourceAPI(n, map[string]any{"type": "amqp", "url": "amqp://guest:" + urlSecret + "@127.0.0.1:1/", "queue": "orders"})["id"].(string)
	at := "/console/sources/" + id

	if p := n.post(at+"/pause", admin.cookie, nil); p.status != http.StatusForbidden || sourceAPI(n, id)["state"] == "paused" {
		t.Fatalf("a pause without the CSRF token: %d, state %v", p.status, sourceAPI(n, id)["state"])
	}
	for _, step := range []struct{ action, done, state string }{
		{"pause", "paused", "paused"}, {"pause", "paused-unchanged", "paused"}, {"resume", "resumed", ""}, {"resume", "resumed-unchanged", ""},
	} {
		p := admin.post(at+"/"+step.action, nil)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != at+"?done="+step.done {
			t.Fatalf("%s: %d to %q; want 303 to ?done=%s", step.action, p.status, p.header.Get("Location"), step.done)
		}
		if got := sourceAPI(n, id)["state"]; step.state != "" && got != step.state || step.state == "" && got == "paused" {
			t.Fatalf("after %s (%s) the API's state is %v", step.action, step.done, got)
		}
		page := n.get(p.header.Get("Location"), admin.cookie)
		noSourceSecrets(t, "the source's page after "+step.action, page)
		if !strings.Contains(page.body, `id="message">`) || step.state == "paused" && (!strings.Contains(page.body, `id="resume"`) ||
			strings.Contains(page.body, `id="leader"`)) {
			t.Fatalf("the page after %s:\n%s", step.done, page.body)
		}
	}

	p := n.get(at+"/delete", admin.cookie)
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="confirm-delete"`) || sourceCount(n) != 1 {
		t.Fatalf("the delete confirmation: %d\n%s", p.status, p.body)
	}
	noSourceSecrets(t, "the delete confirmation", p)
	p = admin.post(at+"/delete", nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/sources?done=deleted" {
		t.Fatalf("delete: %d to %q", p.status, p.header.Get("Location"))
	}
	if status, _ := n.api(adminKey, "GET", "/v1/sources/"+id, nil); status != http.StatusNotFound {
		t.Fatalf("the API's GET of the deleted source: %d", status)
	}
	if p := n.get("/console/sources?done=deleted", admin.cookie); !strings.Contains(p.body, "Source deleted") {
		t.Fatalf("the list after the delete:\n%s", p.body)
	}
	if p := admin.post(at+"/delete", nil); p.status != http.StatusNotFound {
		t.Fatalf("deleting it again: %d", p.status)
	}
}
