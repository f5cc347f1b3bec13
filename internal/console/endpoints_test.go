package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/health"
)

// endpointOf returns the endpoint the account of key pushes to (its only
// one) through the API.
func endpointOf(n *node, key string) map[string]any {
	n.t.Helper()
	eps := n.must(http.StatusOK, key, "GET", "/v1/endpoints", nil)["data"].([]any)
	if len(eps) != 1 {
		n.t.Fatalf("the account's endpoints: %v; want one", eps)
	}
	return eps[0].(map[string]any)
}

// storedState is the endpoint's state in the store (enabled for one
// whose circuit never changed, as the API shows it).
func storedState(n *node, id string) health.State {
	n.t.Helper()
	ep, err := n.srv.Store.GetEndpoint(context.Background(), id)
	if err != nil {
		n.t.Fatal(err)
	}
	if ep.Health.State == "" {
		return health.Enabled
	}
	return ep.Health.State
}

// TestEndpointPages: the list and an endpoint's page show what the API's
// endpoint resource shows (URL without its password, state, the window's
// counts after a failed attempt, state_reason); Freeze and Enable change
// the circuit as the API's routes do, in the store, and the page says so
// (a second Freeze, or an Enable of an enabled endpoint, as from a page
// left open, says nothing changed);
// a form without the CSRF token is refused and changes nothing.
func TestEndpointPages(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	_, _, key := n.tenant("shop", "account")
	hook := strings.Replace(rc.URL, "http://", "http://user:hunter2@", 1) + "/flaky"
	sub := n.subscribe(key, "orders", hook)
	n.must(http.StatusAccepted, key, "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "evt-1", "source": "/shop", "type": "order.paid"})
	eventually(t, "a failed attempt", func() bool {
		ds := n.deliveriesOf(sub)
		return len(ds) == 1 && ds[0].Attempts == 1
	})
	eventually(t, "the failure counted", func() bool { return endpointOf(n, key)["window_failures"] == float64(1) })
	ep := endpointOf(n, key)
	id := ep["id"].(string)
	a := signInAs(n, key)

	list := n.get("/console/endpoints", a.cookie)
	counts := fmt.Sprintf("%v / %v", ep["window_attempts"], ep["window_failures"])
	if list.status != http.StatusOK || !strings.Contains(list.body, html.EscapeString(ep["url"].(string))) ||
		strings.Contains(list.body, "hunter2") || !strings.Contains(list.body, counts) || !strings.Contains(list.body, "100.0%") {
		t.Fatalf("the endpoints list: %d; want its URL %s without the password and %s failed\n%s", list.status, ep["url"], counts, list.body)
	}

	refusedCSRF := n.post("/console/endpoints/"+id+"/freeze", a.cookie, url.Values{"csrf": {"not-the-token"}})
	if refusedCSRF.status != http.StatusForbidden || storedState(n, id) != health.Enabled {
		t.Fatalf("a freeze without the CSRF token: %d, the endpoint %s; want 403, enabled", refusedCSRF.status, storedState(n, id))
	}

	for _, step := range []struct{ action, state, done, query string }{
		{"freeze", "frozen", "Frozen:", "frozen"}, {"freeze", "frozen", "Nothing changed: it was frozen already.", "frozen-unchanged"},
		{"enable", "enabled", "Enabled:", "enabled"}, {"enable", "enabled", "Nothing changed: it was enabled already", "enabled-unchanged"},
	} {
		p := a.post("/console/endpoints/"+id+"/"+step.action, nil)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/endpoints/"+id+"?done="+step.query {
			t.Fatalf("%s: %d to %q\n%s", step.action, p.status, p.header.Get("Location"), p.body)
		}
		if got := storedState(n, id); string(got) != step.state {
			t.Fatalf("after %s the store holds the endpoint %s; want %s", step.action, got, step.state)
		}
		api := n.must(http.StatusOK, key, "GET", "/v1/endpoints/"+id, nil)
		page := n.get(p.header.Get("Location"), a.cookie)
		if api["state"] != step.state || !strings.Contains(page.body, `id="state">`+step.state+`<`) ||
			!strings.Contains(page.body, step.done) {
			t.Fatalf("after %s the API shows %v; the page:\n%s", step.action, api["state"], page.body)
		}
		if reason, _ := api["state_reason"].(string); reason == "" || !strings.Contains(page.body, html.EscapeString(reason)) {
			t.Fatalf("after %s the page does not show the API's state_reason %q:\n%s", step.action, reason, page.body)
		}
	}
}

