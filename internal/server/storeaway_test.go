package server_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// storeFree are the routes that answer without the store: liveness, the
// OpenAPI document, the metrics (whose store gauges are left out while
// the store does not answer: internal/api/metrics.go), and the preview of
// a subscription not saved (it reads nothing stored).
var storeFree = map[string]bool{"GET /healthz": true, "GET /openapi.yaml": true, "GET /metrics": true, "POST /v1/filter-test": true}

// TestStoreAwayEveryRoute stops the PostgreSQL of the test's own under a
// running server and walks the API's route table, each route with ids of
// real resources and a body it takes: every route that needs the store
// answers 503 problem+json with Retry-After (never 500), /readyz says it is
// not ready and why, a key the server has not seen yet gets 503 (not 401),
// and the console's pages answer 503 with Retry-After too. Once the server
// is back the same process publishes again.
func TestStoreAwayEveryRoute(t *testing.T) {
	pg := pgtest.OwnServer(t)
	b := setup(t, func(c *server.Config) { c.Store = pg.URL() })
	tn := newTenant(b, "away")
	rcv := newReceiver(t, status(200))
	push := b.subscribe(map[string]any{"name": "push", "url": rcv.URL})
	pull := b.subscribe(map[string]any{"name": "pull", "delivery_mode": "pull"})
	b.publish("e1", "t")
	dlv := b.only(push).ID
	ep := b.endpointOf(push)
	_, keyID := newKey(b, adminKey, "", "publish")
	var job struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions/"+push+"/recover", map[string]any{"since": "2026-01-01T00:00:00Z"}, &job); code != http.StatusAccepted {
		t.Fatalf("recover: %d %s", code, raw)
	}
	var src struct{ ID string }
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": "nats://127.0.0.1:1", "subject": "a"}, &src); code != http.StatusCreated {
		t.Fatalf("create source: %d %s", code, raw)
	}
	ids := map[string]string{"sources": src.ID, "accounts": tn.id, "keys": keyID, "subscriptions": push, "deliveries": dlv, "endpoints": ep, "validation": push, "jobs": job.ID,
		"event-types": "away.type"}
	// The Event Grid namespace routes: the topic is an account, the
	// subscription a pull subscription of it.
	eventGrid := strings.NewReplacer("{topic}", tn.id, "{subscription}", pullSubscription(b, tn.accountKey, "eg"))
	queueRoute := regexp.MustCompile(`/(receive|acknowledge|release|reject|renew-lock)$`)
	cookie := consoleSignIn(t, b)

	pg.Stop("fast")
	for _, page := range []string{"/console/", "/console/subscriptions", "/console/subscriptions/" + push,
		"/console/deliveries", "/console/deliveries/" + dlv, "/console/dead-letters", "/console/endpoints"} {
		req, _ := http.NewRequest("GET", b.api.URL+page, nil)
		req.AddCookie(cookie)
		resp, raw := do(t, req)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" ||
			!strings.Contains(string(raw), "The store is unavailable; retry shortly.") {
			t.Errorf("console %s while the store is away: %d Retry-After %q, want 503 with Retry-After 5 saying the store is unavailable:\n%.600s",
				page, resp.StatusCode, resp.Header.Get("Retry-After"), raw)
		}
	}
	for _, rt := range b.srv.API.Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		kind := strings.Split(path, "/")[min(2, len(strings.Split(path, "/"))-1)]
		id := ids[kind]
		if queueRoute.MatchString(path) {
			id = pull
		}
		path = regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllString(eventGrid.Replace(path), id)
		path += awayQuery[rt.Pattern]
		for try := range 2 { // the first may meet a pooled connection the server ended
			resp, raw := b.send(method, path, map[string]string{"Content-Type": "application/json"},
				strings.ReplaceAll(awayBody[rt.Pattern], "SUB", push))
			switch {
			case storeFree[rt.Pattern]:
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s (call %d): %d %s, want 200: it needs no store", rt.Pattern, try+1, resp.StatusCode, raw)
				}
			case resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" ||
				resp.Header.Get("Content-Type") != awayType(path, raw):
				t.Errorf("%s %s (call %d): %d Retry-After %q %s\nwant 503 problem+json with Retry-After 5", method, path, try+1,
					resp.StatusCode, resp.Header.Get("Retry-After"), raw)
			case rt.Pattern == "GET /readyz" && !strings.Contains(string(raw), "not ready: the store does not answer: the store is unavailable"):
				t.Errorf("/readyz while the store is away: %s, want the reason", raw)
			}
		}
	}
	// A key not yet in the authenticator's cache cannot be checked: 503,
	// not 401 (it may well be valid).
	if code, raw := b.doAs(tn.pubKey, "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "e2", "source": "/s", "type": "t"}, nil); code != http.StatusServiceUnavailable {
		t.Errorf("a key unseen while the store is away: %d %s, want 503", code, raw)
	}
	pg.Start()
	waitReady(t, b)
	b.publish("e3", "t")
}

