package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
)

// userinfo is how a URL of the tests carries its secret: as a password
// (usr:SECRET@) or as a user name alone, a token (SECRET@).
type userinfo struct {
	name        string
	with, shown func(secret string) string
}

var userinfos = []userinfo{
	{"password", func(s string) string { return "usr:" + s + "@" }, func(string) string { return "usr:xxxxx@" }},
	{"token", func(s string) string { return s + "@" }, func(string) string { return "xxxxx@" }},
}

// TestSecretsNeverShown: a subscription whose URL and dead-letter URL
// carry secrets (a password, or a token as the user name) and which has a
// secret header, pushing to a port nothing listens on, another whose
// CloudEvents handshake goes there, and a third whose OAuth2 token URL
// carries a secret and goes there too: the first's delivery is
// dead-lettered after a refused connection, its dead letter's push is
// refused too, both endpoints are disabled, the handshake fails and the
// token request is refused. Neither a secret nor the secret header's value
// is in what Herald shows of them: the attempt log, the subscriptions,
// endpoints and deliveries, the operational events, a problem detail
// about such a URL, the process's log, the console's pages and the
// portal's.
func TestSecretsNeverShown(t *testing.T) {
	for _, ui := range userinfos {
		t.Run(ui.name, func(t *testing.T) { secretsNeverShown(t, ui) })
	}
}

func secretsNeverShown(t *testing.T, ui userinfo) {
	const pw, dlPW, vPW, authPW, secret = "SuperSecretPw1", "DeadLetterPw2", "ValidationPw3", "TokenURLPw4", "s3cr3t-h34der-v4lue"
	logs := &logBuffer{}
	hcfg := health.DefaultConfig()
	hcfg.ProbationAfter, hcfg.DisableConsecutive = 0, 1
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server's log:\n%s", logs.String())
		}
	})
	b := setup(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Scheduling.Health = hcfg
	})
	ops := b.opsReceiver("herald.endpoint.disabled", "herald.delivery.dead_lettered")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens on its address any more
	addr := closed.Listener.Addr().String()
	sub := b.subscribe(map[string]any{"name": "pw", "url": "http://" + ui.with(pw) + addr + "/hook", "event_types": []string{"t"},
		"dead_letter_url": "http://" + ui.with(dlPW) + addr + "/dl", "secret_headers": map[string]string{"X-Key": secret},
		"retry_policy": map[string]any{"preset": "eventgrid", "max_attempts": 1}})
	vsub := b.subscribe(map[string]any{"name": "v", "url": "http://" + ui.with(vPW) + addr + "/v", "event_types": []string{"t"},
		"validation": "cloudevents"})
	asub := b.subscribe(map[string]any{"name": "auth", "url": "http://" + addr + "/a", "event_types": []string{"a"}, "dead_letter": false,
		"retry_policy": map[string]any{"preset": "eventgrid", "max_attempts": 1},
		"auth": map[string]any{"type": "oauth2_client_credentials", "token_url": "http://" + ui.with(authPW) + addr + "/token",
			"client_id": "c", "client_secret": "s"}})
	code, problem := b.do("POST", "/v1/subscriptions", map[string]any{"name": "bad", "url": "http://" + ui.with(pw) + addr + ":x/"}, nil)
	if code != http.StatusBadRequest {
		t.Fatalf("a URL with a bad port: %d %s", code, problem)
	}

	b.publish("e1", "t")
	b.publish("e2", "a")
	eventually(t, "dead-lettered, and the dead letter's push refused", func() bool {
		var dead, refused bool
		for _, d := range b.deliveries(sub) {
			dead = dead || d.Status == "dead_lettered"
			refused = refused || d.Status == "pending" && len(b.attempts(d.ID)) > 0
		}
		return dead && refused
	})
	eventually(t, "the token request refused", func() bool { return b.only(asub).Status == "dropped" })
	eventually(t, "a dead-letter event and the endpoints disabled", func() bool {
		types := map[string]int{}
		for _, ev := range opsEvents(t, ops) {
			types[ev["type"].(string)]++
		}
		return types["herald.delivery.dead_lettered"] == 1 && types["herald.endpoint.disabled"] == 2
	})
	b.settle()
	b.clk.Advance(time.Second) // the validator's round
	eventually(t, "the handshake failed", func() bool { return subStateOf(b, vsub).ValidationError != nil })

	shown := map[string]string{"the problem": string(problem)}
	redacted := map[string]bool{}
	for _, d := range allDeliveries(b) {
		_, raw := b.do("GET", "/v1/deliveries/"+d.ID+"/attempts?limit=1000", nil, nil)
		shown["the attempts of "+d.ID] = string(raw)
		for _, path := range []string{"/hook", "/token"} {
			redacted[path] = redacted[path] || strings.Contains(string(raw), ui.shown("")+addr+path)
		}
	}
	for _, path := range []string{"/v1/subscriptions", "/v1/endpoints", "/v1/deliveries?limit=1000",
		"/v1/deliveries?status=dead_lettered", "/v1/subscriptions/" + vsub, "/v1/subscriptions/" + asub} {
		_, raw := b.do("GET", path, nil, nil)
		shown[path] = string(raw)
	}
	for i := 0; i < ops.count(); i++ {
		shown["operational event "+string(rune('0'+i))] = string(ops.request(i).body)
	}
	for page, html := range shownPages(t, b, sub, vsub, asub) {
		shown[page] = html
	}
	b.settle()
	shown["the log"] = logs.String()
	noneShown(t, shown, pw, dlPW, vPW, authPW, secret)
	for path, ok := range redacted {
		if !ok {
			t.Errorf("no attempt shows the URL of %s with its secret redacted (%s): %v", path, ui.shown(""), shown)
		}
	}
	for _, page := range []string{"/console/subscriptions/" + sub, "/portal/subscriptions/" + sub} {
		if !strings.Contains(shown[page], ui.shown("")+addr+"/hook") {
			t.Errorf("%s does not show the URL with its secret as %s:\n%s", page, ui.shown(""), shown[page])
		}
	}
}