// storedVersion is the endpoint's version in the store: a write moves it.
func storedVersion(n *node, id string) int64 {
	n.t.Helper()
	ep, err := n.srv.Store.GetEndpoint(context.Background(), id)
	if err != nil {
		n.t.Fatal(err)
	}
	return ep.Version
}

// TestEndpointOfAnotherAccount: an account key's session gets the 404 page
// for another account's endpoint, and its forms change nothing there; its
// list holds its own endpoints only. An admin sees both.
func TestEndpointOfAnotherAccount(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	rival := endpointOf(n, ts.rivalKey)["id"].(string)
	a := signInAs(n, ts.shopKey)
	if p := n.get("/console/endpoints/"+rival, a.cookie); p.status != http.StatusNotFound || strings.Contains(p.body, rivalURL) {
		t.Fatalf("another account's endpoint: %d; want 404 showing nothing of it\n%s", p.status, p.body)
	}
	if p := a.post("/console/endpoints/"+rival+"/freeze", nil); p.status != http.StatusNotFound || storedState(n, rival) != health.Enabled {
		t.Fatalf("freezing another account's endpoint: %d, now %s; want 404, enabled", p.status, storedState(n, rival))
	}
	if p := n.get("/console/endpoints", a.cookie); p.status != http.StatusOK || strings.Contains(p.body, rivalURL) ||
		!strings.Contains(p.body, "shop.example/2") {
		t.Fatalf("the shop key's endpoints list: %d\n%s", p.status, p.body)
	}
	admin := signInAs(n, adminKey)
	if p := n.get("/console/endpoints/"+rival, admin.cookie); p.status != http.StatusOK || !strings.Contains(p.body, rivalURL) {
		t.Fatalf("the admin's view of the rival's endpoint: %d\n%s", p.status, p.body)
	}
}

// storedRateLimit is the endpoint's rate limit in the store ("none").
func storedRateLimit(n *node, id string) string {
	n.t.Helper()
	ep, err := n.srv.Store.GetEndpoint(context.Background(), id)
	if err != nil {
		n.t.Fatal(err)
	}
	if ep.RateLimit == nil {
		return "none"
	}
	return fmt.Sprintf("%v/%d", ep.RateLimit.PerSecond, ep.RateLimit.Burst)
}

