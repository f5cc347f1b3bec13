package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
)

// The subscription actions' tests run on the store of testStore (SQLite,
// or PostgreSQL with HERALD_TEST_STORE=postgres) and check each action's
// effect through the API, as a client of Herald sees it.

// actor is a signed-in session and its CSRF token.
type actor struct {
	n      *node
	cookie *http.Cookie
	csrf   string
}

// signInAs signs in with key.
func signInAs(n *node, key string) actor {
	n.t.Helper()
	c := n.signIn(key)
	return actor{n: n, cookie: c, csrf: csrfOf(n.t, n.signedIn(c))}
}

// post POSTs the form's fields with the session's CSRF token.
func (a actor) post(path string, fields map[string]string) page {
	a.n.t.Helper()
	form := url.Values{"csrf": {a.csrf}}
	for k, v := range fields {
		form.Set(k, v)
	}
	return a.n.post(path, a.cookie, form)
}

// subOf reads a subscription through the API with key.
func subOf(n *node, key, id string) map[string]any {
	n.t.Helper()
	return n.must(http.StatusOK, key, "GET", "/v1/subscriptions/"+id, nil)
}

// subJSON is a subscription through the API with key, as JSON, to compare.
func subJSON(n *node, key, id string) string {
	b, _ := json.Marshal(subOf(n, key, id))
	return string(b)
}

// countOf is how many subscriptions the account of key holds.
func countOf(n *node, key string) int {
	n.t.Helper()
	return len(n.must(http.StatusOK, key, "GET", "/v1/subscriptions", nil)["data"].([]any))
}

var createdAt = regexp.MustCompile(`^/console/subscriptions/(sub_[0-9a-z]+)\?done=created$`)

// refused fails the test unless p is the form's page of status naming
// field (its problem, and its input marked).
func refused(t *testing.T, what string, p page, status int, field, input string) {
	t.Helper()
	if p.status != status || !strings.Contains(p.body, `id="problem"><code>`+field+`</code>:`) ||
		!regexp.MustCompile(`name="`+input+`"[^>]*aria-invalid="true"`).MatchString(p.body) {
		t.Fatalf("%s: %d; want %d naming %s on the form\n%s", what, p.status, status, field, p.body)
	}
}

