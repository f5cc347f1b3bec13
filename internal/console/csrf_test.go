package console_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/store"
)

// TestCSRF: signing out (a change) without the session's CSRF token, with
// a wrong one, with another session's, or from a page of another origin
// is refused (403) and changes nothing; with the token it ends the
// session.
func TestCSRF(t *testing.T) {
	n := setup(t)
	cookie := n.signIn(adminKey)
	token := csrfOf(t, n.signedIn(cookie))
	other := csrfOf(t, n.signedIn(n.signIn(adminKey)))
	if other == token {
		t.Fatal("two sessions have one CSRF token")
	}
	crossSite := func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }
	for _, c := range []struct {
		what string
		form url.Values
		edit func(*http.Request)
	}{
		{"no token", url.Values{}, nil},
		{"an empty token", url.Values{"csrf": {""}}, nil},
		{"a wrong token", url.Values{"csrf": {token[:len(token)-1] + "x"}}, nil},
		{"another session's token", url.Values{"csrf": {other}}, nil},
		{"the token twice, the first wrong", url.Values{"csrf": {"x", token}}, nil},
		{"the token from another site's page", url.Values{"csrf": {token}}, crossSite},
	} {
		req, _ := http.NewRequest("POST", n.url+"/console/logout", strings.NewReader(c.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.edit != nil {
			c.edit(req)
		}
		p := n.do(req, cookie)
		if p.status != http.StatusForbidden || p.cookie != nil {
			t.Fatalf("sign-out with %s: %d, cookie %v; want 403 and no cookie\n%s", c.what, p.status, p.cookie, p.body)
		}
		n.signedIn(cookie)
	}
	p := n.post("/console/logout", cookie, url.Values{"csrf": {token}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?signed_out" {
		t.Fatalf("sign-out with the token: %d to %q; want 303 to /console/login?signed_out", p.status, p.header.Get("Location"))
	}
	n.signedOut(cookie)
	if _, err := n.storedSession(cookie); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the session after sign-out: %v; want it deleted", err)
	}
	// Without a session, a change is refused too.
	if p := n.post("/console/logout", cookie, url.Values{"csrf": {token}}); p.status != http.StatusForbidden {
		t.Fatalf("sign-out of an ended session: %d; want 403", p.status)
	}
}

// TestSignInFromAnotherSite: a sign-in form posted from a page of another
// origin is refused (403) and makes no session.
func TestSignInFromAnotherSite(t *testing.T) {
	n := setup(t)
	req, _ := http.NewRequest("POST", n.url+"/console/login", strings.NewReader(url.Values{"key": {adminKey}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://attacker.example")
	if p := n.do(req, nil); p.status != http.StatusForbidden || p.cookie != nil {
		t.Fatalf("sign-in from another origin: %d, cookie %v; want 403 and no cookie", p.status, p.cookie)
	}
}

// TestSecurityHeaders: every console response (pages, redirects, refusals,
// 404s, static files) carries the Content-Security-Policy, without inline
// scripts and framed by no page, nosniff and a same-origin referrer; pages
// are not stored by caches. The API's answers are as before.
func TestSecurityHeaders(t *testing.T) {
	n := setup(t)
	cookie := n.signIn(adminKey)
	pages := map[string]page{
		"sign-in page":      n.get("/console/login", nil),
		"home (redirect)":   n.get("/console/", nil),
		"/console redirect": n.get("/console", nil),
		"404":               n.get("/console/nothing-here", cookie),
		"subscriptions":     n.get("/console/subscriptions", cookie),
		"refused sign-out":  n.post("/console/logout", cookie, url.Values{}),
		"wrong key":         n.post("/console/login", nil, url.Values{"key": {"hk_wrong"}}),
		"static directory":  n.get("/console/static/", nil),
		"stylesheet":        n.get("/console/static/console.css", nil),
	}
	for what, p := range pages {
		h := p.header
		csp := h.Get("Content-Security-Policy")
		if csp != console.ContentSecurityPolicy || !strings.Contains(csp, "frame-ancestors 'none'") ||
			strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: Content-Security-Policy %q", what, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: X-Content-Type-Options %q, Referrer-Policy %q", what, h.Get("X-Content-Type-Options"), h.Get("Referrer-Policy"))
		}
		want := "no-store"
		if what == "stylesheet" {
			want = "max-age=300"
		}
		if got := h.Get("Cache-Control"); got != want {
			t.Errorf("%s: Cache-Control %q, want %q", what, got, want)
		}
	}
	if p := pages["stylesheet"]; p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet: %d %q", p.status, p.header.Get("Content-Type"))
	}
	if p := pages["static directory"]; p.status != http.StatusNotFound || strings.Contains(p.body, `<a href="console.css">`) {
		t.Errorf("static directory: %d; want a 404 page listing nothing\n%s", p.status, p.body)
	}
	if p := pages["404"]; p.status != http.StatusNotFound || !strings.Contains(p.body, `id="sign-out"`) {
		t.Errorf("404 when signed in: %d; want the 404 page with the navigation\n%s", p.status, p.body)
	}
	// The API's routes: no console headers, its own 404 problem.
	api := n.get("/healthz", nil)
	if api.status != http.StatusOK || api.header.Get("Content-Security-Policy") != "" {
		t.Errorf("/healthz: %d, CSP %q", api.status, api.header.Get("Content-Security-Policy"))
	}
	if p := n.get("/consoles", nil); p.status != http.StatusNotFound || p.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("/consoles (not the console): %d %q; want the API's 404 problem", p.status, p.header.Get("Content-Type"))
	}
}