// noneShown fails t for every text of shown (by what it is) that holds
// one of secrets.
func noneShown(t *testing.T, shown map[string]string, secrets ...string) {
	t.Helper()
	for what, text := range shown {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q:\n%s", what, s, text)
			}
		}
	}
}

// shownPages returns the HTML of the console's and the portal's pages of
// the subscriptions subs (list, each one, its edit form) and of every
// delivery, by path.
func shownPages(t *testing.T, b *bundle, subs ...string) map[string]string {
	t.Helper()
	pages := []string{"/console/subscriptions", "/console/endpoints"}
	portal := []string{"/portal/subscriptions"}
	for _, s := range subs {
		pages = append(pages, "/console/subscriptions/"+s, "/console/subscriptions/"+s+"/edit")
		portal = append(portal, "/portal/subscriptions/"+s)
	}
	for _, d := range allDeliveries(b) {
		pages = append(pages, "/console/deliveries/"+d.ID)
	}
	shown := consolePages(t, b, pages...)
	for page, html := range portalPages(t, b, portal...) {
		shown[page] = html
	}
	return shown
}

// consolePages signs in to the console with the admin key and returns the
// HTML of each page (a GET answered 200).
func consolePages(t *testing.T, b *bundle, pages ...string) map[string]string {
	t.Helper()
	cookie := consoleSignIn(t, b)
	return getPages(t, b, cookie, pages)
}

// portalPages opens a portal link of the default account, made with the
// admin key, and returns the HTML of each page (a GET answered 200).
func portalPages(t *testing.T, b *bundle, pages ...string) map[string]string {
	t.Helper()
	var link struct{ URL string }
	if code, raw := b.do("POST", "/v1/portal-sessions", map[string]any{}, &link); code != http.StatusCreated {
		t.Fatalf("portal link: %d %s", code, raw)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", b.api.URL+u.Path, nil)
	resp, raw := do(t, req)
	for _, c := range resp.Cookies() {
		if c.Name == "herald_portal" {
			return getPages(t, b, c, pages)
		}
	}
	t.Fatalf("portal link: %d, no session cookie: %.300s", resp.StatusCode, raw)
	return nil
}

// getPages GETs each page with cookie and returns its HTML.
func getPages(t *testing.T, b *bundle, cookie *http.Cookie, pages []string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(pages))
	for _, page := range pages {
		req, _ := http.NewRequest("GET", b.api.URL+page, nil)
		req.AddCookie(cookie)
		resp, raw := do(t, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", page, resp.StatusCode, raw)
		}
		out[page] = string(raw)
	}
	return out
}
