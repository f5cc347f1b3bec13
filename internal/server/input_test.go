package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/server"
)

// The tests in this file send bad input to every route that takes it, one
// table per class of problem, and check for each row that the answer is a
// problem+json document with the expected status and the precise field, in
// plain words, and that nothing was written.

// refusal is one request that must be refused.
type refusal struct {
	name   string
	method string
	path   string
	body   string
	header map[string]string // request headers; Content-Type defaults to application/json
	code   int               // default 400
	field  string
	detail string // a part of the detail
}

// goWording are fragments of Go's own error wording that must not reach a
// client.
var goWording = []string{"json:", "JSON struct", "want a JSON", "Go struct", "unmarshal", "time: ", "strconv.", "reflect", "-2562047h",
	"first path segment", "missing protocol scheme"}

// refuseAll sends each request and checks its refusal and that the state did
// not change.
func refuseAll(t *testing.T, b *bundle, cases []refusal) {
	t.Helper()
	before := b.state()
	for _, c := range cases {
		p := refused(t, b, c)
		if p == nil {
			continue
		}
		if after := b.state(); after != before {
			t.Fatalf("%s: a refused request changed the state:\nbefore %s\nafter  %s", c.name, before, after)
		}
	}
}

// refused sends one request and checks the problem document; it returns the
// document, or nil after reporting a mismatch.
func refused(t *testing.T, b *bundle, c refusal) map[string]any {
	t.Helper()
	if c.code == 0 {
		c.code = http.StatusBadRequest
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, b.api.URL+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	name := fmt.Sprintf("%s (%s %s %.80q)", c.name, c.method, c.path, c.body)
	if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s: %d %s %s; want %d problem+json", name, resp.StatusCode, resp.Header.Get("Content-Type"), raw, c.code)
		return nil
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Errorf("%s: problem %s: %v", name, raw, err)
		return nil
	}
	detail, _ := p["detail"].(string)
	if p["field"] != c.field || !strings.Contains(detail, c.detail) || p["status"] != float64(c.code) {
		t.Errorf("%s: field %q detail %q; want field %q, detail containing %q", name, p["field"], detail, c.field, c.detail)
		return nil
	}
	for _, w := range goWording {
		if strings.Contains(detail, w) {
			t.Errorf("%s: detail %q has Go wording %q", name, detail, w)
		}
	}
	return p
}

// subscriptionRoutes are the two routes that take a subscription body. The
// create route needs a name and a url: body adds them to members that do
// not set them.
type subscriptionRoute struct {
	method, path string
	create       bool
}

func subscriptionRoutes(id string) []subscriptionRoute {
	return []subscriptionRoute{{"POST", "/v1/subscriptions", true}, {"PATCH", "/v1/subscriptions/" + id, false}}
}

func (rt subscriptionRoute) body(members string) string {
	if rt.create && !strings.HasPrefix(members, `"url":`) && !strings.Contains(members, `,"url":`) {
		members = `"url":"https://example.com/fresh",` + members
	}
	if rt.create && !strings.Contains(members, `"name":`) {
		members = `"name":"fresh",` + members
	}
	return "{" + members + "}"
}

// member is one JSON member of a subscription body and the field a refusal
// must name.
type member struct {
	name, json, field, detail string
}

// refuseMembers refuses each member on both subscription routes.
func refuseMembers(t *testing.T, b *bundle, id string, members []member) {
	t.Helper()
	var cases []refusal
	for _, rt := range subscriptionRoutes(id) {
		for _, m := range members {
			cases = append(cases, refusal{name: m.name, method: rt.method, path: rt.path,
				body: rt.body(m.json), field: m.field, detail: m.detail})
		}
	}
	refuseAll(t, b, cases)
}

