package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/server"
)

// The HTTP layer's classes of answers, each over every route it concerns:
// which Content-Types and origins a change accepts, how paths and methods
// are routed, what net/http's own refusals look like, and the request log.

// wantProblem checks that an answer is a problem document with this status
// and returns it (nil for an answer to HEAD, which has no body).
func wantProblem(t *testing.T, what string, resp *http.Response, raw []byte, status int) map[string]any {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: status %d, want %d (%s)", what, resp.StatusCode, status, raw)
		return nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: Content-Type %q, want application/problem+json (%s)", what, ct, raw)
		return nil
	}
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		return nil
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Errorf("%s: not a problem document: %v: %s", what, err, raw)
		return nil
	}
	if p["status"] != float64(status) || p["type"] == "" || p["title"] == "" {
		t.Errorf("%s: problem document %v", what, p)
	}
	return p
}

// changeRoute is a route that changes something, with a request body it
// accepts ("" for the routes that read none) and a Content-Type it accepts.
type changeRoute struct {
	method, path, body, accept string
}

// changeRoutes are every change route but publishing, on a subscription,
// its dead-lettered delivery and its endpoint, in an order in which each
// succeeds.
func changeRoutes(sub, dlv, ep string) []changeRoute {
	return []changeRoute{
		{"POST", "/v1/subscriptions", `{"name": "new", "url": "https://example.com/new"}`, "application/json; charset=utf-8"},
		{"PATCH", "/v1/subscriptions/" + sub, `{"name": "renamed"}`, "application/json"},
		{"POST", "/v1/deliveries/" + dlv + "/redeliver", "", ""},
		{"POST", "/v1/dead-letters/redrive", `{"subscription_id": "` + sub + `"}`, "Application/JSON; Charset=UTF-8"},
		{"POST", "/v1/endpoints/" + ep + "/freeze", "", ""},
		{"POST", "/v1/endpoints/" + ep + "/enable", "", "application/json"},
		{"POST", "/v1/subscriptions/" + sub + "/deactivate", "", "application/json"},
		{"DELETE", "/v1/subscriptions/" + sub, "", ""},
	}
}

// deadLetters subscribes rc, which answers 404 (the eventgrid preset never
// retries it), publishes n events, and returns the subscription and its
// deliveries once they are all dead-lettered.
func deadLetters(b *bundle, rc *receiver, n int) (string, []delivery) {
	b.t.Helper()
	sub := b.subscribe(map[string]any{"name": "s", "url": rc.URL})
	for i := range n {
		b.publish("e"+strconv.Itoa(i), "t")
	}
	var ds []delivery
	eventually(b.t, "dead letters", func() bool {
		ds = b.deliveries(sub)
		return len(ds) == n && !slices.ContainsFunc(ds, func(d delivery) bool { return d.Status != "dead_lettered" })
	})
	return sub, ds
}

// withDeadLetter makes a subscription whose one delivery is dead-lettered
// and returns the subscription, delivery and endpoint ids.
func withDeadLetter(b *bundle) (sub, dlv, ep string) {
	b.t.Helper()
	sub, ds := deadLetters(b, newReceiver(b.t, status(http.StatusNotFound)), 1)
	return sub, ds[0].ID, b.endpointOf(sub)
}

func TestChangesTakeOnlyJSONAndNoCrossOriginBrowser(t *testing.T) {
	b := setup(t)
	sub, dlv, ep := withDeadLetter(b)
	routes := changeRoutes(sub, dlv, ep)
	before := b.state()

	// The Content-Types a page can make a browser send cross-site without
	// a preflight, and others that are not JSON: refused by every change.
	refused := []string{
		"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/xml", "text/xml", "application/merge-patch+json",
		"application/json; charset=iso-8859-1", "application/json;;",
	}
	for _, rt := range routes {
		cts := refused
		if rt.body != "" {
			cts = append(cts[:len(cts):len(cts)], "") // a body needs its type
		}
		for _, ct := range cts {
			what := rt.method + " " + rt.path + " as " + ct
			resp, raw := b.send(rt.method, rt.path, map[string]string{"Content-Type": ct}, rt.body)
			if p := wantProblem(t, what, resp, raw, http.StatusUnsupportedMediaType); p != nil && p["field"] != "content-type" {
				t.Errorf("%s: field %v, want content-type", what, p["field"])
			}
		}
	}

	// A browser's request for another origin's page is refused whatever its
	// Content-Type, publishing included; the old-browser case is Origin
	// without Sec-Fetch-Site.
	origins := []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://other.example"},
		{"Origin": "https://evil.example"},
	}
	publish := changeRoute{"POST", "/v1/events", `{"specversion": "1.0", "id": "x1", "source": "/x", "type": "t"}`, "application/json"}
	for _, rt := range append(routes, publish) {
		for _, h := range origins {
			for _, ct := range []string{"application/json", ""} {
				hdr := map[string]string{"Content-Type": ct}
				for k, v := range h {
					hdr[k] = v
				}
				resp, raw := b.send(rt.method, rt.path, hdr, rt.body)
				wantProblem(t, rt.method+" "+rt.path+" from "+h["Origin"]+" as "+ct, resp, raw, http.StatusForbidden)
			}
		}
	}
	if after := b.state(); after != before {
		t.Fatalf("refused requests changed something:\nbefore %s\nafter  %s", before, after)
	}

	// What programs send is accepted: application/json with or without a
	// charset, and no Content-Type where there is no body; so is a browser
	// on Herald's own origin.
	for i, rt := range routes {
		hdr := map[string]string{"Content-Type": rt.accept}
		if i%2 == 0 {
			hdr["Sec-Fetch-Site"] = "same-origin"
		}
		b.settle() // no attempt in flight: redeliver would answer 409
		if resp, raw := b.send(rt.method, rt.path, hdr, rt.body); resp.StatusCode >= 300 {
			t.Errorf("%s %s as %q: %d %s", rt.method, rt.path, rt.accept, resp.StatusCode, raw)
		}
	}
}