// TestCreateFromTheForm: an account key's form makes a subscription as
// the API would (its fields, defaults for the others); a value Herald
// refuses is shown on the form naming the field, and nothing is made;
// another account's ID in the form is a 404.
func TestCreateFromTheForm(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	a := signInAs(n, ts.shopKey)
	if p := n.get("/console/subscriptions/new", a.cookie); p.status != http.StatusOK || !strings.Contains(p.body, `id="api-note"`) {
		t.Fatalf("the create form: %d\n%s", p.status, p.body)
	}
	p := a.post("/console/subscriptions/new", map[string]string{"name": "orders", "url": "http://127.0.0.1:9/hook",
		"event_types": "order.paid, order.shipped", "retry_policy": "workfront", "headers": "X-Team: payments\n\n",
		"dynamic_headers": "X-Tenant: data.tenant.id\n"})
	m := createdAt.FindStringSubmatch(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || m == nil {
		t.Fatalf("create: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	got := subOf(n, ts.shopKey, m[1])
	if got["name"] != "orders" || got["url"] != "http://127.0.0.1:9/hook" || got["delivery_mode"] != "push" ||
		strings.Join(toStrings(got["event_types"]), ",") != "order.paid,order.shipped" ||
		got["retry_policy"].(map[string]any)["preset"] != "workfront" || got["headers"].(map[string]any)["X-Team"] != "payments" ||
		got["dynamic_headers"].(map[string]any)["X-Tenant"] != "data.tenant.id" || got["timeout"] != "30s" || got["dead_letter"] != true {
		t.Fatalf("the subscription made: %v", got)
	}
	if page := n.get(p.header.Get("Location"), a.cookie); !strings.Contains(page.body, `id="message">Created.`) ||
		!strings.Contains(page.body, `<dt>Dynamic headers</dt><dd id="dynamic-headers"><code>X-Tenant: data.tenant.id</code>`) {
		t.Fatalf("the subscription's page after create:\n%s", page.body)
	}
	for _, c := range []struct {
		what         string
		fields       map[string]string
		status       int
		field, input string
	}{
		{"a URL that is not http", map[string]string{"name": "x", "url": "ftp://example.com/"}, 400, "url", "url"},
		{"no URL", map[string]string{"name": "x"}, 400, "url", "url"},
		{"an unknown preset", map[string]string{"name": "x", "url": "https://example.com/", "retry_policy": "nope"}, 400, "retry_policy.preset", "retry_policy"},
		{"a header line without a colon", map[string]string{"name": "x", "url": "https://example.com/", "headers": "X-Team payments"}, 400, "headers", "headers"},
		{"a dynamic header's bad key", map[string]string{"name": "x", "url": "https://example.com/", "dynamic_headers": "X-T: data..id"}, 400, "dynamic_headers.X-T", "dynamic_headers"},
		{"a name in use", map[string]string{"name": "orders", "url": "https://example.com/"}, 409, "name", "name"},
		{"a pull subscription with a URL", map[string]string{"name": "x", "delivery_mode": "pull", "url": "https://example.com/"}, 400, "url", "url"},
		{"an unknown mode", map[string]string{"name": "x", "delivery_mode": "carrier-pigeon"}, 400, "delivery_mode", "delivery_mode"},
	} {
		p := a.post("/console/subscriptions/new", c.fields)
		refused(t, c.what, p, c.status, c.field, c.input)
		if !strings.Contains(p.body, "Nothing was made") || !strings.Contains(p.body, html.EscapeString(c.fields["name"])) {
			t.Fatalf("%s: the form does not keep what was typed or say nothing was made\n%s", c.what, p.body)
		}
	}
	if got := countOf(n, ts.shopKey); got != 1 {
		t.Fatalf("the shop holds %d subscriptions after the refused forms; want 1", got)
	}
	if p := a.post("/console/subscriptions/new", map[string]string{"account_id": ts.rival, "name": "x", "url": "https://example.com/"}); p.status != http.StatusNotFound {
		t.Fatalf("the shop key creating in the rival's account: %d; want 404", p.status)
	}
	if countOf(n, ts.rivalKey) != 0 {
		t.Fatal("the shop key made a subscription in the rival's account")
	}
	admin := signInAs(n, adminKey)
	p = admin.post("/console/subscriptions/new", map[string]string{"account_id": ts.rival, "name": "queue", "delivery_mode": "pull"})
	if p.status != http.StatusSeeOther || countOf(n, ts.rivalKey) != 1 {
		t.Fatalf("the admin creating a pull subscription in the rival's account: %d\n%s", p.status, p.body)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestEditFromTheForm: the edit form changes what was changed in it, and
// leaves the fields it does not show (set through the API) and the URL's
// hidden password as they are; a value Herald refuses is shown on the form
// naming the field, and nothing changes.
func TestEditFromTheForm(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	id := n.must(http.StatusCreated, ts.shopKey, "POST", "/v1/subscriptions", map[string]any{"name": "orders",
		"url": "https://user:hunter2@shop.example/hook", "subject_begins_with": "/orders", "timeout": "5s",
		"retry_policy": map[string]any{"preset": "eventgrid", "max_attempts": 5}})["id"].(string)
	a := signInAs(n, ts.shopKey)
	form := n.get("/console/subscriptions/"+id+"/edit", a.cookie)
	if form.status != http.StatusOK || !strings.Contains(form.body, `value="https://user:xxxxx@shop.example/hook"`) ||
		strings.Contains(form.body, "hunter2") || !strings.Contains(form.body, `<option value="" selected>as it is`) {
		t.Fatalf("the edit form: %d\n%s", form.status, form.body)
	}
	p := a.post("/console/subscriptions/"+id+"/edit", map[string]string{"name": "orders-2",
		"url": "https://user:xxxxx@shop.example/hook", "event_types": "order.paid", "headers": "X-A: 1"})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/subscriptions/"+id+"?done=saved" {
		t.Fatalf("edit: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	got := subOf(n, ts.shopKey, id)
	if got["name"] != "orders-2" || got["url"] != "https://user:xxxxx@shop.example/hook" || got["subject_begins_with"] != "/orders" ||
		got["timeout"] != "5s" || got["retry_policy"].(map[string]any)["max_attempts"] != float64(5) ||
		toStrings(got["event_types"])[0] != "order.paid" || got["headers"].(map[string]any)["X-A"] != "1" {
		t.Fatalf("after the edit: %v", got)
	}
	stored, err := n.srv.Store.GetSubscription(context.Background(), id)
	if err != nil || stored.URL != "https://user:hunter2@shop.example/hook" {
		t.Fatalf("the stored URL after an edit that kept it: %q, %v", stored.URL, err)
	}
	p = a.post("/console/subscriptions/"+id+"/edit", map[string]string{"name": "orders-2", "url": "http://127.0.0.1:9/new"})
	if p.status != http.StatusSeeOther || subOf(n, ts.shopKey, id)["url"] != "http://127.0.0.1:9/new" {
		t.Fatalf("editing the URL: %d, %v", p.status, subOf(n, ts.shopKey, id)["url"])
	}
	before := subJSON(n, ts.shopKey, id)
	n.clk.Advance(time.Second)
	for _, c := range []struct {
		what         string
		fields       map[string]string
		field, input string
	}{
		{"an empty name", map[string]string{"name": "", "url": "http://127.0.0.1:9/new"}, "name", "name"},
		{"a URL that is not http", map[string]string{"name": "orders-2", "url": "mailto:x@example.com"}, "url", "url"},
		{"an unknown preset", map[string]string{"name": "orders-2", "url": "http://127.0.0.1:9/new", "retry_policy": "nope"}, "retry_policy.preset", "retry_policy"},
	} {
		refused(t, c.what, a.post("/console/subscriptions/"+id+"/edit", c.fields), http.StatusBadRequest, c.field, c.input)
		if after := subJSON(n, ts.shopKey, id); after != before {
			t.Fatalf("%s changed the subscription:\n%s\n%s", c.what, before, after)
		}
	}
}

// TestDeleteWithConfirmation: Delete asks first; the confirmation's form
// deletes the subscription (its pending deliveries dropped) and goes back
// to the list.
func TestDeleteWithConfirmation(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	id := n.subscribe(ts.shopKey, "orders", "https://shop.example/hook")
	a := signInAs(n, ts.shopKey)
	p := n.get("/console/subscriptions/"+id+"/delete", a.cookie)
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="confirm-delete"`) || !strings.Contains(p.body, "SubscriptionDeleted") {
		t.Fatalf("the confirmation: %d\n%s", p.status, p.body)
	}
	subOf(n, ts.shopKey, id) // the GET deleted nothing
	p = a.post("/console/subscriptions/"+id+"/delete", nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/subscriptions" {
		t.Fatalf("delete: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	n.must(http.StatusNotFound, ts.shopKey, "GET", "/v1/subscriptions/"+id, nil)
	if p := a.post("/console/subscriptions/"+id+"/delete", nil); p.status != http.StatusNotFound {
		t.Fatalf("deleting it again: %d; want 404", p.status)
	}
}

// TestRotateAndReactivateFromThePage: Rotate secret gives a new secret,
// shown once on the answer and by the API, the old one signing for the
// grace asked; a grace out of range is a 400 naming it, and nothing
// changes. Reactivate makes a deactivated subscription active; a pull
// subscription is a 409 page.
func TestRotateAndReactivateFromThePage(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	id := n.subscribe(ts.shopKey, "orders", "https://shop.example/hook")
	old := n.must(http.StatusOK, ts.shopKey, "GET", "/v1/subscriptions/"+id+"/secret", nil)["secret"].(string)
	a := signInAs(n, ts.shopKey)
	if p := a.post("/console/subscriptions/"+id+"/rotate", map[string]string{"grace": "9d"}); p.status != http.StatusBadRequest ||
		!strings.Contains(p.body, "grace:") {
		t.Fatalf("a grace of 9d: %d\n%s", p.status, p.body)
	}
	if s := n.must(http.StatusOK, ts.shopKey, "GET", "/v1/subscriptions/"+id+"/secret", nil); s["secret"] != old {
		t.Fatal("a refused rotation changed the secret")
	}
	p := a.post("/console/subscriptions/"+id+"/rotate", map[string]string{"grace": "1h"})
	s := n.must(http.StatusOK, ts.shopKey, "GET", "/v1/subscriptions/"+id+"/secret", nil)
	prev := s["previous"].([]any)
	if p.status != http.StatusOK || s["secret"] == old || !strings.Contains(html.UnescapeString(p.body), `id="new-secret">`+s["secret"].(string)+"<") ||
		len(prev) != 1 || prev[0].(map[string]any)["secret"] != old || prev[0].(map[string]any)["expires_at"] != "2026-01-05T10:00:00.000Z" {
		t.Fatalf("rotate: %d, the API's secret %v\n%s", p.status, s, p.body)
	}

	// With failure policy queue, the receiver's first failure deactivates
	// the subscription and queues the delivery.
	rc := newReceiver(t)
	queuing := n.must(http.StatusCreated, ts.shopKey, "POST", "/v1/subscriptions",
		map[string]any{"name": "queuing", "url": rc.URL + "/dead", "failure_policy": "queue"})["id"].(string)
	n.publish(ts.shopKey, "evt-1")
	eventually(t, "the subscription deactivated", func() bool { return subOf(n, ts.shopKey, queuing)["state"] == "deactivated" })
	rc.cure()
	id = queuing
	if page := n.get("/console/subscriptions/"+id, a.cookie); !strings.Contains(page.body, `id="reactivate"`) {
		t.Fatalf("a deactivated subscription's page has no Reactivate:\n%s", page.body)
	}
	p = a.post("/console/subscriptions/"+id+"/reactivate", nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/subscriptions/"+id+"?done=reactivated" || subOf(n, ts.shopKey, id)["state"] != "active" {
		t.Fatalf("reactivate: %d to %q, state %v", p.status, p.header.Get("Location"), subOf(n, ts.shopKey, id)["state"])
	}
	eventually(t, "the queued delivery pushed", func() bool {
		ds := n.deliveriesOf(id)
		return len(ds) == 1 && ds[0].Status == delivery.StatusDelivered
	})
	pull := n.pullSubscription(ts.shopKey)
	if p := a.post("/console/subscriptions/"+pull+"/reactivate", nil); p.status != http.StatusConflict {
		t.Fatalf("reactivating a pull subscription: %d; want 409\n%s", p.status, p.body)
	}
}

// TestFilterTestFromThePage: the filter test says whether the subscription
// takes the event pasted, and which rule refused it; an event Herald
// cannot read is a 400 naming its field.
func TestFilterTestFromThePage(t *testing.T) {
	n := setup(t)
	id := n.must(http.StatusCreated, adminKey, "POST", "/v1/subscriptions", map[string]any{"name": "orders",
		"url": "https://shop.example/hook", "event_types": []string{"order.paid"},
		"advanced_filters": []any{map[string]any{"operator_type": "NumberGreaterThan", "key": "data.total", "value": 100}}})["id"].(string)
	a := signInAs(n, adminKey)
	if p := n.get("/console/subscriptions/"+id+"/filter-test", a.cookie); p.status != http.StatusOK || !strings.Contains(p.body, `id="event"`) {
		t.Fatalf("the filter test's form: %d\n%s", p.status, p.body)
	}
	ev := func(typ string, total int) string {
		return `{"specversion":"1.0","id":"e1","source":"/shop","type":"` + typ + `","data":{"total":` + itoa(total) + `}}`
	}
	for _, c := range []struct {
		event, want string
	}{
		{ev("order.paid", 150), `id="verdict">Matches`},
		{ev("order.shipped", 150), `id="verdict">Does not match: its type &#34;order.shipped&#34; is not in event_types`},
		{ev("order.paid", 50), `(advanced filter 0)`},
	} {
		if p := a.post("/console/subscriptions/"+id+"/filter-test", map[string]string{"event": c.event}); p.status != http.StatusOK || !strings.Contains(p.body, c.want) {
			t.Fatalf("the filter test of %s: %d; want %q\n%s", c.event, p.status, c.want, p.body)
		}
	}
	p := a.post("/console/subscriptions/"+id+"/filter-test", map[string]string{"event": `{"specversion":"1.0","id":"e1","source":"/shop"}`})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="problem"><code>type</code>`) {
		t.Fatalf("an event without a type: %d\n%s", p.status, p.body)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestSendTestEventFromThePage: Send a test event publishes one to the
// subscription alone, which the receiver gets, and goes to its delivery's
// page; a type Herald refuses is a 400 naming it, and nothing is sent.
func TestSendTestEventFromThePage(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	id := n.subscribe(adminKey, "orders", rc.URL+"/ok")
	other := n.subscribe(adminKey, "other", rc.URL+"/other")
	a := signInAs(n, adminKey)
	if p := a.post("/console/subscriptions/"+id+"/test", map[string]string{"type": "order\x01paid"}); p.status != http.StatusBadRequest || !strings.Contains(p.body, "type:") {
		t.Fatalf("a type with a control character: %d\n%s", p.status, p.body)
	}
	if ds := n.deliveriesOf(id); len(ds) != 0 {
		t.Fatalf("a refused test event made deliveries: %v", ds)
	}
	p := a.post("/console/subscriptions/"+id+"/test", nil)
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/deliveries/dlv_") {
		t.Fatalf("send a test event: %d to %q\n%s", p.status, loc, p.body)
	}
	dlv := strings.TrimPrefix(loc, "/console/deliveries/")
	eventually(t, "the test event delivered", func() bool { return n.delivery(dlv).Status == delivery.StatusDelivered })
	if d := n.delivery(dlv); d.SubscriptionID != id || len(n.deliveriesOf(other)) != 0 {
		t.Fatalf("the test event's delivery %+v; another subscription got %d", d, len(n.deliveriesOf(other)))
	}
}

// TestActionsNeedCSRF: every action's form without the session's CSRF
// token, or with another session's, is a 403, and nothing changes.
func TestActionsNeedCSRF(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	id := n.subscribe(adminKey, "orders", rc.URL+"/ok")
	a := signInAs(n, adminKey)
	other := signInAs(n, adminKey)
	before := subJSON(n, adminKey, id)
	fields := url.Values{"name": {"changed"}, "url": {rc.URL + "/changed"}, "grace": {"1h"}, "event": {`{}`}}
	for _, path := range []string{"/console/subscriptions/new", "/console/subscriptions/" + id + "/edit",
		"/console/subscriptions/" + id + "/delete", "/console/subscriptions/" + id + "/reactivate",
		"/console/subscriptions/" + id + "/rotate", "/console/subscriptions/" + id + "/filter-test",
		"/console/subscriptions/" + id + "/test", "/console/subscriptions/" + id + "/recover"} {
		for _, token := range []string{"", other.csrf} {
			form := url.Values{}
			for k, v := range fields {
				form[k] = v
			}
			if token != "" {
				form.Set("csrf", token)
			}
			if p := n.post(path, a.cookie, form); p.status != http.StatusForbidden {
				t.Fatalf("POST %s with CSRF %q: %d; want 403", path, token, p.status)
			}
		}
	}
	if after := subJSON(n, adminKey, id); after != before || countOf(n, adminKey) != 1 || len(n.deliveriesOf(id)) != 0 {
		t.Fatalf("a refused form changed something:\n%s\n%s", before, after)
	}
}

// TestActionsOnAnotherAccount: an account key's session gets the 404
// page for every action on another account's subscription, and nothing
// changes.
func TestActionsOnAnotherAccount(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	rc := newReceiver(t)
	id := n.subscribe(ts.rivalKey, rivalName, rc.URL+"/ok")
	before := subJSON(n, ts.rivalKey, id)
	a := signInAs(n, ts.shopKey)
	for _, path := range []string{"/edit", "/delete", "/filter-test"} {
		if p := n.get("/console/subscriptions/"+id+path, a.cookie); p.status != http.StatusNotFound || strings.Contains(p.body, rivalName) {
			t.Fatalf("GET %s of the rival's: %d\n%s", path, p.status, p.body)
		}
	}
	for _, path := range []string{"/edit", "/delete", "/reactivate", "/rotate", "/filter-test", "/test", "/recover"} {
		p := a.post("/console/subscriptions/"+id+path, map[string]string{"name": "mine", "url": rc.URL + "/mine", "event": `{}`, "since": "2000-01-01T00:00:00Z"})
		if p.status != http.StatusNotFound || strings.Contains(p.body, rivalName) {
			t.Fatalf("POST %s of the rival's: %d\n%s", path, p.status, p.body)
		}
	}
	if after := subJSON(n, ts.rivalKey, id); after != before || len(n.deliveriesOf(id)) != 0 {
		t.Fatalf("the shop key's forms changed the rival's subscription:\n%s\n%s", before, after)
	}
}