func TestInputHeaders(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	id := b.subscribe(map[string]any{"name": "h", "url": rc.URL, "headers": map[string]string{"X-Kept": "1"}})

	hdr := func(name, value string) string {
		n, _ := json.Marshal(name)
		v, _ := json.Marshal(value)
		return `"headers":{` + string(n) + `:` + string(v) + `}`
	}
	members := []member{
		{"control characters", `"headers":{"X-A":"v\u0001\u007f"}`, "headers.X-A", "control characters"},
		{"NUL", `"headers":{"X-A":"a\u0000b"}`, "headers.X-A", "control characters"},
		{"CR LF", `"headers":{"X-A":"a\r\nX-B: b"}`, "headers.X-A", "control characters"},
		{"escape", `"headers":{"X-A":"\u001b[31m"}`, "headers.X-A", "control characters"},
		{"DEL", `"headers":{"X-A":"\u007f"}`, "headers.X-A", "control characters"},
		{"C1 control", `"headers":{"X-A":"\u0085"}`, "headers.X-A", "control characters"},
		{"leading space", hdr("X-A", " v"), "headers.X-A", "begin or end"},
		{"trailing tab", `"headers":{"X-A":"v\t"}`, "headers.X-A", "begin or end"},
		{"value too long", hdr("X-A", strings.Repeat("v", 4097)), "headers.X-A", "at most 4096 bytes"},
		{"null value", `"headers":{"X-A":null}`, "headers.X-A", "must be a string, not null"},
		{"number value", `"headers":{"X-A":1}`, "headers.X-A", "must be a string, not a number"},
		{"same name in two cases", `"headers":{"X-A":"1","x-a":"2"}`, "headers.x-a", "repeats the header X-A"},
		{"same name three ways", `"headers":{"x-b":"1","X-B":"2","X-b":"3"}`, "headers.X-b", "repeats the header X-B"},
		{"repeated member", `"headers":{"X-A":"1","X-A":"1"}`, "headers.X-A", "more than once"},
		{"100 KB name", hdr(strings.Repeat("X", 100<<10), "v"), "headers." + strings.Repeat("X", 64) + "...", "at most 256 bytes"},
		{"257-byte name", hdr(strings.Repeat("N", 257), "v"), "headers." + strings.Repeat("N", 64) + "...", "at most 256 bytes"},
		{"space in name", hdr("Bad Name", "v"), "headers.Bad Name", "letters, digits"},
		{"colon in name", hdr("X:A", "v"), "headers.X:A", "letters, digits"},
		{"non-ASCII name", hdr("X-é", "v"), "headers.X-é", "letters, digits"},
		{"empty name", hdr("", "v"), `headers.""`, "must not be empty"},
		{"control in name", `"headers":{"X\u0000A":"v"}`, "headers", "member name must not contain control characters"},
		{"eleven headers", `"headers":{"A1":"","A2":"","A3":"","A4":"","A5":"","A6":"","A7":"","A8":"","A9":"","A10":"","A11":""}`, "headers", "at most 10"},
		{"not an object", `"headers":["X-A"]`, "headers", "must be an object, not an array"},
	}
	// Every name that belongs to the connection, the HTTP client or Herald.
	for _, name := range []string{
		"Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Expect", "Content-Encoding",
		"Connection", "Transfer-Encoding", "TE", "Trailer", "Upgrade", "Http2-Settings", "Host", "Content-Length",
		"Content-Type", "User-Agent", "Webhook-Id", "Webhook-Timestamp", "webhook-signature", "Webhook-Anything",
		"Herald-Delivery-Attempt", "herald-x", "Ce-Id", "CE-SOURCE", "keep-alive", "HOST", "te",
	} {
		members = append(members, member{"reserved " + name, hdr(name, "v"), "headers." + name, "cannot be set"})
	}
	refuseMembers(t, b, id, members)

	// What is allowed arrives as sent: a tab inside a value, the longest
	// value and name, visible non-ASCII bytes.
	long := strings.Repeat("N", 256)
	good := map[string]string{"X-Tab": "a\tb", "X-Long": strings.Repeat("v", 4096), long: "x", "X-Utf8": "café", "X-Empty": ""}
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+id, map[string]any{"headers": good}, nil); code != http.StatusOK {
		t.Fatalf("PATCH good headers: %d %s", code, raw)
	}
	b.publish("h1", "t")
	eventually(t, "the push", func() bool { return rc.count() == 1 })
	got := rc.request(0).header
	for k, v := range good {
		if got.Get(k) != v {
			t.Errorf("header %.20s: got %q, want %q", k, got.Get(k), v)
		}
	}
	if got.Get("X-Kept") != "" {
		t.Error("headers replace the stored ones whole; X-Kept is still sent")
	}
}

