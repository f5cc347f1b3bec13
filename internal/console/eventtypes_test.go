package console_test

import (
	"net/http"
	"net/url"
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
