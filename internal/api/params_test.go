package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/account"
)

// paramsClient sends requests to a real server of the API on 127.0.0.1
// (auth off: every request is an admin's).
type paramsClient struct {
	t   *testing.T
	srv *httptest.Server
	ts  testServer
}

func newParamsClient(t *testing.T) paramsClient {
	ts := setupServer(t)
	srv := httptest.NewServer(ts.handler)
	t.Cleanup(srv.Close)
	return paramsClient{t: t, srv: srv, ts: ts}
}

// send sends method path?query with an empty JSON object as the body of a
// change, and returns the status and the problem document (zero when the
// answer is not one).
func (c paramsClient) send(method, path, query string) (int, Problem) {
	c.t.Helper()
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, c.srv.URL+path+"?"+query, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p Problem
	switch {
	case resp.Header.Get("Content-Type") == "application/problem+json":
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			c.t.Fatalf("%s %s: problem: %v", method, path, err)
		}
	case isEventGridPath(strings.TrimPrefix(path, c.srv.URL)) && resp.StatusCode >= 400:
		raw, _ := io.ReadAll(resp.Body)
		p = eventGridProblem(c.t, method+" "+path, resp.StatusCode, raw)
	}
	return resp.StatusCode, p
}

// eventGridProblem reads an Event Grid error as the problem it was made
// from: the field its message begins with, the rest as its detail.
func eventGridProblem(t *testing.T, what string, status int, raw []byte) Problem {
	t.Helper()
	var e eventGridError
	if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("%s: %d, not an Event Grid error (%v): %s", what, status, err, raw)
	}
	p := Problem{Status: status, Detail: e.Error.Message}
	if field, detail, ok := strings.Cut(e.Error.Message, ": "); ok && !strings.Contains(field, " ") {
		p.Field, p.Detail = field, detail
	}
	return p
}

// routePath fills a route pattern's {id} with an id of the kind its path
// takes (one that exists nowhere), and returns the method and path.
func routePath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	id := "x_missing"
	if kind := pathIDOf(pattern); kind != nil {
		id = kind.also
		if id == "" {
			id = kind.shape.Prefix + strings.Repeat("0", kind.shape.Len)
		}
	}
	path = strings.Replace(path, "{topic}", account.DefaultID, 1)
	path = strings.Replace(path, "{subscription}", "x_missing", 1)
	return method, strings.Replace(path, "{id}", id, 1)
}

// TestEveryRouteRefusesUnknownQueryParameters walks the route table: every
// route answers a query parameter it does not declare with 400 naming it
// and listing those it takes, and lets each one it declares through (it
// may refuse its value, never the name). A new route is covered as soon as
// it is in the table.
func TestEveryRouteRefusesUnknownQueryParameters(t *testing.T) {
	c := newParamsClient(t)
	routes := c.ts.srv.routes()
	if len(routes) < 30 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		method, path := routePath(rt.pattern)
		code, p := c.send(method, path, "bogus_param=1")
		if code != http.StatusBadRequest || p.Field != "bogus_param" || !strings.Contains(p.Detail, rt.pattern) {
			t.Errorf("%s with ?bogus_param=1: %d %+v; want 400 naming bogus_param", rt.pattern, code, p)
			continue
		}
		for _, param := range rt.params() {
			if !strings.Contains(p.Detail, param.name) {
				t.Errorf("%s: the detail %q does not list %s, a parameter it takes", rt.pattern, p.Detail, param.name)
			}
			code, p := c.send(method, path, param.name+"=1")
			if code == http.StatusBadRequest && strings.HasPrefix(p.Detail, "unknown query parameter") {
				t.Errorf("%s refuses %s, a parameter it declares: %+v", rt.pattern, param.name, p)
			}
		}
		if len(rt.params()) == 0 && !strings.Contains(p.Detail, "takes no query parameters") {
			t.Errorf("%s takes no query parameters, but the detail says %q", rt.pattern, p.Detail)
		}
	}
}

