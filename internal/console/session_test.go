package console_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// storedSession returns the stored session of a cookie (store.ErrNotFound
// when there is none).
func (n *node) storedSession(cookie *http.Cookie) (store.Session, error) {
	h := sha256.Sum256([]byte(cookie.Value))
	return n.srv.Store.GetSession(context.Background(), h[:])
}

// TestSignIn: an admin or account key signs in; a key Herald does not
// know (401), a publish key (403) and no key (400) show the form again
// saying why, and make no session.
func TestSignIn(t *testing.T) {
	n := setup(t)
	_, _, accountKey := n.tenant("shop", "account")
	_, _, publishKey := n.tenant("pub", "publish")
	for _, c := range []struct {
		key    string
		status int
		says   string
	}{
		{"hk_not-a-key-herald-made", http.StatusUnauthorized, "Herald does not know this key"},
		{publishKey, http.StatusForbidden, "A key of role publish cannot sign in"},
		{"  ", http.StatusBadRequest, "Enter an API key."},
	} {
		p := n.post("/console/login", nil, url.Values{"key": {c.key}})
		if p.status != c.status || !strings.Contains(p.body, c.says) || p.cookie != nil {
			t.Fatalf("sign-in with %q: %d, cookie %v; want %d saying %q and no cookie\n%s", c.key, p.status, p.cookie, c.status, c.says, p.body)
		}
		if !strings.Contains(p.body, `id="key"`) {
			t.Fatalf("sign-in with %q: the form is not shown again\n%s", c.key, p.body)
		}
	}
	for _, key := range []string{adminKey, accountKey} {
		n.signedIn(n.signIn(key))
	}
	// Signed in, the sign-in page sends on to the subscriptions.
	if p := n.get("/console/login", n.signIn(accountKey)); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/subscriptions" {
		t.Fatalf("the sign-in page when signed in: %d to %q", p.status, p.header.Get("Location"))
	}
}

// TestSessionTokenNotStored: the store keeps the session by the SHA-256
// of its token, and the token itself is in none of the data directory's
// files.
func TestSessionTokenNotStored(t *testing.T) {
	if os.Getenv("HERALD_TEST_STORE") == "postgres" {
		t.Skip("reads the SQLite store's files")
	}
	dir := t.TempDir()
	n := newNode(t, dir, "", clock.NewFake(start), false)
	cookie := n.signIn(adminKey)
	if s, err := n.storedSession(cookie); err != nil || s.KeyID != "env" {
		t.Fatalf("the session by the token's hash: %+v, %v; want the env admin key's", s, err)
	}
	n.close() // everything written to the files
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the data directory's files: %v, %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), cookie.Value) {
			t.Fatalf("%s holds the session token", f)
		}
	}
}

// TestCookieAttributes: the session cookie is HttpOnly, SameSite=Strict,
// for /console/ only, without an expiry of its own, and Secure when the
// request came over TLS; signing out clears it.
func TestCookieAttributes(t *testing.T) {
	for _, tls := range []bool{false, true} {
		dir, url := testStore(t)
		n := newNode(t, dir, url, clock.NewFake(start), tls)
		c := n.signIn(adminKey)
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/console/" || c.Secure != tls ||
			c.MaxAge != 0 || !c.Expires.IsZero() || len(c.Value) != 43 {
			t.Fatalf("cookie over TLS %v: %+v; want HttpOnly, SameSite=Strict, Path=/console/, Secure %v, no expiry, 43 bytes", tls, c, tls)
		}
		out := n.post("/console/logout", c, map[string][]string{"csrf": {csrfOf(t, n.signedIn(c))}})
		if cl := out.cookie; cl == nil || cl.MaxAge >= 0 || cl.Value != "" || cl.Path != "/console/" || cl.Secure != tls {
			t.Fatalf("sign-out's cookie over TLS %v: %+v; want the cookie cleared (Max-Age<0) for /console/", tls, cl)
		}
	}
}

