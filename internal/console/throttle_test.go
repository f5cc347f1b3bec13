package console_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/console"
)

// fromAddress returns a client of n's server whose connections come from
// the loopback address ip (127.0.0.2: another client than the tests'
// 127.0.0.1).
func fromAddress(n *node, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
	n.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// throttleLines counts the log lines of what's throttle.
func throttleLines(n *node, what string) int {
	return strings.Count(n.logs.String(), `msg="`+what+` throttled: too many failures from one address"`)
}

// wantThrottled fails the test unless p is the 429 of a throttled address,
// with Retry-After retry, setting no cookie.
func wantThrottled(t *testing.T, what string, p page, retry string) {
	t.Helper()
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != retry || p.header.Get("Set-Cookie") != "" ||
		!strings.Contains(p.body, "Too many failed attempts from your address") {
		t.Fatalf("%s: %d, Retry-After %q, Set-Cookie %q; want 429 with Retry-After %s and no cookie\n%s",
			what, p.status, p.header.Get("Retry-After"), p.header.Get("Set-Cookie"), retry, p.body)
	}
}

// TestSignInThrottled: after console.SignInFailures unknown keys from one
// address within a minute, its next sign-in is refused, 429 with
// Retry-After, even with the right key; one warn line says so. Another
// address still signs in. Once the minute from the first failure has
// passed (on the fake clock) the address signs in again.
func TestSignInThrottled(t *testing.T) {
	n := setup(t)
	login := func(key string) page { return n.post("/console/login", nil, url.Values{"key": {key}}) }
	for i := range console.SignInFailures {
		if p := login("hk_wrong" + string(rune('a'+i))); p.status != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d; want 401\n%s", i+1, p.status, p.body)
		}
		n.clk.Advance(time.Second)
	}
	wantThrottled(t, "the right key after 10 wrong ones", login(adminKey), "50")
	wantThrottled(t, "another wrong key", login("hk_wrong"), "50")
	if got := throttleLines(n, "console sign-in"); got != 1 {
		t.Fatalf("%d throttle lines; want 1:\n%s", got, n.logs)
	}

	other := fromAddress(n, "127.0.0.2")
	req, _ := http.NewRequest("POST", n.url+"/console/login", strings.NewReader(url.Values{"key": {adminKey}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if p := n.doWith(other, req, nil); p.status != http.StatusSeeOther || p.cookie == nil {
		t.Fatalf("the right key from 127.0.0.2: %d, cookie %v; want 303 with a session\n%s", p.status, p.cookie, p.body)
	}

	n.clk.Advance(49 * time.Second) // a second before the minute ends
	wantThrottled(t, "the right key a second before the minute ends", login(adminKey), "1")
	n.clk.Advance(time.Second)
	n.signedIn(n.signIn(adminKey))
	if got := throttleLines(n, "console sign-in"); got != 1 {
		t.Fatalf("%d throttle lines; want 1:\n%s", got, n.logs)
	}
}

// TestPortalLinkThrottled: after console.SignInFailures links that open
// nothing from one address within a minute, its next link is refused, 429
// with Retry-After, even a good one, which is not used up by it; one warn
// line says so. Another address still opens a link; after the minute the
// good link opens.
func TestPortalLinkThrottled(t *testing.T) {
	n := setup(t)
	good := portalLink(n, adminKey, map[string]any{})
	for i := range console.SignInFailures {
		if p := n.get(console.PortalPrefix+"wrong-token-"+string(rune('a'+i)), nil); p.status != http.StatusGone {
			t.Fatalf("wrong link %d: %d; want 410\n%s", i+1, p.status, p.body)
		}
	}
	wantThrottled(t, "a good link after 10 wrong ones", n.get(good, nil), "60")
	if got := throttleLines(n, "portal link"); got != 1 {
		t.Fatalf("%d throttle lines; want 1:\n%s", got, n.logs)
	}

	req, _ := http.NewRequest("GET", n.url+portalLink(n, adminKey, map[string]any{}), nil)
	if p := n.doWith(fromAddress(n, "127.0.0.2"), req, nil); p.status != http.StatusSeeOther || portalCookie(p) == nil {
		t.Fatalf("a good link from 127.0.0.2: %d; want 303 with a portal cookie\n%s", p.status, p.body)
	}

	n.clk.Advance(console.SignInWindow)
	openPortal(n, good)
	if got := throttleLines(n, "portal link"); got != 1 {
		t.Fatalf("%d throttle lines; want 1:\n%s", got, n.logs)
	}
}
