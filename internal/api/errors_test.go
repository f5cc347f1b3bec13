package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// Errors say what to do: each class of problem over every route or field
// it concerns, through a real HTTP server on a SQLite store.

// errorsServer is a test server on 127.0.0.1 and a client of it.
type errorsServer struct {
	t   *testing.T
	ts  testServer
	url string
}

func startErrorsServer(t *testing.T) *errorsServer {
	t.Helper()
	ts := setupServer(t)
	hs := httptest.NewServer(ts.handler)
	t.Cleanup(hs.Close)
	return &errorsServer{t: t, ts: ts, url: hs.URL}
}

// send makes a request. A nil body sends none (Content-Length 0);
// chunked sends body with no Content-Length. It returns the status and the
// answer's problem document (zero when the answer is not one).
func (s *errorsServer) send(method, path string, header map[string]string, body []byte, chunked bool) (int, Problem, string) {
	s.t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
		if chunked {
			rd = io.MultiReader(bytes.NewReader(body)) // no length known
		}
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var p Problem
	switch {
	case resp.Header.Get("Content-Type") == "application/problem+json":
		if err := json.Unmarshal(raw, &p); err != nil {
			s.t.Fatalf("%s %s: a problem document that does not decode: %s", method, path, raw)
		}
	case isEventGridPath(path) && resp.StatusCode >= 400:
		p = eventGridProblem(s.t, method+" "+path, resp.StatusCode, raw)
	}
	return resp.StatusCode, p, string(raw)
}

// create makes a resource and returns its id.
func (s *errorsServer) create(path, body string) string {
	s.t.Helper()
	status, _, raw := s.send("POST", path, map[string]string{"Content-Type": "application/json"}, []byte(body), false)
	var out struct {
		ID string `json:"id"`
	}
	if status != http.StatusCreated || json.Unmarshal([]byte(raw), &out) != nil || out.ID == "" {
		s.t.Fatalf("POST %s: %d %s", path, status, raw)
	}
	return out.ID
}

// fillPath fills a route pattern's path with id.
func fillPath(pattern, id string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	return method, regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllString(path, id)
}

// TestOptionalBodyRoutesSaySo: every route of the table whose body is
// optional answers a body sent without application/json (curl -d's form
// type, none at all, text/plain) 415 saying the body is optional and how
// to send it, and takes no body, or application/json with an empty body or
// an object. The other kinds keep their own words.
func TestOptionalBodyRoutesSaySo(t *testing.T) {
	s := startErrorsServer(t)
	pull := s.create("/v1/subscriptions", `{"name": "p", "delivery_mode": "pull"}`)
	const optional = "this request's body is optional: send none, or send a JSON object as application/json"
	const curl = " (curl -d sends application/x-www-form-urlencoded: add -H 'Content-Type: application/json')"
	seen := map[string]bool{}
	for _, rt := range s.ts.srv.routes() {
		if rt.body != optionalBody {
			continue
		}
		seen[rt.pattern] = true
		method, path := fillPath(rt.pattern, pull)
		for _, tc := range []struct {
			ct, body, detail string
		}{
			{"application/x-www-form-urlencoded", `grace=1h`, `content type "application/x-www-form-urlencoded" is not accepted: ` + optional + curl},
			{"", `{}`, "no content type: " + optional},
			{"text/plain", "", `content type "text/plain" is not accepted: ` + optional},
		} {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			status, p, raw := s.send(method, path, map[string]string{"Content-Type": tc.ct}, body, false)
			if status != http.StatusUnsupportedMediaType || p.Field != "content-type" || p.Detail != tc.detail {
				t.Errorf("%s as %q with %q: %d %s\nwant 415 content-type: %s", rt.pattern, tc.ct, tc.body, status, raw, tc.detail)
			}
		}
		for _, tc := range []struct {
			ct, body string
			chunked  bool
		}{{"", "", false}, {"application/json", "", false}, {"application/json", "", true}, {"application/json", " {} ", true}} {
			var body []byte
			if tc.chunked {
				body = []byte(tc.body)
			}
			if status, _, raw := s.send(method, path, map[string]string{"Content-Type": tc.ct}, body, tc.chunked); status >= 300 {
				t.Errorf("%s as %q with %q (chunked %v): %d %s", rt.pattern, tc.ct, tc.body, tc.chunked, status, raw)
			}
		}
	}
	for _, want := range []string{"POST /v1/subscriptions/{id}/secret/rotate", "POST /v1/subscriptions/{id}/receive"} {
		if !seen[want] {
			t.Errorf("%s is not an optionalBody route", want)
		}
	}
	// The other kinds: a JSON body's 415 hints at curl too; a change that
	// takes no body says so.
	for _, rt := range s.ts.srv.routes() {
		method, path := fillPath(rt.pattern, "x_missing")
		var ct, want string
		switch {
		case rt.body == jsonBody:
			ct, want = "application/x-www-form-urlencoded", "the body must be JSON sent as application/json"+curl
		case rt.body == noBody && method != "GET":
			ct, want = "text/plain", "this request takes no body; send no Content-Type, or application/json"
		default:
			continue
		}
		status, p, raw := s.send(method, path, map[string]string{"Content-Type": ct}, []byte("x=1"), false)
		if status != http.StatusUnsupportedMediaType || !strings.HasSuffix(p.Detail, want) {
			t.Errorf("%s as %s: %d %s\nwant 415 ending %q", rt.pattern, ct, status, raw, want)
		}
	}
}