// TestIdleExpiry: a session lives while used and ends after IdleTimeout
// without a request; its last-seen time is written at most once every
// TouchEvery.
func TestIdleExpiry(t *testing.T) {
	n := setup(t)
	cookie := n.signIn(adminKey)
	seen := func(want time.Time) {
		t.Helper()
		s, err := n.storedSession(cookie)
		if err != nil || !s.LastSeenAt.Equal(want) {
			t.Fatalf("stored last seen %v, %v; want %v", s.LastSeenAt, err, want)
		}
	}
	n.clk.Advance(console.TouchEvery / 2)
	n.signedIn(cookie)
	seen(start) // within TouchEvery: not written
	n.clk.Set(start.Add(console.TouchEvery))
	n.signedIn(cookie)
	seen(start) // last seen TouchEvery ago, not more: not written
	n.clk.Advance(time.Millisecond)
	n.signedIn(cookie)
	last := start.Add(console.TouchEvery + time.Millisecond)
	seen(last)
	n.clk.Set(last.Add(console.IdleTimeout - time.Millisecond))
	n.signedIn(cookie)
	last = n.clk.Now()
	seen(last)
	n.clk.Set(last.Add(console.IdleTimeout))
	p := n.get("/console/subscriptions", cookie)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?ended" || p.cookie == nil || p.cookie.MaxAge >= 0 {
		t.Fatalf("after IdleTimeout idle: %d to %q, cookie %+v; want 303 to /console/login?ended clearing the cookie",
			p.status, p.header.Get("Location"), p.cookie)
	}
	if _, err := n.storedSession(cookie); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the idle session is still stored: %v", err)
	}
	if p := n.get("/console/login?ended", nil); !strings.Contains(p.body, "Your session has ended (idle for 12 hours") {
		t.Fatalf("the sign-in page after the session ended does not say so:\n%s", p.body)
	}
}

// TestIdleSessionsCleanedUp: the retention clean-up deletes the sessions
// idle for IdleTimeout and keeps those used since.
func TestIdleSessionsCleanedUp(t *testing.T) {
	dir, url := testStore(t)
	var cleanup *startstop.Loop
	n := newNode(t, dir, url, clock.NewFake(start), false, func(srv *server.Server) {
		for _, l := range srv.Loops() {
			if l.Name == "retention clean-up" {
				cleanup = l
				l.TestSignals.Slept.Init(t)
				l.TestSignals.Woke.Init(t)
			}
		}
	})
	if cleanup == nil {
		t.Fatal("no retention clean-up loop")
	}
	cleanup.TestSignals.Slept.WaitOrTimeout() // asleep until its first round
	used, idle := n.signIn(adminKey), n.signIn(adminKey)
	round := func(to time.Time) {
		t.Helper()
		n.clk.Set(to)
		cleanup.TestSignals.Woke.WaitOrTimeout()
		if until := cleanup.TestSignals.Slept.WaitOrTimeout(); !until.After(to) {
			t.Fatalf("the clean-up sleeps until %v, not after %v", until, to)
		}
	}
	round(start.Add(console.IdleTimeout - 2*time.Minute))
	n.signedIn(used)
	round(start.Add(console.IdleTimeout + time.Minute))
	if _, err := n.storedSession(idle); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the idle session after the clean-up: %v; want it deleted", err)
	}
	if _, err := n.storedSession(used); err != nil {
		t.Fatalf("the session used since: %v; want it kept", err)
	}
	n.signedIn(used)
}

// TestSessionsPerKey: a key holds at most MaxSessionsPerKey sessions; one
// more sign-in ends the one last seen longest ago, and other keys' stay.
func TestSessionsPerKey(t *testing.T) {
	n := setup(t)
	_, _, other := n.tenant("other", "account")
	others := n.signIn(other)
	var cookies []*http.Cookie
	for range console.MaxSessionsPerKey + 1 {
		n.clk.Advance(time.Millisecond) // each sign-in later than the one before
		cookies = append(cookies, n.signIn(adminKey))
	}
	n.signedOut(cookies[0])
	for _, c := range cookies[1:] {
		n.signedIn(c)
	}
	n.signedIn(others)
}

// TestRevokedKeyEndsSession: deleting the key a session signed in with
// ends the session at its next request; the session is deleted.
func TestRevokedKeyEndsSession(t *testing.T) {
	n := setup(t)
	_, keyID, key := n.tenant("shop", "account")
	cookie := n.signIn(key)
	n.signedIn(cookie)
	n.must(http.StatusNoContent, adminKey, "DELETE", "/v1/keys/"+keyID, nil)
	p := n.get("/console/subscriptions", cookie)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?ended" {
		t.Fatalf("after the key was revoked: %d to %q; want 303 to /console/login?ended", p.status, p.header.Get("Location"))
	}
	if _, err := n.storedSession(cookie); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the revoked key's session is still stored: %v", err)
	}
}
