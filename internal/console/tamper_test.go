package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/console"
)

// tampered returns altered copies of a session cookie's value, by what was
// done to it: one character changed (the first, one in the middle, the
// last), cut by one character and to half, one character added, a
// character that is no base64 at the end, and empty.
func tampered(v string) map[string]string {
	flip := func(i int) string {
		b := []byte(v)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	return map[string]string{
		"the first character changed":   flip(0),
		"a middle character changed":    flip(len(v) / 2),
		"the last character changed":    flip(len(v) - 1),
		"the last character cut":        v[:len(v)-1],
		"cut to half":                   v[:len(v)/2],
		"a character added":             v + "A",
		"a character that is no base64": v[:len(v)-1] + "*",
		"empty":                         "",
	}
}

// clearedOrNone reports whether an answer's session cookie (nil: it set
// none) is no session: none, or one that clears the browser's.
func clearedOrNone(c *http.Cookie) bool { return c == nil || c.Value == "" && c.MaxAge < 0 }

// TestTamperedSessionCookie: a herald_session cookie altered in any way
// (tampered) is no session: a page sends to sign in (303; the answer may
// clear the cookie, never sets a session), a change with
// the session's own CSRF token is refused (403) and makes nothing, and
// neither is ever a 500; the unaltered cookie still opens the console.
func TestTamperedSessionCookie(t *testing.T) {
	n := setup(t)
	cookie := n.signIn(adminKey)
	token := csrfOf(t, n.signedIn(cookie))
	for what, v := range tampered(cookie.Value) {
		if v == cookie.Value {
			t.Fatalf("%s: the value is unchanged", what)
		}
		c := &http.Cookie{Name: console.CookieName, Value: v}
		p := n.get("/console/subscriptions", c)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/login") || !clearedOrNone(p.cookie) {
			t.Fatalf("a page with the cookie %s: %d to %q, cookie %v; want 303 to /console/login, the cookie cleared or left\n%s",
				what, p.status, p.header.Get("Location"), p.cookie, p.body)
		}
		form := url.Values{"csrf": {token}, "name": {"tampered"}, "url": {"https://shop.example/tampered"}}
		if p := n.post("/console/subscriptions/new", c, form); p.status != http.StatusForbidden || !clearedOrNone(p.cookie) {
			t.Fatalf("a change with the cookie %s and the session's CSRF token: %d, cookie %v; want 403\n%s", what, p.status, p.cookie, p.body)
		}
		if p := n.post("/console/logout", c, url.Values{"csrf": {token}}); p.status != http.StatusForbidden || !clearedOrNone(p.cookie) {
			t.Fatalf("sign-out with the cookie %s and the session's CSRF token: %d, cookie %v; want 403", what, p.status, p.cookie)
		}
	}
	if got := countOf(n, adminKey); got != 0 {
		t.Fatalf("the refused changes made %d subscriptions", got)
	}
	n.signedIn(cookie)
}

// TestTamperedPortalCookie: a herald_portal cookie altered in any way
// (tampered) is refused (403, never a 500) for a page and for a change
// with the session's own CSRF token; the session's cookie with another
// portal session's CSRF token is refused too; nothing changes, and the
// unaltered cookie still opens the portal.
func TestTamperedPortalCookie(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	ck := openPortal(n, portalLink(n, ts.shopKey, map[string]any{}))
	other := openPortal(n, portalLink(n, ts.shopKey, map[string]any{}))
	sub := ts.shopSubs[1]
	path := "/portal/subscriptions/" + sub
	token := csrfOf(t, n.get(path, ck))
	otherToken := csrfOf(t, n.get(path, other))
	if otherToken == token {
		t.Fatal("two portal sessions have one CSRF token")
	}
	before := subJSON(n, ts.shopKey, sub)
	edit := func(c *http.Cookie, csrf string) page {
		return n.post(path, c, url.Values{"csrf": {csrf}, "url": {"https://evil.example/x"}})
	}
	for what, v := range tampered(ck.Value) {
		c := &http.Cookie{Name: console.PortalCookieName, Value: v}
		if p := n.get("/portal/subscriptions", c); p.status != http.StatusForbidden || !clearedOrNone(portalCookie(p)) {
			t.Fatalf("the portal with the cookie %s: %d, cookie %v; want 403\n%s", what, p.status, portalCookie(p), p.body)
		}
		if p := edit(c, token); p.status != http.StatusForbidden {
			t.Fatalf("an edit with the cookie %s and the session's CSRF token: %d; want 403\n%s", what, p.status, p.body)
		}
	}
	if p := edit(ck, otherToken); p.status != http.StatusForbidden {
		t.Fatalf("an edit with another portal session's CSRF token: %d; want 403\n%s", p.status, p.body)
	}
	if after := subJSON(n, ts.shopKey, sub); after != before {
		t.Fatalf("a refused edit changed the subscription:\n%s\n%s", before, after)
	}
	if p := n.get("/portal/subscriptions", ck); p.status != http.StatusOK {
		t.Fatalf("the portal with its own cookie after the refusals: %d\n%s", p.status, p.body)
	}
}