// TestEndpointRateLimitForm: the endpoint's page sets the rate limit as
// the API's PATCH does (in the store, shown on the page, the list and the
// API's resource) and removes it; a bad value shows the page again (400)
// naming the field as the API does, and changes nothing; a form without
// the CSRF token is refused. Setting the rate limit it has, or removing
// one it does not have, writes nothing (the endpoint's version stays) and
// the page says nothing changed, not "Rate limit set" or "removed".
func TestEndpointRateLimitForm(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	_, _, key := n.tenant("shop", "account")
	n.subscribe(key, "orders", rc.URL+"/limited")
	id := endpointOf(n, key)["id"].(string)
	a := signInAs(n, key)
	form := "/console/endpoints/" + id + "/rate-limit"

	if p := n.post(form, a.cookie, url.Values{"csrf": {"not-the-token"}, "per_second": {"5"}, "burst": {"10"}}); p.status != http.StatusForbidden || storedRateLimit(n, id) != "none" {
		t.Fatalf("a rate limit without the CSRF token: %d, stored %s; want 403, none", p.status, storedRateLimit(n, id))
	}
	p := a.post(form, map[string]string{"per_second": "2.5", "burst": "10"})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/endpoints/"+id+"?done=rate-limited" || storedRateLimit(n, id) != "2.5/10" {
		t.Fatalf("set: %d to %q, stored %s\n%s", p.status, p.header.Get("Location"), storedRateLimit(n, id), p.body)
	}
	page := n.get(p.header.Get("Location"), a.cookie)
	api := n.must(http.StatusOK, key, "GET", "/v1/endpoints/"+id, nil)
	if rl, _ := api["rate_limit"].(map[string]any); rl["per_second"] != 2.5 || rl["burst"] != float64(10) ||
		!strings.Contains(page.body, `id="rate-limit">2.5 a second, burst 10<`) || !strings.Contains(page.body, "Rate limit set") {
		t.Fatalf("after setting it the API shows %v; the page:\n%s", api["rate_limit"], page.body)
	}
	if list := n.get("/console/endpoints", a.cookie); !strings.Contains(list.body, "2.5/s, burst 10") {
		t.Fatalf("the list does not show the rate limit:\n%s", list.body)
	}
	version := storedVersion(n, id)
	p = a.post(form, map[string]string{"per_second": "2.5", "burst": "10"})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/endpoints/"+id+"?done=rate-limited-unchanged" ||
		storedVersion(n, id) != version {
		t.Fatalf("set as it was: %d to %q, version %d (was %d); want nothing written", p.status, p.header.Get("Location"), storedVersion(n, id), version)
	}
	if page := n.get(p.header.Get("Location"), a.cookie); !strings.Contains(page.body, "Nothing changed") || strings.Contains(page.body, "Rate limit set") {
		t.Fatalf("after setting the rate limit it had the page:\n%s", page.body)
	}
	for _, c := range []struct{ perSecond, burst, field string }{
		{"0", "10", "rate_limit.per_second"}, {"20000", "10", "rate_limit.per_second"}, {"fast", "10", "rate_limit.per_second"},
		{"5", "0", "rate_limit.burst"}, {"5", "1.5", "rate_limit.burst"},
	} {
		p := a.post(form, map[string]string{"per_second": c.perSecond, "burst": c.burst})
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="problem"><code>`+c.field+`</code>`) ||
			!strings.Contains(p.body, `value="`+html.EscapeString(c.perSecond)+`"`) || storedRateLimit(n, id) != "2.5/10" {
			t.Fatalf("per_second %q burst %q: %d, stored %s; want 400 naming %s, unchanged\n%s", c.perSecond, c.burst, p.status,
				storedRateLimit(n, id), c.field, p.body)
		}
	}
	p = a.post(form+"/remove", nil)
	if p.status != http.StatusSeeOther || storedRateLimit(n, id) != "none" {
		t.Fatalf("remove: %d, stored %s\n%s", p.status, storedRateLimit(n, id), p.body)
	}
	if page := n.get(p.header.Get("Location"), a.cookie); !strings.Contains(page.body, "Rate limit removed") ||
		strings.Contains(page.body, `id="remove-rate-limit"`) {
		t.Fatalf("after removing it the page:\n%s", page.body)
	}
	version = storedVersion(n, id)
	p = a.post(form+"/remove", nil)
	if p.status != http.StatusSeeOther || storedVersion(n, id) != version {
		t.Fatalf("remove again: %d, version %d (was %d); want nothing written", p.status, storedVersion(n, id), version)
	}
	if page := n.get(p.header.Get("Location"), a.cookie); !strings.Contains(page.body, "Nothing changed: it had no rate limit.") ||
		strings.Contains(page.body, "Rate limit removed") {
		t.Fatalf("after removing a rate limit it did not have the page:\n%s", page.body)
	}
}