func TestRoutingAnswersProblems(t *testing.T) {
	b := setup(t)
	// Every path the API serves, with the methods it takes (HEAD wherever
	// GET): any other method answers 405 with exactly this Allow.
	paths := []struct {
		path  string
		allow string
	}{
		{"/v1/subscriptions", "GET, HEAD, POST"},
		{"/v1/subscriptions/sub_x", "DELETE, GET, HEAD, PATCH"},
		{"/v1/events", "POST"},
		{"/v1/deliveries", "GET, HEAD"},
		{"/v1/deliveries/dlv_x", "GET, HEAD"},
		{"/v1/deliveries/dlv_x/attempts", "GET, HEAD"},
		{"/v1/deliveries/dlv_x/redeliver", "POST"},
		{"/v1/dead-letters", "GET, HEAD"},
		{"/v1/dead-letters/redrive", "POST"},
		{"/v1/endpoints", "GET, HEAD"},
		{"/v1/endpoints/ep_x", "GET, HEAD, PATCH"},
		{"/v1/endpoints/ep_x/enable", "POST"},
		{"/healthz", "GET, HEAD"},
		{"/readyz", "GET, HEAD"},
		{"/metrics", "GET, HEAD"},
		{"/openapi.yaml", "GET, HEAD"},
	}
	subscription := `{"name": "n", "url": "https://example.com/hook"}`
	asJSON := map[string]string{"Content-Type": "application/json"}
	for _, p := range paths {
		allowed := strings.Split(p.allow, ", ")
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			if slices.Contains(allowed, m) {
				continue
			}
			resp, raw := b.send(m, p.path, asJSON, subscription)
			wantProblem(t, m+" "+p.path, resp, raw, http.StatusMethodNotAllowed)
			if got := resp.Header.Get("Allow"); got != p.allow {
				t.Errorf("%s %s: Allow %q, want %q", m, p.path, got, p.allow)
			}
		}
	}

	// Paths not in canonical form are not cleaned and redirected: 404,
	// naming the clean path.
	for _, path := range []string{
		"/v1//subscriptions", "//v1/subscriptions", "/v1/./subscriptions", "/v1/%2e/subscriptions",
		"/v1/x/../subscriptions", "/v1/subscriptions/.", "/v1/subscriptions//", "/v1/endpoints//enable",
	} {
		for _, m := range []string{"GET", "POST", "DELETE"} {
			resp, raw := b.send(m, path, asJSON, subscription)
			p := wantProblem(t, m+" "+path, resp, raw, http.StatusNotFound)
			if resp.Header.Get("Location") != "" {
				t.Errorf("%s %s: Location %q", m, path, resp.Header.Get("Location"))
			}
			if p != nil && !strings.Contains(p["detail"].(string), "not cleaned") {
				t.Errorf("%s %s: detail %q does not say the path is not cleaned", m, path, p["detail"])
			}
		}
	}
	for _, path := range []string{"/", "/v2/subscriptions", "/v1/subscriptions/", "/v1/subscriptions/x/y", "/v1/endpoints/ep_x/disable"} {
		resp, raw := b.send("POST", path, asJSON, subscription)
		wantProblem(t, "POST "+path, resp, raw, http.StatusNotFound)
	}
	if s := b.state(); strings.Contains(s, `"name":"n"`) {
		t.Fatalf("a refused request created a subscription: %s", s)
	}
}

