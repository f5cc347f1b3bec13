package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestEventTypeNamesInLinks: a type's name is one path segment of every
// link and form that names it, escaped ('/', '?', '#', '%', spaces), so
// that its page, its new version and its archive reach that type; the
// API's Location names it the same way.
func TestEventTypeNamesInLinks(t *testing.T) {
	n := setup(t)
	const name = "a/b?c#d %e"
	escaped := url.PathEscape(name)
	req, _ := http.NewRequest("POST", n.url+"/v1/event-types", strings.NewReader(`{"name": "a/b?c#d %e", "schemas": {"1": {"type": "object"}}}`))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.web.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") != "/v1/event-types/"+escaped {
		t.Fatalf("creating %q: %d, Location %q", name, resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := n.signIn(adminKey)
	list := n.get("/console/event-types", ck)
	if !strings.Contains(list.body, `href="/console/event-types/`+escaped+`"`) {
		t.Fatalf("the list does not link %q as %s:\n%s", name, escaped, list.body)
	}
	page := n.get("/console/event-types/"+escaped, ck)
	for _, want := range []string{`action="/console/event-types/` + escaped + `/versions"`, `action="/console/event-types/` + escaped + `/archive"`} {
		if page.status != http.StatusOK || !strings.Contains(page.body, want) {
			t.Fatalf("the type's page (%d) lacks %s:\n%s", page.status, want, page.body)
		}
	}
	csrf := csrfOf(t, page)
	if p := n.post("/console/event-types/"+escaped+"/archive", ck, url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("archiving through the form's action: %d\n%s", p.status, p.body)
	}
	if _, got := n.api(adminKey, "GET", "/v1/event-types/"+escaped, nil); got["archived"] != true {
		t.Fatalf("after the archive form: %v", got)
	}
}

// TestPortalOffersEveryPageOfTypes: the portal's forms and its event types
// page offer every type of a catalog larger than a page of the list
// (store.MaxPageBytes), so that a type past the first page can be chosen,
// and is kept when a subscription that takes it is saved.
func TestPortalOffersEveryPageOfTypes(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	big := map[string]any{}
	for v := 1; v <= 12; v++ {
		big[strconv.Itoa(v)] = map[string]any{"description": strings.Repeat("d", 60000)}
	}
	for i := range 7 {
		n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "big." + strconv.Itoa(i), "schemas": big})
	}
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "zz.last", "description": "past the first page"})
	ck := openPortal(n, portalLink(n, ts.shopKey, map[string]any{}))
	if p := n.get("/portal/subscriptions/"+ts.shopSubs[0], ck); !strings.Contains(p.body, `value="zz.last"`) {
		t.Fatalf("the subscription form does not offer the type past the first page:\n%.2000s", p.body)
	}
	if p := n.get("/portal/event-types", ck); !strings.Contains(p.body, "past the first page") {
		t.Fatalf("the event types page does not show the type past the first page")
	}
}