func TestInputJSONStrictness(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusNotFound)) // eventgrid dead-letters a 404 at once
	id := b.subscribe(map[string]any{"name": "strict", "url": rc.URL})
	b.publish("dl1", "t")
	eventually(t, "a dead letter", func() bool {
		var dl struct{ Data []any }
		b.do("GET", "/v1/dead-letters?subscription_id="+id, nil, &dl)
		return len(dl.Data) == 1
	})

	// Each route with a body it accepts, and that body's first member.
	routes := []struct {
		method, path, ok, first, value string
	}{
		{"POST", "/v1/subscriptions", `{"name":"n","url":"https://example.com/n"}`, "name", `"n"`},
		{"PATCH", "/v1/subscriptions/" + id, `{"name":"n","timeout":"10s"}`, "name", `"n"`},
		{"POST", "/v1/dead-letters/redrive", `{"subscription_id":"` + id + `","ids":["dlv_x"]}`, "subscription_id", `"` + id + `"`},
	}
	var cases []refusal
	for _, rt := range routes {
		add := func(name, body, field, detail string) {
			cases = append(cases, refusal{name: name, method: rt.method, path: rt.path, body: body, field: field, detail: detail})
		}
		first := `"` + rt.first + `"`
		add("trailing brace", rt.ok+"}", "body", "nothing after it")
		add("trailing object", rt.ok+" {}", "body", "nothing after it")
		add("trailing number", rt.ok+"\n1", "body", "nothing after it")
		add("two objects", rt.ok+rt.ok, "body", "nothing after it")
		add("repeated member", "{"+first+":"+rt.value+","+rt.ok[1:], rt.first, "more than once")
		add("repeated member, same value last", strings.TrimSuffix(rt.ok, "}")+","+first+":"+rt.value+"}", rt.first, "more than once")
		add("member in upper case", "{"+strings.ToUpper(first)+":"+rt.value+"}", strings.ToUpper(rt.first), "case-sensitive: did you mean "+rt.first)
		add("member in title case", "{"+`"`+strings.ToUpper(rt.first[:1])+rt.first[1:]+`"`+":"+rt.value+"}", strings.ToUpper(rt.first[:1])+rt.first[1:], "case-sensitive")
		add("unknown member", strings.TrimSuffix(rt.ok, "}")+`,"surprise":true}`, "surprise", "unknown field")
		add("invalid UTF-8", "{"+first+":\"a\xffb\"}", rt.first, "valid UTF-8")
		add("unpaired surrogate", "{"+first+`:"a\udc00"}`, rt.first, "unpaired surrogate")
		add("raw control character", "{"+first+":\"a\x01\"}", "body", "not valid JSON")
		add("array", `[`+rt.ok+`]`, "body", "must be an object, not an array")
		add("string", `"x"`, "body", "must be an object, not a string")
		add("null", `null`, "body", "must be an object, not null")
		add("empty", ``, "body", "empty")
		add("whitespace", " \n", "body", "empty")
		add("truncated", "{"+first+":", "body", "not valid JSON")
		add("trailing comma", strings.TrimSuffix(rt.ok, "}")+",}", "body", "not valid JSON")
		add("single quotes", `{'`+rt.first+`':1}`, "body", "not valid JSON")
		add("byte order mark", "\xef\xbb\xbf"+rt.ok, "body", "not valid JSON")
		add("deep nesting", strings.TrimSuffix(rt.ok, "}")+`,"x":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+"}", "body", "nest more than 32 deep")
	}
	for _, rt := range subscriptionRoutes(id) {
		add := func(name, members, field, detail string) {
			cases = append(cases, refusal{name: name, method: rt.method, path: rt.path, body: rt.body(members), field: field, detail: detail})
		}
		add("repeated member in retry_policy", `"retry_policy":{"preset":"sap","preset":"sap"}`, "retry_policy.preset", "more than once")
		add("repeated member in backoff", `"retry_policy":{"preset":"custom","max_attempts":3,"backoff":{"initial":"1s","multiplier":2,"max":"1m","max":"1m"}}`, "retry_policy.backoff.max", "more than once")
		add("repeated retry_policy", `"retry_policy":{"preset":"sap"},"retry_policy":{"preset":"sap"}`, "retry_policy", "more than once")
		add("repeated header", `"headers":{"X-A":"1","X-A":"2"}`, "headers.X-A", "more than once")
		add("member in another case in retry_policy", `"retry_policy":{"Preset":"sap"}`, "retry_policy.Preset", "did you mean preset")
		add("member in another case in backoff", `"retry_policy":{"backoff":{"INITIAL":"1s"}}`, "retry_policy.backoff.INITIAL", "did you mean initial")
		add("unknown member in retry_policy", `"retry_policy":{"colour":"red"}`, "retry_policy.colour", "unknown field")
		add("repeated name", `"name":"x","url":"https://example.com/","name":"x"`, "name", "more than once")
	}
	cases = append(cases, refusal{name: "repeated id", method: "POST", path: "/v1/dead-letters/redrive",
		body: `{"ids":["a"],"subscription_id":"` + id + `","ids":["a"]}`, field: "ids", detail: "more than once"})
	refuseAll(t, b, cases)

	// The accepted bodies are accepted, and the dead letter is redriven.
	var rd struct{ Redriven int }
	if code, raw := b.do("POST", "/v1/dead-letters/redrive", []byte(` {"subscription_id": "`+id+`"} `+"\n"), &rd); code != http.StatusAccepted || rd.Redriven != 1 {
		t.Fatalf("redrive: %d %s", code, raw)
	}
}

func TestInputTextFields(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	id := b.subscribe(map[string]any{"name": "text", "url": rc.URL})
	refuseMembers(t, b, id, textMembers())
	refuseAll(t, b, append(redriveTextRefusals(id), publishTextRefusals()...))
	if rc.count() != 0 {
		t.Fatalf("refused publishes reached the endpoint %d times", rc.count())
	}
}

// controlCharacters are JSON escapes of control characters no text field
// takes: NUL, an ANSI escape, DEL, a C1 control, a newline.
var controlCharacters = map[string]string{"NUL": `\u0000`, "ANSI escape": `\u001b[2J`, "DEL": `\u007f`, "C1": `\u0085`, "newline": `\n`}

// textMembers are the subscription members with bad text: each string
// field with each of controlCharacters, and the other refusals of text
// (tabs, invalid UTF-8, blanks, lengths).
func textMembers() []member {
	var members []member
	for what, s := range controlCharacters {
		for _, f := range []struct{ json, field string }{
			{`"name":"a` + s + `"`, "name"},
			{`"event_types":["ok","a` + s + `"]`, "event_types[1]"},
			{`"subject_begins_with":"/a` + s + `"`, "subject_begins_with"},
			{`"subject_ends_with":"` + s + `"`, "subject_ends_with"},
			{`"timeout":"1s` + s + `"`, "timeout"},
			{`"url":"https://example.com/` + s + `"`, "url"},
			{`"retry_policy":{"preset":"sap` + s + `"}`, "retry_policy.preset"},
			{`"retry_policy":{"preset":"custom","max_attempts":2,"delays":["1s","2s` + s + `"]}`, "retry_policy.delays[1]"},
		} {
			members = append(members, member{what + " in " + f.field, f.json, f.field, "control characters"})
		}
	}
	return append(members,
		member{"tab in name", `"name":"a\tb"`, "name", "control characters"},
		member{"tab in event type", `"event_types":["a\tb"]`, "event_types[0]", "control characters"},
		member{"invalid UTF-8 in name", "\"name\":\"a\xc3\"", "name", "valid UTF-8"},
		member{"invalid UTF-8 in event type", "\"event_types\":[\"\xff\"]", "event_types[0]", "valid UTF-8"},
		member{"invalid UTF-8 in subject", "\"subject_ends_with\":\"\xed\xa0\x80\"", "subject_ends_with", "valid UTF-8"},
		member{"unpaired surrogate in name", `"name":"\ud83d"`, "name", "unpaired surrogate"},
		member{"blank name", `"name":" \u00a0 "`, "name", "must not be empty"},
		member{"name too long", `"name":"` + strings.Repeat("n", 201) + `"`, "name", "at most 200 bytes"},
		member{"event type too long", `"event_types":["` + strings.Repeat("t", 257) + `"]`, "event_types[0]", "at most 256 bytes"},
		member{"empty event type", `"event_types":[""]`, "event_types[0]", "must not be empty"},
		member{"subject filter too long", `"subject_begins_with":"` + strings.Repeat("s", 1025) + `"`, "subject_begins_with", "at most 1024 bytes"},
	)
}

// redriveTextRefusals are the redrive bodies of subscription id with
// controlCharacters in their strings.
func redriveTextRefusals(id string) []refusal {
	var cases []refusal
	for what, s := range controlCharacters {
		cases = append(cases,
			refusal{name: what + " in subscription_id", method: "POST", path: "/v1/dead-letters/redrive", body: `{"subscription_id":"` + id + s + `"}`, field: "subscription_id", detail: "control characters"},
			refusal{name: what + " in ids", method: "POST", path: "/v1/dead-letters/redrive", body: `{"subscription_id":"` + id + `","ids":["a","` + s + `"]}`, field: "ids[1]", detail: "control characters"},
		)
	}
	return cases
}

// eventWith is a structured CloudEvent with attr set to value (a JSON
// value).
func eventWith(attr, value string) string {
	members := []string{`"specversion":"1.0"`, `"id":"1"`, `"source":"/s"`, `"type":"t"`}
	i := map[string]int{"id": 1, "source": 2, "type": 3}[attr]
	if i == 0 {
		members = append(members, "")
		i = len(members) - 1
	}
	members[i] = `"` + attr + `":` + value
	return "{" + strings.Join(members, ",") + "}"
}

// publishTextRefusals are publishes with bad CloudEvents attributes, in
// every publish format: control characters, unpaired surrogates,
// noncharacters and lengths over the limits.
func publishTextRefusals() []refusal {
	var cases []refusal
	publish := func(name, ctype, body, field, detail string) {
		cases = append(cases, refusal{name: name, method: "POST", path: "/v1/events", body: body,
			header: map[string]string{"Content-Type": ctype}, field: field, detail: detail})
	}
	for _, attr := range []string{"id", "source", "type", "subject", "myext"} {
		for what, s := range controlCharacters {
			publish(what+" in "+attr, "application/cloudevents+json", eventWith(attr, `"a`+s+`"`), attr, "control characters")
		}
		publish("unpaired surrogate in "+attr, "application/json", eventWith(attr, `"\udfff"`), attr, "unpaired surrogate")
		publish("noncharacter in "+attr, "application/cloudevents+json", eventWith(attr, `"\uffff"`), attr, "noncharacters")
		batch := `[{"specversion":"1.0","id":"0","source":"/s","type":"t"},` + eventWith(attr, `"\u0000"`) + `]`
		publish("NUL in "+attr+" of a batch", "application/cloudevents-batch+json", batch, "events[1]."+attr, "control characters")
	}
	limits := map[string]int{"id": 512, "source": 1024, "type": 256, "subject": 2048, "myext": 1024, "datacontenttype": 256, "dataschema": 2048}
	for attr, n := range limits {
		v := strings.Repeat("a", n+1)
		if attr == "dataschema" {
			v = "https://example.com/" + v
		}
		if attr == "datacontenttype" {
			v = "text/" + v
		}
		publish(attr+" too long", "application/cloudevents+json", eventWith(attr, `"`+v+`"`), attr, fmt.Sprintf("at most %d", n))
	}
	binary := func(name, header, value, detail string) {
		cases = append(cases, refusal{name: name, method: "POST", path: "/v1/events", body: "x",
			header: map[string]string{"Content-Type": "text/plain", "ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "t", header: value},
			field:  strings.ToLower(header), detail: detail})
	}
	binary("binary NUL in id", "ce-id", "a%00", "control characters")
	binary("binary escape in subject", "ce-subject", "%1B[2J", "control characters")
	binary("binary DEL in extension", "ce-myext", "%7F", "control characters")
	binary("binary long type", "ce-type", strings.Repeat("t", 257), "at most 256")
	return cases
}

func TestInputURLs(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	id := b.subscribe(map[string]any{"name": "u", "url": rc.URL})

	urls := []struct{ url, detail string }{
		{"http://127.0.0.1:99999/", "port must be a number from 1 to 65535"},
		{"http://127.0.0.1:65536/", "port must be"},
		{"http://127.0.0.1:0/", "port must be"},
		{"http://example.com:/", "port must be"},
		{"http://[::1]:/", "port must be"},
		{"http://example.com:http/", "not a URL"},
		{"http://:80/", "must name a host"},
		{"http://@/", "must name a host"},
		{"http:///path", "must name a host"},
		{"http://0/", "not a valid IPv4 address"},
		{"http://127.1/", "not a valid IPv4 address"},
		{"http://2130706433/", "not a valid IPv4 address"},
		{"http://0x7f000001/", "not a valid IPv4 address"},
		{"http://0x7f.0.0.1/", "not a valid IPv4 address"},
		{"http://1.2.3.256/", "not a valid IPv4 address"},
		{"http://0.0.0.0:8080/", "unspecified address"},
		{"http://[::]/", "unspecified address"},
		{"http://[::ffff:0.0.0.0]/", "unspecified address"},
		{"http://224.0.0.1/", "multicast"},
		{"http://[ff02::1]/", "multicast"},
		{"http://255.255.255.255/", "broadcast"},
		{"http://exa mple.com/", "not a URL"},
		{"http://example..com/", "not valid"},
		{"http://example.com!/", "not valid"},
		{"http://" + strings.Repeat("a", 64) + ".com/", "1 to 63 bytes"},
		{"ftp://example.com/", "absolute http or https"},
		{"/relative/path", "absolute http or https"},
		{"http:opaque", "absolute http or https"},
		{"example.com/hook", `needs http:// or https:// at its start: "http://example.com/hook" or "https://example.com/hook"`},
		{"localhost:9000/hook", `"http://localhost:9000/hook"`},
		{"127.0.0.1:9000/hook", `"http://127.0.0.1:9000/hook"`},
		{"http://receiver.invalid/", "never resolves"},
		{"https://example.com/#frag", "fragment"},
		{"https://example.com/#", "fragment"},
		{"https://example.com/" + strings.Repeat("p", 2048), "at most 2048 bytes"},
		{"", "absolute http or https"},
		{"https://admin:s3cret@example.com:99999/", "port must be"},
	}
	var members []member
	for _, u := range urls {
		raw, _ := json.Marshal(u.url)
		members = append(members, member{u.url, `"url":` + string(raw), "url", u.detail})
	}
	members = append(members, member{"url not a string", `"url":1`, "url", "must be a string, not a number"})
	refuseMembers(t, b, id, members)
	// A refused URL's password is not echoed.
	p := refused(t, b, refusal{name: "password in a refused url", method: "POST", path: "/v1/subscriptions",
		body: `{"name":"p","url":"https://admin:s3cret@example.com:99999/"}`, field: "url", detail: "port"})
	if strings.Contains(fmt.Sprint(p), "s3cret") {
		t.Fatalf("the problem shows the password: %v", p)
	}

	// Names that are fine.
	for _, u := range []string{"http://127.0.0.1:1/", "http://[::1]:65535/", "https://bücher.example/", "http://my_host.internal./x", "https://example.com:0443/"} {
		var sub struct{ ID string }
		raw, _ := json.Marshal(map[string]any{"url": u})
		if code, body := b.do("PATCH", "/v1/subscriptions/"+id, raw, &sub); code != http.StatusOK {
			t.Errorf("PATCH url %s: %d %s", u, code, body)
		}
	}
}

// TestInputURLSecretsRedacted: a subscription whose url, dead_letter_url
// and auth.token_url carry a secret (a password, or a token as the user
// name) shows each with its secret as xxxxx in every answer: create, list,
// get, PATCH, the endpoints. The subscription read and sent back whole
// (every URL as shown, the auth with its client secret) keeps every
// stored secret: the push still carries the URL's, as basic
// authentication.
func TestInputURLSecretsRedacted(t *testing.T) {
	for _, ui := range userinfos {
		t.Run(ui.name, func(t *testing.T) {
			b := setup(t)
			rc := newReceiver(t, status(200))
			with := func(path string) string {
				return strings.Replace(rc.URL, "http://", "http://"+ui.with("s3cret"), 1) + path
			}
			redacted := func(path string) string { return strings.Replace(rc.URL, "http://", "http://"+ui.shown(""), 1) + path }
			auth := map[string]any{"type": "oauth2_client_credentials", "token_url": with("/token"), "client_id": "c", "client_secret": "s"}

			var sub struct {
				ID, URL    string
				EndpointID string `json:"endpoint_id"`
			}
			code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "pw", "url": with("/hook"),
				"dead_letter_url": with("/dl"), "auth": auth}, &sub)
			answers := map[string]string{"POST /v1/subscriptions": string(raw)}
			if code != http.StatusCreated || sub.URL != redacted("/hook") {
				t.Fatalf("create: %d %s", code, raw)
			}
			get := func(method, path string, body any) {
				code, raw := b.do(method, path, body, nil)
				if code >= 300 {
					t.Fatalf("%s %s: %d %s", method, path, code, raw)
				}
				answers[method+" "+path] = string(raw)
			}
			get("GET", "/v1/subscriptions", nil)
			get("GET", "/v1/subscriptions/"+sub.ID, nil)
			get("PATCH", "/v1/subscriptions/"+sub.ID, map[string]any{"timeout": "5s"})
			for route, body := range answers {
				for _, want := range []string{`"url":"` + redacted("/hook") + `"`, `"dead_letter_url":"` + redacted("/dl") + `"`,
					`"token_url":"` + redacted("/token") + `"`} {
					if strings.Contains(body, "s3cret") || !strings.Contains(body, want) {
						t.Errorf("%s shows %s; want %s", route, body, want)
					}
				}
			}
			get("GET", "/v1/endpoints", nil)
			get("GET", "/v1/endpoints/"+sub.EndpointID, nil)
			get("POST", "/v1/endpoints/"+sub.EndpointID+"/enable", nil)
			for _, route := range []string{"GET /v1/endpoints", "GET /v1/endpoints/" + sub.EndpointID, "POST /v1/endpoints/" + sub.EndpointID + "/enable"} {
				if body := answers[route]; strings.Contains(body, "s3cret") || !strings.Contains(body, `"url":"`+redacted("/hook")+`"`) {
					t.Errorf("%s shows %s; want the url as %s", route, body, redacted("/hook"))
				}
			}

			// Sent back as shown: every secret is kept.
			var shown map[string]any
			if code, raw := b.do("GET", "/v1/subscriptions/"+sub.ID, nil, &shown); code != http.StatusOK {
				t.Fatalf("get: %d %s", code, raw)
			}
			back := shown["auth"].(map[string]any)
			back["client_secret"] = "s"
			if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub.ID, map[string]any{"url": shown["url"],
				"dead_letter_url": shown["dead_letter_url"], "auth": back}, nil); code != http.StatusOK {
				t.Fatalf("PATCH of the URLs as shown: %d %s", code, raw)
			}
			stored, err := b.srv.Store.GetSubscription(context.Background(), sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.URL != with("/hook") || stored.Delivery.DeadLetterURL != with("/dl") || stored.Delivery.Auth.TokenURL != with("/token") {
				t.Fatalf("after the PATCH of the URLs as shown the store holds url %s, dead_letter_url %s, token_url %s; want their secrets kept",
					stored.URL, stored.Delivery.DeadLetterURL, stored.Delivery.Auth.TokenURL)
			}
			// The mask anywhere else is refused.
			refuseAll(t, b, []refusal{{name: "masked url", method: "PATCH", path: "/v1/subscriptions/" + sub.ID,
				body: `{"url":"http://` + ui.shown("") + `example.com/"}`, field: "url", detail: "xxxxx"}})

			// The secret is still stored and sent: Go's client sends it as
			// basic authentication.
			if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub.ID, map[string]any{"auth": nil}, nil); code != http.StatusOK {
				t.Fatalf("PATCH auth null: %d %s", code, raw)
			}
			b.publish("pw1", "t")
			eventually(t, "the push", func() bool { return rc.count() == 1 })
			user, pass, _ := strings.Cut(strings.TrimSuffix(ui.with("s3cret"), "@"), ":")
			want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
			if got := rc.request(0).header.Get("Authorization"); got != want {
				t.Fatalf("Authorization %q, want %q", got, want)
			}
		})
	}
}