// awayBody is a body each route that takes one accepts, so that the
// request reaches the store (SUB: a subscription's id).
var awayBody = map[string]string{
	"POST /v1/filter-test":                    `{"event": {"specversion": "1.0", "id": "x", "source": "/s", "type": "t"}, "subscription": {"name": "x", "url": "http://127.0.0.1:1/"}}`,
	"POST /v1/accounts":                       `{"name": "another"}`,
	"POST /v1/event-types":                    `{"name": "away.type"}`,
	"POST /v1/sources":                        `{"type": "nats", "url": "nats://127.0.0.1:1", "subject": "b"}`,
	"PATCH /v1/sources/{id}":                  `{"subject": "c"}`,
	"PATCH /v1/event-types/{name}":            `{"description": "d"}`,
	"PATCH /v1/accounts/{id}":                 `{"name": "renamed"}`,
	"POST /v1/keys":                           `{"role": "publish", "name": "k"}`,
	"POST /v1/subscriptions":                  `{"name": "new", "delivery_mode": "pull"}`,
	"PATCH /v1/subscriptions/{id}":            `{"event_types": ["x"]}`,
	"POST /v1/subscriptions/{id}/filter-test": `{"event": {"specversion": "1.0", "id": "f", "source": "/s", "type": "t"}}`,
	"POST /v1/subscriptions/{id}/acknowledge": `{"lock_tokens": ["tok"]}`,
	"POST /v1/subscriptions/{id}/release":     `{"lock_tokens": ["tok"]}`,
	"POST /v1/subscriptions/{id}/reject":      `{"lock_tokens": ["tok"]}`,
	"POST /v1/subscriptions/{id}/renew-lock":  `{"lock_tokens": ["tok"]}`,
	"POST /v1/subscriptions/{id}/receive":     `{"max_wait": "0s"}`,
	"POST /v1/events":                         `{"specversion": "1.0", "id": "away", "source": "/s", "type": "t"}`,
	"POST /v1/dead-letters/redrive":           `{"subscription_id": "SUB"}`,
	"POST /v1/portal-sessions":                `{}`,
	"POST /v1/subscriptions/{id}/recover":     `{"since": "2026-01-01T00:00:00Z"}`,
	"POST /api/events":                        `[{"id": "away-eg", "eventType": "t", "subject": "/s", "eventTime": "2026-01-01T00:00:00Z", "data": {}, "dataVersion": "1"}]`,
	"POST /topics/{topic}:publish":            `{"specversion": "1.0", "id": "away-ns", "source": "/s", "type": "t"}`,
	"POST /topics/{topic}/eventsubscriptions/{subscription}:acknowledge": `{"lockTokens": ["tok"]}`,
	"POST /topics/{topic}/eventsubscriptions/{subscription}:release":     `{"lockTokens": ["tok"]}`,
	"POST /topics/{topic}/eventsubscriptions/{subscription}:reject":      `{"lockTokens": ["tok"]}`,
	"POST /topics/{topic}/eventsubscriptions/{subscription}:renewLock":   `{"lockTokens": ["tok"]}`,
}

// awayType is the media type of a 503 on path: Event Grid's error form
// (an "error" object with the code ServiceUnavailable) on the Event Grid
// routes, problem+json on every other.
func awayType(path string, raw []byte) string {
	if !strings.HasPrefix(path, "/api/") && !strings.HasPrefix(path, "/topics/") {
		return "application/problem+json"
	}
	if !strings.Contains(string(raw), `"code":"ServiceUnavailable"`) {
		return "an Event Grid error with the code ServiceUnavailable"
	}
	return "application/json"
}

// awayQuery is the query each route that needs one takes.
var awayQuery = map[string]string{"GET /v1/validation/{id}": "?code=x"}

// waitReady waits for /readyz to answer 200.
func waitReady(t *testing.T, b *bundle) {
	t.Helper()
	eventually(t, "/readyz to answer 200 again", func() bool {
		code, _ := b.doAs("", "GET", "/readyz", nil, nil)
		return code == http.StatusOK
	})
}

// consoleSignIn signs in to the console with the admin key and returns the
// session's cookie.
func consoleSignIn(t *testing.T, b *bundle) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("POST", b.api.URL+"/console/login", strings.NewReader("key="+adminKey))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, raw := do(t, req)
	for _, c := range resp.Cookies() {
		if c.Name == "herald_session" {
			return c
		}
	}
	t.Fatalf("console sign-in: %d, no session cookie: %.300s", resp.StatusCode, raw)
	return nil
}

// do sends req without following redirects and reads the answer.
func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}
