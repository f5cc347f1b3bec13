package server_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/server"
)

// pushedByEvent maps each single-event push rc received to its event id.
func pushedByEvent(t *testing.T, rc *receiver) map[string]http.Header {
	t.Helper()
	out := make(map[string]http.Header, rc.count())
	for i := 0; i < rc.count(); i++ {
		r := rc.request(i)
		var ev struct{ ID string }
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatalf("push %d: %v: %s", i, err, r.body)
		}
		out[ev.ID] = r.header
	}
	return out
}

// wantHeaders checks h against want: a value, or "" for a header that must
// be absent.
func wantHeaders(t *testing.T, what string, h http.Header, want map[string]string) {
	t.Helper()
	for name, v := range want {
		got, present := h[http.CanonicalHeaderKey(name)]
		switch {
		case v == "" && present:
			t.Errorf("%s: %s = %q, want it left out", what, name, got)
		case v != "" && (len(got) != 1 || got[0] != v):
			t.Errorf("%s: %s = %q, want %q", what, name, got, v)
		}
	}
}

// TestDynamicHeaders: a push carries each dynamic header with the value its
// event gives (an attribute, a nested data path, a number, a boolean) and
// leaves it out when the key is missing, null, an object or an array, or
// holds a control character (logged at debug with the reason, not the
// value); GET shows them and PATCH replaces them as a whole.
func TestDynamicHeaders(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	rc := newReceiver(t, status(http.StatusOK))
	dyn := map[string]string{"X-Tenant": "data.tenant.id", "X-Subject": "subject", "X-Count": "data.n",
		"X-Flag": "data.flag", "X-Obj": "data.tenant", "X-Null": "data.nothing"}
	id := b.subscribe(map[string]any{"name": "dyn", "url": rc.URL, "headers": map[string]string{"X-Static": "s"}, "dynamic_headers": dyn})
	var got struct {
		DynamicHeaders map[string]string `json:"dynamic_headers"`
	}
	if code, raw := b.do("GET", "/v1/subscriptions/"+id, nil, &got); code != 200 || len(got.DynamicHeaders) != len(dyn) || got.DynamicHeaders["X-Tenant"] != "data.tenant.id" {
		t.Fatalf("GET: %d %s", code, raw)
	}
	b.publishAll([]map[string]any{
		{"specversion": "1.0", "id": "full", "source": "/s", "type": "t", "subject": "orders/1",
			"data": map[string]any{"tenant": map[string]any{"id": "acme"}, "n": 42, "flag": true, "nothing": nil}},
		{"specversion": "1.0", "id": "flat", "source": "/s", "type": "t", "data": map[string]any{"tenant": "flat", "n": 1.5}},
		{"specversion": "1.0", "id": "control", "source": "/s", "type": "t", "subject": "s", "data": map[string]any{"tenant": map[string]any{"id": "bad\u0001value"}}},
		{"specversion": "1.0", "id": "array", "source": "/s", "type": "t", "data": map[string]any{"tenant": []any{"a"}}},
	})
	eventually(t, "four pushes", func() bool { return rc.count() == 4 })
	pushes := pushedByEvent(t, rc)
	wantHeaders(t, "full", pushes["full"], map[string]string{"X-Static": "s", "X-Tenant": "acme", "X-Subject": "orders/1",
		"X-Count": "42", "X-Flag": "true", "X-Obj": "", "X-Null": ""})
	wantHeaders(t, "flat", pushes["flat"], map[string]string{"X-Tenant": "", "X-Subject": "", "X-Obj": "flat", "X-Count": "1.5", "X-Flag": ""})
	wantHeaders(t, "control", pushes["control"], map[string]string{"X-Tenant": "", "X-Subject": "s", "X-Obj": ""})
	wantHeaders(t, "array", pushes["array"], map[string]string{"X-Tenant": "", "X-Obj": ""})
	b.settle()
	for _, want := range []string{`"reason":"bad_chars"`, `"reason":"not_scalar"`, `"header":"X-Tenant"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log has no %s line:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), "bad\\u0001value") {
		t.Errorf("the log shows a dynamic header's value:\n%s", logs)
	}

	// PATCH replaces them as a whole; headers alone leave them; {} removes them.
	for _, step := range []struct {
		body string
		want map[string]string
	}{
		{`{"dynamic_headers":{"X-Subject":"subject"}}`, map[string]string{"X-Subject": "subject"}},
		{`{"headers":{"X-Other":"o"}}`, map[string]string{"X-Subject": "subject"}},
		{`{"dynamic_headers":{}}`, map[string]string{}},
	} {
		got.DynamicHeaders = nil
		if code, raw := b.do("PATCH", "/v1/subscriptions/"+id, []byte(step.body), &got); code != 200 || len(got.DynamicHeaders) != len(step.want) ||
			got.DynamicHeaders["X-Subject"] != step.want["X-Subject"] {
			t.Fatalf("PATCH %s: %d %s", step.body, code, raw)
		}
	}
	b.publishAll([]map[string]any{{"specversion": "1.0", "id": "after", "source": "/s", "type": "t", "subject": "x", "data": map[string]any{"tenant": map[string]any{"id": "acme"}}}})
	eventually(t, "the push after the PATCHes", func() bool { return rc.count() == 5 })
	wantHeaders(t, "after", pushedByEvent(t, rc)["after"], map[string]string{"X-Other": "o", "X-Static": "", "X-Tenant": "", "X-Subject": ""})
}

// TestDynamicHeadersInBatches: a batch carries a dynamic header only when
// every event in it gives the same value.
func TestDynamicHeadersInBatches(t *testing.T) {
	b := setup(t, oneAtATime)
	rc, open := gatedReceiver(t, func(int) int { return 200 })
	b.subscribe(map[string]any{"name": "batched", "url": rc.URL, "max_events_per_batch": 10,
		"dynamic_headers": map[string]string{"X-Tenant": "data.tenant", "X-Subject": "subject", "X-Region": "data.region"}})
	b.publish("first", "t")
	eventually(t, "the first event sent", func() bool { return rc.count() == 1 })
	var evs []map[string]any
	for i := range 3 {
		data := map[string]any{"tenant": "acme"}
		if i < 2 {
			data["region"] = "eu"
		}
		evs = append(evs, map[string]any{"specversion": "1.0", "id": "q" + strconv.Itoa(i), "source": "/s", "type": "t",
			"subject": "s" + strconv.Itoa(i), "data": data})
	}
	b.publishAll(evs)
	open()
	eventually(t, "the batch sent", func() bool { return rc.count() == 2 })
	b.settle()
	if got := batchSizes(t, rc, "application/cloudevents-batch+json"); got[1] != 3 {
		t.Fatalf("batch sizes %v, want [1 3]", got)
	}
	wantHeaders(t, "the batch", rc.request(1).header, map[string]string{"X-Tenant": "acme", "X-Subject": "", "X-Region": ""})
}

// nineHeaders is a JSON object of nine headers, X-H0 to X-H8.
func nineHeaders() string {
	var members []string
	for i := range 9 {
		members = append(members, `"X-H`+strconv.Itoa(i)+`":"v"`)
	}
	return "{" + strings.Join(members, ",") + "}"
}

// TestDynamicHeadersInput: bad dynamic headers are refused naming
// dynamic_headers.<Name> (or dynamic_headers for the count), nothing
// changed.
func TestDynamicHeadersInput(t *testing.T) {
	b := setup(t)
	id := b.subscribe(map[string]any{"name": "base", "url": "https://example.com/hook", "headers": map[string]string{"X-Plain": "p"}})
	ten := strings.Replace(nineHeaders(), "{", `{"X-Ten":"v",`, 1)
	refuseMembers(t, b, id, []member{
		{"empty path member", `"dynamic_headers":{"X-Name":"data..id"}`, "dynamic_headers.X-Name", "empty member name"},
		{"data itself", `"dynamic_headers":{"X-Name":"data"}`, "dynamic_headers.X-Name", "is not a key"},
		{"not a key", `"dynamic_headers":{"X-Name":"no such key!"}`, "dynamic_headers.X-Name", "neither a CloudEvents attribute"},
		{"empty key", `"dynamic_headers":{"X-Name":""}`, "dynamic_headers.X-Name", "required"},
		{"reserved name", `"dynamic_headers":{"Webhook-Signature":"subject"}`, "dynamic_headers.Webhook-Signature", "set by Herald"},
		{"content header", `"dynamic_headers":{"Content-Type":"datacontenttype"}`, "dynamic_headers.Content-Type", "is set by Herald"},
		{"bad name", `"dynamic_headers":{"X Y":"subject"}`, "dynamic_headers.X Y", "may hold only"},
		{"in headers too", `"headers":{"X-Dup":"a"},"dynamic_headers":{"x-dup":"subject"}`, "dynamic_headers.x-dup", "also in headers"},
		{"in secret_headers too", `"secret_headers":{"X-Dup":"a"},"dynamic_headers":{"x-dup":"subject"}`, "dynamic_headers.x-dup", "also in secret_headers"},
		{"eleven in all", `"headers":` + ten + `,"dynamic_headers":{"X-Eleven":"subject"}`, "dynamic_headers", "at most 10 headers in all"},
		{"not an object", `"dynamic_headers":["subject"]`, "dynamic_headers", "must be an object"},
	})
	// PATCH counts and compares against the stored headers.
	refuseAll(t, b, []refusal{
		{name: "named like a stored header", method: "PATCH", path: "/v1/subscriptions/" + id,
			body: `{"dynamic_headers":{"x-plain":"subject"}}`, field: "dynamic_headers.x-plain", detail: "also in headers"},
		{name: "ten beside a stored header", method: "PATCH", path: "/v1/subscriptions/" + id,
			body: `{"dynamic_headers":` + ten + `}`, field: "dynamic_headers", detail: "at most 10 headers in all"},
	})
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+id, []byte(`{"dynamic_headers":`+nineHeaders()+`}`), nil); code != 200 {
		t.Fatalf("nine dynamic headers beside one header (10 in all): %d %s", code, raw)
	}
}