// durationCase is a duration field of a request body: the document's
// schema and property, and the request that carries value in it.
type durationCase struct {
	schema, prop string
	method, path string
	body         func(value string) string
	field        string
	seconds      bool // a retry policy's: a number is seconds
}

// durationCases are the duration fields of every request body; pull is a
// pull subscription's id, push a push subscription's.
func durationCases(push, pull string) []durationCase {
	sub := func(member string) func(string) string {
		return func(v string) string {
			return `{"name": "d", "url": "https://example.com/d", ` + strings.ReplaceAll(member, "%v", v) + `}`
		}
	}
	obj := func(member string) func(string) string {
		return func(v string) string { return "{" + strings.ReplaceAll(member, "%v", v) + "}" }
	}
	subs, one := "/v1/subscriptions", "/v1/subscriptions/"
	return []durationCase{
		{"SubscriptionCreate", "timeout", "POST", subs, sub(`"timeout": %v`), "timeout", false},
		{"SubscriptionUpdate", "timeout", "PATCH", one + push, obj(`"timeout": %v`), "timeout", false},
		{"SecretRotate", "grace", "POST", one + push + "/secret/rotate", obj(`"grace": %v`), "grace", false},
		{"ReceiveRequest", "max_wait", "POST", one + pull + "/receive", obj(`"max_wait": %v`), "max_wait", false},
		{"ReceiveRequest", "lock_duration", "POST", one + pull + "/receive", obj(`"lock_duration": %v`), "lock_duration", false},
		{"RenewLockRequest", "lock_duration", "POST", one + pull + "/renew-lock", obj(`"lock_tokens": ["x"], "lock_duration": %v`), "lock_duration", false},
		{"ReleaseRequest", "delay", "POST", one + pull + "/release", obj(`"lock_tokens": ["x"], "delay": %v`), "delay", false},
		{"RetryPolicy", "ttl", "POST", subs, sub(`"retry_policy": {"ttl": %v}`), "retry_policy.ttl", true},
		{"RetryPolicy", "delays", "POST", subs, sub(`"retry_policy": {"preset": "custom", "delays": [%v]}`), "retry_policy.delays[0]", true},
		{"Backoff", "initial", "POST", subs, sub(`"retry_policy": {"preset": "custom", "backoff": {"initial": %v, "multiplier": 2, "max": "1m"}}`), "retry_policy.backoff.initial", true},
		{"Backoff", "max", "POST", subs, sub(`"retry_policy": {"preset": "custom", "backoff": {"initial": "1s", "multiplier": 2, "max": %v}}`), "retry_policy.backoff.max", true},
	}
}

// documentedDurations are the schema.property of every duration in the
// OpenAPI document (a $ref to GoDuration or PolicyDuration), read from its
// text: a schema is a key indented by four spaces, a property one by eight.
func documentedDurations(t *testing.T) []string {
	t.Helper()
	var out []string
	schema, prop := "", ""
	key := regexp.MustCompile(`^( {4}| {8})([A-Za-z_]+):$`)
	sc := bufio.NewScanner(bytes.NewReader(openAPI))
	for sc.Scan() {
		line := sc.Text()
		if m := key.FindStringSubmatch(line); m != nil {
			if len(m[1]) == 4 {
				schema = m[2]
			} else {
				prop = m[2]
			}
		}
		if strings.Contains(line, "schemas/GoDuration'") || strings.Contains(line, "schemas/PolicyDuration'") {
			if schema != "PolicyDuration" {
				out = append(out, schema+"."+prop)
			}
		}
	}
	return out
}

