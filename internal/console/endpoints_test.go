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
// the circuit as the API's routes do, in the store, and the page says so;
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

	for _, step := range []struct{ action, state, done string }{{"freeze", "frozen", "Frozen:"}, {"enable", "enabled", "Enabled:"}} {
		p := a.post("/console/endpoints/"+id+"/"+step.action, nil)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/endpoints/"+id+"?done="+step.state {
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