// TestURLPasswordNotInLogsOrOperationalEvents: the circuit's log line and
// the operational events name the URL without its password.
func TestURLPasswordNotInLogsOrOperationalEvents(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, func(c *server.Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	ops := b.opsReceiver("herald.endpoint.disabled", "herald.delivery.dead_lettered")
	// 410 disables the endpoint at once; 404 dead-letters at once.
	gone := newReceiver(t, status(http.StatusGone))
	missing := newReceiver(t, status(http.StatusNotFound))
	for name, rc := range map[string]*receiver{"gone": gone, "missing": missing} {
		b.subscribe(map[string]any{"name": name, "url": strings.Replace(rc.URL, "http://", "http://admin:s3cret@", 1) + "/hook"})
	}
	b.publish("e1", "t")
	eventually(t, "the disabled and dead-lettered events", func() bool { return ops.count() == 2 })
	b.settle()
	for i, ev := range opsEvents(t, ops) {
		raw, _ := json.Marshal(ev)
		if strings.Contains(string(raw), "s3cret") || !strings.Contains(string(raw), "admin:xxxxx@") {
			t.Errorf("operational event %d: %s; want the url with its password as xxxxx", i, raw)
		}
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the log shows the password:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "admin:xxxxx@") {
		t.Errorf("the log does not name the endpoint's url:\n%s", logs)
	}
}

func TestInputFieldPathsAndMessages(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	id := b.subscribe(map[string]any{"name": "paths", "url": rc.URL})
	b.subscribe(map[string]any{"name": "billing", "url": rc.URL})

	refuseMembers(t, b, id, []member{
		{"delay overflowing as a string", `"retry_policy":{"delays":["1e308s"]}`, "retry_policy.delays[0]", `"1e308s" is not a duration`},
		{"delay overflowing as a number", `"retry_policy":{"delays":[1e308]}`, "retry_policy.delays[0]", "1e308 seconds is out of range"},
		{"delay out of range as a string", `"retry_policy":{"delays":["1s","9999999999h"]}`, "retry_policy.delays[1]", "out of range"},
		{"negative delay overflowing", `"retry_policy":{"delays":[-1e308]}`, "retry_policy.delays[0]", "out of range"},
		{"delay of the wrong type", `"retry_policy":{"delays":["1s",true]}`, "retry_policy.delays[1]", "must be a duration"},
		{"delay too long", `"retry_policy":{"delays":["1s","721h"]}`, "retry_policy.delays[1]", "must be 0..720h"},
		{"delays not a list", `"retry_policy":{"delays":"1s"}`, "retry_policy.delays", "must be an array, not a string"},
		{"ttl overflowing", `"retry_policy":{"ttl":1e308}`, "retry_policy.ttl", "out of range"},
		{"ttl not a duration", `"retry_policy":{"ttl":"a day"}`, "retry_policy.ttl", "is not a duration"},
		{"backoff initial", `"retry_policy":{"preset":"custom","max_attempts":3,"backoff":{"initial":"x","multiplier":2,"max":"1m"}}`, "retry_policy.backoff.initial", "is not a duration"},
		{"backoff max overflowing", `"retry_policy":{"preset":"custom","max_attempts":3,"backoff":{"initial":"1s","multiplier":2,"max":1e300}}`, "retry_policy.backoff.max", "out of range"},
		{"backoff multiplier", `"retry_policy":{"preset":"custom","max_attempts":3,"backoff":{"initial":"1s","multiplier":"2","max":"1m"}}`, "retry_policy.backoff.multiplier", "must be a number, not a string"},
		{"backoff not an object", `"retry_policy":{"backoff":[]}`, "retry_policy.backoff", "must be an object, not an array"},
		{"max_attempts a string", `"retry_policy":{"max_attempts":"5"}`, "retry_policy.max_attempts", "must be a whole number, not a string"},
		{"max_attempts a fraction", `"retry_policy":{"max_attempts":1.5}`, "retry_policy.max_attempts", "must be a whole number, not 1.5"},
		{"max_attempts too large for any number", `"retry_policy":{"max_attempts":99999999999999999999}`, "retry_policy.max_attempts", "out of range"},
		{"max_attempts out of the preset's range", `"retry_policy":{"max_attempts":31}`, "retry_policy.max_attempts", "must be 1..30 for preset eventgrid, got 31"},
		{"jitter overflowing", `"retry_policy":{"jitter":1e999}`, "retry_policy.jitter", "out of range"},
		{"jitter too large", `"retry_policy":{"jitter":0.6}`, "retry_policy.jitter", "between 0 and 0.5"},
		{"success code out of range", `"retry_policy":{"success_codes":[200,99]}`, "retry_policy.success_codes[1]", "100..599"},
		{"no-retry code of the wrong type", `"retry_policy":{"no_retry_codes":[410,"x"]}`, "retry_policy.no_retry_codes[1]", "must be a whole number, not a string"},
		{"preset unknown", `"retry_policy":{"preset":"nope"}`, "retry_policy.preset", `unknown preset "nope"`},
		{"preset not a string", `"retry_policy":{"preset":1}`, "retry_policy.preset", "must be a string, not a number"},
		{"retry_policy a string", `"retry_policy":"sap"`, "retry_policy", "must be an object, not a string"},
		{"retry_policy a list", `"retry_policy":[]`, "retry_policy", "must be an object, not an array"},
		{"event type a number", `"event_types":["a",2]`, "event_types[1]", "must be a string, not a number"},
		{"event type repeated", `"event_types":["a","b","a"]`, "event_types[2]", `repeats the event type "a"`},
		{"event types a string", `"event_types":"a"`, "event_types", "must be an array, not a string"},
		{"too many event types", `"event_types":[` + strings.TrimSuffix(strings.Repeat(`"t",`, 101), ",") + `]`, "event_types", "at most 100"},
		{"headers a string", `"headers":"X-A: 1"`, "headers", "must be an object, not a string"},
		{"header reserved", `"headers":{"X-A":"1","Host":"x"}`, "headers.Host", "cannot be set"},
		{"dead_letter a string", `"dead_letter":"yes"`, "dead_letter", "must be true or false, not a string"},
		{"dead_letter null is fine but 1 is not", `"dead_letter":1`, "dead_letter", "must be true or false, not a number"},
		{"timeout a number", `"timeout":30`, "timeout", `must be a duration string, not a number: for 30 seconds send "30s"`},
		{"timeout out of range", `"timeout":"99999999999h"`, "timeout", "out of range"},
		{"timeout too short", `"timeout":"1ms"`, "timeout", "must be from 100ms to 5m0s, got 1ms"},
		{"name a number", `"name":7`, "name", "must be a string, not a number"},
		{"subject filter an object", `"subject_begins_with":{}`, "subject_begins_with", "must be a string, not an object"},
	})

	redrive := func(name, body, field, detail string) refusal {
		return refusal{name: name, method: "POST", path: "/v1/dead-letters/redrive", body: body, field: field, detail: detail}
	}
	refuseAll(t, b, []refusal{
		{name: "create without a name", method: "POST", path: "/v1/subscriptions", body: `{"url":"https://example.com/"}`, field: "name", detail: "required"},
		{name: "create without a url", method: "POST", path: "/v1/subscriptions", body: `{"name":"x"}`, field: "url", detail: "required"},
		redrive("ids a string", `{"subscription_id":"`+id+`","ids":"dlv_1"}`, "ids", "must be an array, not a string"),
		redrive("id a number", `{"subscription_id":"`+id+`","ids":["dlv_1",2]}`, "ids[1]", "must be a string, not a number"),
		redrive("subscription_id a number", `{"subscription_id":5}`, "subscription_id", "must be a string, not a number"),
		redrive("subscription_id null", `{"subscription_id":null}`, "subscription_id", "must be a string, not null"),
		redrive("no subscription_id", `{}`, "subscription_id", "required"),
		// A name in use: the 409 quotes the name, whatever it is.
		{name: "create with a name in use", method: "POST", path: "/v1/subscriptions", body: `{"name":"billing","url":"https://example.com/"}`,
			code: http.StatusConflict, field: "name", detail: `a subscription named "billing" already exists`},
		{name: "rename to a name in use", method: "PATCH", path: "/v1/subscriptions/" + id, body: `{"name":"billing"}`,
			code: http.StatusConflict, field: "name", detail: `a subscription named "billing" already exists`},
	})
}

// TestInputQueryParameters: a query parameter value that is not text (a
// control character, invalid UTF-8) or too long is refused on every route
// that reads one, naming the parameter; and redrive ids must be delivery
// ids.
func TestInputQueryParameters(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "q", "url": rc.URL})
	long := strings.Repeat("a", 1025)
	var cases []refusal
	for _, route := range []string{"/v1/subscriptions", "/v1/deliveries", "/v1/dead-letters", "/v1/endpoints",
		"/v1/subscriptions/" + sub, "/v1/deliveries/dlv_00000000000000000000000000/attempts"} {
		for _, param := range []string{"subscription_id", "event_id", "cursor", "status", "limit"} {
			cases = append(cases,
				refusal{name: route + " " + param + " control", method: "GET", path: route + "?" + param + "=a%00b", field: param, detail: "control"},
				refusal{name: route + " " + param + " not utf-8", method: "GET", path: route + "?" + param + "=%ff", field: param, detail: "UTF-8"},
				refusal{name: route + " " + param + " long", method: "GET", path: route + "?" + param + "=" + long, field: param, detail: "at most 1024 bytes"},
			)
		}
		cases = append(cases, refusal{name: route + " bad encoding", method: "GET", path: route + "?a=%zz", field: "query"})
	}
	for i, id := range []string{"", "x", "dlv_short", "sub_00000000000000000000000000", "dlv_0000000000000000000000000\u0000"} {
		body, _ := json.Marshal(map[string]any{"subscription_id": sub, "ids": []string{"dlv_00000000000000000000000000", id}})
		cases = append(cases, refusal{name: fmt.Sprintf("redrive id %d", i), method: "POST", path: "/v1/dead-letters/redrive",
			body: string(body), field: "ids[1]"})
	}
	refuseAll(t, b, cases)
}