// TestQueryParameterRefusals: near misses name the likely parameter, a
// parameter given twice or a value a filter does not take is refused
// naming it, account_id is taken only where the route acts in an account,
// and a name where a subscription id goes points to ?name=.
func TestQueryParameterRefusals(t *testing.T) {
	c := newParamsClient(t)
	cases := []struct {
		path, query, field, detail string
	}{
		{"/v1/deliveries", "subscription=billing", "subscription", "did you mean subscription_id?"},
		{"/v1/deliveries", "event=e1", "event", "did you mean event_id?"},
		{"/v1/deliveries", "state=pending", "state", "did you mean status?"},
		{"/v1/deliveries", "Status=pending", "Status", "did you mean status?"},
		{"/v1/endpoints", "next_cursor=ep_x", "next_cursor", "did you mean cursor?"},
		{"/v1/endpoints", "status=disabled", "status", "did you mean state? GET /v1/endpoints takes account_id, state, limit, cursor"},
		{"/v1/endpoints", "state=off", "state", `must be one of enabled, probation, disabled, frozen, not "off"`},
		{"/v1/accounts", "account_id=acc_default", "account_id", "GET /v1/accounts takes limit, cursor"},
		{"/healthz", "verbose=1", "verbose", "GET /healthz takes no query parameters"},
		{"/v1/deliveries", "limit=1&limit=2", "limit", "more than once"},
		{"/v1/deliveries", "status=failed", "status", "must be one of pending, delivered, dead_lettered, dropped, queued"},
		{"/v1/deliveries", "subscription_id=billing", "subscription_id",
			`takes a subscription id, and "billing" is not one (subscription ids are sub_ and 26 characters); to find a subscription by its name: GET /v1/subscriptions?name=billing`},
		{"/v1/dead-letters", "subscription_id=" + url.QueryEscape("my billing"), "subscription_id", "GET /v1/subscriptions?name=my+billing"},
		{"/v1/dead-letters", "subscription_id=sub_short", "subscription_id", "(subscription ids are sub_ and 26 characters); GET /v1/subscriptions lists them"},
	}
	for _, tc := range cases {
		code, p := c.send("GET", tc.path, tc.query)
		if code != http.StatusBadRequest || p.Field != tc.field || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("GET %s?%s: %d %+v; want 400 naming %s, the detail holding %q", tc.path, tc.query, code, p, tc.field, tc.detail)
		}
	}
	// Not near enough for a guess.
	if _, p := c.send("GET", "/v1/deliveries", "sub=x"); strings.Contains(p.Detail, "did you mean") {
		t.Errorf("?sub= on deliveries: %q guesses", p.Detail)
	}
}

// TestPathIDsOfTheWrongShape: a path {id} that cannot be an id of its kind
// answers 404 saying so and where to find one; for a subscription, by name.
func TestPathIDsOfTheWrongShape(t *testing.T) {
	c := newParamsClient(t)
	cases := []struct {
		method, path, detail string
	}{
		{"GET", "/v1/subscriptions/billing", `no subscription "billing": it is not a subscription id (subscription ids are sub_ and 26 characters); to find a subscription by its name: GET /v1/subscriptions?name=billing`},
		{"POST", "/v1/subscriptions/billing/reactivate", "GET /v1/subscriptions?name=billing"},
		{"GET", "/v1/subscriptions/sub_123", "(subscription ids are sub_ and 26 characters); GET /v1/subscriptions lists them"},
		{"GET", "/v1/deliveries/e1", `no delivery "e1": it is not a delivery id (delivery ids are dlv_ and 26 characters); GET /v1/deliveries lists them`},
		{"GET", "/v1/endpoints/example.com", "(endpoint ids are ep_ and 20 characters)"},
		{"DELETE", "/v1/keys/hk_secret", "(key ids are key_ and 26 characters); GET /v1/keys lists them (an id names a key; it is not the key itself)"},
		{"GET", "/v1/accounts/tenant", "(account ids are acc_ and 26 characters, or acc_default)"},
	}
	for _, tc := range cases {
		code, p := c.send(tc.method, tc.path, "")
		if code != http.StatusNotFound || p.Type != probNotFound || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s %s: %d %+v; want 404 holding %q", tc.method, tc.path, code, p, tc.detail)
		}
	}
	// An id of the shape that names nothing is the plain 404.
	if code, p := c.send("GET", "/v1/subscriptions/sub_"+strings.Repeat("0", 26), ""); code != http.StatusNotFound || p.Detail != "subscription not found" {
		t.Errorf("a missing subscription: %d %+v", code, p)
	}
	// account_id too, for the admin that names an account.
	if code, p := c.send("GET", "/v1/subscriptions", "account_id=tenant"); code != http.StatusNotFound || p.Field != "account_id" || !strings.Contains(p.Detail, "GET /v1/accounts lists them") {
		t.Errorf("?account_id=tenant: %d %+v", code, p)
	}
}