// TestDurationsShowTheStringToSend: every duration field of every request
// body, given a number or a string without a unit, answers 400 naming the
// field with the string to send; a retry policy's, which reads a number as
// seconds, says so when given something else. The table covers every
// duration the OpenAPI document describes in a request.
func TestDurationsShowTheStringToSend(t *testing.T) {
	s := startErrorsServer(t)
	push := s.create("/v1/subscriptions", `{"name": "s", "url": "https://example.com/hook"}`)
	pull := s.create("/v1/subscriptions", `{"name": "p", "delivery_mode": "pull"}`)
	cases := durationCases(push, pull)
	covered := map[string]bool{"Subscription.timeout": true, "Endpoint.probation_delay": true} // responses
	for _, c := range cases {
		covered[c.schema+"."+c.prop] = true
	}
	for _, d := range documentedDurations(t) {
		if !covered[d] {
			t.Errorf("the document's duration %s has no case in durationCases", d)
		}
	}
	asJSON := map[string]string{"Content-Type": "application/json"}
	for _, c := range cases {
		values := map[string]string{`"30"`: `"30" has no unit: for 30 seconds send "30s"`}
		if c.seconds {
			values["true"] = `must be a duration string such as "90s", or a number of seconds`
		} else {
			values["30"] = `must be a duration string, not a number: for 30 seconds send "30s"`
		}
		for v, want := range values {
			status, p, raw := s.send(c.method, c.path, asJSON, []byte(c.body(v)), false)
			if status != http.StatusBadRequest || p.Field != c.field || !strings.HasPrefix(p.Detail, want) {
				t.Errorf("%s.%s = %s: %d %s\nwant 400 %s: %s…", c.schema, c.prop, v, status, raw, c.field, want)
			}
		}
	}
}

// TestPublishNamesTheMissingAttribute: a publish with event_type for type
// hears that type is required and what it sent instead, in structured,
// binary and batch modes and as application/json; a JSON payload that is
// no CloudEvent hears what Herald accepts; a body that is not JSON the
// byte at fault. Nothing is published.
func TestPublishNamesTheMissingAttribute(t *testing.T) {
	s := startErrorsServer(t)
	s.create("/v1/subscriptions", `{"name": "s", "url": "https://example.com/hook"}`) // what a publish would deliver to
	const attrs = `"specversion": "1.0", "id": "e1", "source": "/shop"`
	hint := "type is required; did you mean to send event_type as type?"
	for _, tc := range []struct {
		name          string
		header        map[string]string
		body          string
		field, detail string
	}{
		{"structured", map[string]string{"Content-Type": "application/cloudevents+json"}, `{` + attrs + `, "event_type": "order.created"}`, "type", hint},
		{"application/json", map[string]string{"Content-Type": "application/json"}, `{` + attrs + `, "event_type": "order.created"}`, "type", hint},
		{"batch", map[string]string{"Content-Type": "application/cloudevents-batch+json"},
			`[{` + attrs + `, "type": "t"}, {"specversion": "1.0", "id": "e2", "source": "/shop", "event_type": "order.created"}]`, "events[1].type", hint},
		{"binary", map[string]string{"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "e1", "ce-source": "/shop", "ce-event_type": "order.created"},
			`{"order": 1}`, "ce-type", "ce-type is required; did you mean to send ce-event_type as ce-type?"},
		{"binary, the type in a header without ce-", map[string]string{"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "e1", "ce-source": "/shop", "Event-Type": "order.created"},
			`{"order": 1}`, "ce-type", "ce-type is required; did you mean to send event-type as ce-type?"},
		{"not JSON", map[string]string{"Content-Type": "application/json"}, `{"specversion": "1.0",}`, "body",
			`not valid JSON: expected a member name in double quotes at byte 23 (found '}')`},
	} {
		status, p, raw := s.send("POST", "/v1/events", tc.header, []byte(tc.body), false)
		if status != http.StatusBadRequest || p.Field != tc.field || p.Detail != tc.detail {
			t.Errorf("%s: %d %s\nwant 400 %s: %s", tc.name, status, raw, tc.field, tc.detail)
		}
	}
	for _, ct := range []string{"application/json", "application/cloudevents+json", "application/cloudevents-batch+json"} {
		body := `{"order_id": 1234, "total": 9.5}`
		field := "specversion"
		if ct == "application/cloudevents-batch+json" {
			body, field = "["+body+"]", "events[0].specversion"
		}
		status, p, raw := s.send("POST", "/v1/events", map[string]string{"Content-Type": ct}, []byte(body), false)
		if status != http.StatusBadRequest || p.Field != field || !strings.HasPrefix(p.Detail, "specversion is required: this is not a CloudEvent. Herald accepts") {
			t.Errorf("plain JSON as %s: %d %s", ct, status, raw)
		}
		for _, way := range []string{`"data": {...}`, "ce-specversion: 1.0", "application/cloudevents-batch+json"} {
			if !strings.Contains(p.Detail, way) {
				t.Errorf("plain JSON as %s: the detail does not show %q: %s", ct, way, p.Detail)
			}
		}
	}
	if _, _, raw := s.send("GET", "/v1/deliveries", nil, nil, false); !strings.Contains(raw, `"data":[]`) {
		t.Errorf("refused publishes made deliveries: %s", raw)
	}
}