// TestNetHTTPRefusalsAreProblems sends requests net/http refuses before any
// handler runs to the HTTP server herald serve runs: each is answered with
// a problem document, not net/http's text/plain, and none reaches the API.
func TestNetHTTPRefusalsAreProblems(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	hs := api.NewHTTPServer(b.srv.Handler(), b.srv.API.Logger, api.ConnLimits{Max: server.DefaultConfig().MaxConnections})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	const body = `{"name": "n", "url": "https://example.com/hook"}`
	post := func(requestLine string, header ...string) string {
		return requestLine + "\r\n" + strings.Join(header, "\r\n") + "\r\nContent-Type: application/json\r\nContent-Length: 48\r\n\r\n" + body
	}
	cases := []struct {
		name    string
		request string
		status  int
		detail  string
	}{
		{"request line", "NOT HTTP AT ALL\r\n\r\n", 400, ""},
		{"no Host", post("POST /v1/subscriptions HTTP/1.1", "X: y"), 400, "missing required Host header"},
		{"two Hosts", post("POST /v1/subscriptions HTTP/1.1", "Host: a", "Host: b"), 400, ""},
		{"header name", post("POST /v1/subscriptions HTTP/1.1", "Host: x", "Bad\x01Name: y"), 400, ""},
		{"header value", post("POST /v1/subscriptions HTTP/1.1", "Host: x", "X-Value: a\x01b"), 400, ""},
		{"header line", post("POST /v1/subscriptions HTTP/1.1", "Host: x", "no colon here"), 400, ""},
		{"version", post("POST /v1/subscriptions HTTP/2.0", "Host: x"), 505, "unsupported protocol version"},
		{"transfer encoding", post("POST /v1/subscriptions HTTP/1.1", "Host: x", "Transfer-Encoding: gzip"), 501, "Unsupported transfer encoding"},
		{"expect", post("POST /v1/subscriptions HTTP/1.1", "Host: x", "Expect: coffee"), 417, ""},
		{"header size", post("POST /v1/subscriptions HTTP/1.1", "Host: x", "X-Big: "+strings.Repeat("b", 70<<10)), 431, ""},
	}
	for _, c := range cases {
		resp, raw := rawExchange(t, ln.Addr().String(), c.request)
		p := wantProblem(t, c.name, resp, raw, c.status)
		if p != nil && !strings.Contains(p["detail"].(string), c.detail) {
			t.Errorf("%s: detail %q, want it to say %q", c.name, p["detail"], c.detail)
		}
	}
	if s := b.state(); strings.Contains(s, `"name":"n"`) {
		t.Fatalf("a refused request created a subscription: %s", s)
	}
	if n := strings.Count(logs.String(), `"refused":`); n != len(cases) {
		t.Errorf("%d refused requests logged, want one line each:\n%s", n, logs)
	}

	// The server's own answers pass unchanged, problems included.
	resp, raw := rawExchange(t, ln.Addr().String(), post("POST /v1/subscriptions HTTP/1.1", "Host: x", "Connection: close", "Authorization: Bearer "+adminKey))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a good request: %d %s", resp.StatusCode, raw)
	}
	resp, raw = rawExchange(t, ln.Addr().String(), post("POST /v1/subscriptions HTTP/1.1", "Host: x", "Connection: close", "Authorization: Bearer "+adminKey))
	wantProblem(t, "name taken", resp, raw, http.StatusConflict)
}

// rawExchange writes request on a new connection to addr and reads one
// answer, while the request is still being written if need be (net/http
// answers a too large header before reading all of it).
func rawExchange(t *testing.T, addr, request string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { _, _ = io.WriteString(c, request) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %.60q: %v", request, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// logBuffer is a log destination safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestRequestLog: at debug, each request is a line with what may be
// logged of it, and nothing secret.
func TestRequestLog(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	b.send("GET", "/v1/subscriptions?limit=5&cursor=s3cr3t-cursor&limit=6", map[string]string{"X-Api-Key": "hunter2"}, "")
	b.send("POST", "/v1/subscriptions", map[string]string{"Content-Type": "text/plain"}, "hunter3")

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	want := []map[string]any{
		{"level": "DEBUG", "component": "api", "method": "GET", "path": "/v1/subscriptions", "query": "cursor,limit", "status": 400.0}, // not a cursor this list gives
		{"level": "DEBUG", "component": "api", "method": "POST", "path": "/v1/subscriptions", "status": 415.0},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d request lines, want %d:\n%s", len(lines), len(want), logs)
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, lines[i][k], v)
			}
		}
		if _, ok := lines[i]["query"]; ok != (w["query"] != nil) {
			t.Errorf("line %d: query %v", i, lines[i]["query"])
		}
		for _, k := range []string{"duration", "bytes", "remote"} {
			if lines[i][k] == nil {
				t.Errorf("line %d has no %s: %v", i, k, lines[i])
			}
		}
		if lines[i]["bytes"].(float64) <= 0 || !strings.HasPrefix(lines[i]["remote"].(string), "127.0.0.1:") {
			t.Errorf("line %d: %v", i, lines[i])
		}
	}
	for _, secret := range []string{"s3cr3t", "hunter2", "hunter3", "X-Api-Key"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
}
