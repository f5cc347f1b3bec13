package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// The console's tests run real Herald processes (server.Server, as herald
// serve runs one) on a fake clock, each serving its API and console on a
// loopback HTTP server, and talk to them over HTTP: with a plain client
// here, with Chromium in browser_test.go.

// start is the fake clock's starting time.
var start = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// adminKey is the tests' HERALD_ADMIN_KEY.
const adminKey = "console-test-admin-key-0123456789"

// node is one Herald process and its HTTP server.
type node struct {
	t    *testing.T
	clk  *clock.Fake
	srv  *server.Server
	web  *httptest.Server
	url  string
	logs *logBuffer // the process's log
}

// logBuffer is a log's text, written and read from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testStore is the store the tests run on: SQLite in a temporary
// directory, or with HERALD_TEST_STORE=postgres a fresh PostgreSQL schema
// (pgtest).
func testStore(t *testing.T) (dataDir, storeURL string) {
	if os.Getenv("HERALD_TEST_STORE") == "postgres" {
		return t.TempDir(), pgtest.SchemaURL(t)
	}
	return t.TempDir(), ""
}

// newNode starts a Herald process on the store of dataDir and storeURL
// (see testStore) with clk, serving HTTP (HTTPS when tls); before it
// starts, each of before is given the process (to turn test signals on).
func newNode(t *testing.T, dataDir, storeURL string, clk *clock.Fake, tls bool, before ...func(*server.Server)) *node {
	t.Helper()
	logs := &logBuffer{}
	cfg := server.Config{
		DataDir: dataDir, Store: storeURL, Clock: clk, Version: "test", AdminKey: adminKey,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// The receivers are loopback servers.
		Attempting: attempting.Config{Destinations: destination.Policy{AllowPrivate: true}},
	}
	srv, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range before {
		f(srv)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewUnstartedServer(srv.Handler())
	if tls {
		web.StartTLS()
	} else {
		web.Start()
	}
	n := &node{t: t, clk: clk, srv: srv, web: web, url: web.URL, logs: logs}
	t.Cleanup(func() {
		n.close()
		if t.Failed() {
			t.Logf("the server's log:\n%s", logs.String())
		}
	})
	return n
}

// close stops the node (again: nothing).
func (n *node) close() {
	if n.web == nil {
		return
	}
	n.srv.StopWaiting()
	n.web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.srv.Close(ctx); err != nil {
		n.t.Errorf("close: %v", err)
	}
	n.web = nil
}

// setup starts one node on a fresh store.
func setup(t *testing.T) *node {
	t.Helper()
	dir, url := testStore(t)
	return newNode(t, dir, url, clock.NewFake(start), false)
}

// api calls the API with key and returns the status and the JSON answer.
func (n *node) api(key, method, path string, body any) (int, map[string]any) {
	n.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, n.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.web.Client().Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// must calls the API as api does and fails the test unless it answers
// want; it returns the answer.
func (n *node) must(want int, key, method, path string, body any) map[string]any {
	n.t.Helper()
	status, out := n.api(key, method, path, body)
	if status != want {
		n.t.Fatalf("%s %s: %d %v; want %d", method, path, status, out, want)
	}
	return out
}

// tenant makes an account named name and a key of role in it, and
// returns the account's ID, the key's ID and the key.
func (n *node) tenant(name, role string) (acc, keyID, key string) {
	n.t.Helper()
	acc = n.must(201, adminKey, "POST", "/v1/accounts", map[string]any{"name": name})["id"].(string)
	k := n.must(201, adminKey, "POST", "/v1/keys", map[string]any{"account_id": acc, "role": role, "name": name + "-" + role})
	return acc, k["id"].(string), k["key"].(string)
}

// subscribe makes a subscription named name in the account of key,
// pushing to hook, and returns its ID.
func (n *node) subscribe(key, name, hook string) string {
	n.t.Helper()
	return n.must(201, key, "POST", "/v1/subscriptions", map[string]any{"name": name, "url": hook})["id"].(string)
}

// page is one answer of the console.
type page struct {
	status int
	header http.Header
	body   string
	// cookie is the herald_session cookie the answer set, if any.
	cookie *http.Cookie
}

// do sends a request to the console with the session cookie (if any) and
// returns its answer, following no redirect.
func (n *node) do(req *http.Request, cookie *http.Cookie) page {
	n.t.Helper()
	return n.doWith(n.web.Client(), req, cookie)
}

// doWith is do through c.
func (n *node) doWith(c *http.Client, req *http.Request, cookie *http.Cookie) page {
	n.t.Helper()
	if cookie != nil {
		req.AddCookie(cookie)
	}
	client := *c
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatal(err)
	}
	p := page{status: resp.StatusCode, header: resp.Header, body: string(b)}
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			p.cookie = c
		}
	}
	return p
}

// get GETs path with the session cookie (nil: none).
func (n *node) get(path string, cookie *http.Cookie) page {
	n.t.Helper()
	req, _ := http.NewRequest("GET", n.url+path, nil)
	return n.do(req, cookie)
}

// post POSTs form to path with the session cookie (nil: none), as a
// browser sends a form.
func (n *node) post(path string, cookie *http.Cookie, form url.Values) page {
	n.t.Helper()
	req, _ := http.NewRequest("POST", n.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return n.do(req, cookie)
}

// signIn signs in with key and returns the session cookie.
func (n *node) signIn(key string) *http.Cookie {
	n.t.Helper()
	p := n.post("/console/login", nil, url.Values{"key": {key}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/subscriptions" || p.cookie == nil {
		n.t.Fatalf("sign-in: %d to %q, cookie %v; want 303 to /console/subscriptions with a cookie\n%s",
			p.status, p.header.Get("Location"), p.cookie, p.body)
	}
	return p.cookie
}

// signedIn fails the test unless the cookie opens the subscriptions list,
// and returns the page.
func (n *node) signedIn(cookie *http.Cookie) page {
	n.t.Helper()
	p := n.get("/console/subscriptions", cookie)
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="sign-out"`) {
		n.t.Fatalf("the subscriptions with the session: %d to %q; want 200 with the sign-out form\n%s",
			p.status, p.header.Get("Location"), p.body)
	}
	return p
}

// signedOut fails the test unless the cookie is sent to sign in.
func (n *node) signedOut(cookie *http.Cookie) {
	n.t.Helper()
	p := n.get("/console/subscriptions", cookie)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/login") {
		n.t.Fatalf("the subscriptions after the session ended: %d to %q; want 303 to /console/login",
			p.status, p.header.Get("Location"))
	}
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the CSRF token a page's forms carry.
func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", p.body)
	}
	return m[1]
}
