package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPublishRefusesReservedNamesAndRepeatedMembers: through the API, in
// every publish format, an event that takes the operational events' source
// or type, or whose data repeats a member name, is refused with a problem
// naming the field (with the event's index in an array), and nothing is
// delivered. filter-test still takes an operational event: it publishes
// nothing.
func TestPublishRefusesReservedNamesAndRepeatedMembers(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "everything", "url": rc.URL})
	ops := b.subscribe(map[string]any{"name": "ops", "url": rc.URL, "event_types": []string{"herald.endpoint.disabled", "herald.test"}})

	const ok = `"specversion":"1.0","id":"1","source":"/s","type":"t"`
	ce := func(source, typ, data string) string {
		return `{"specversion":"1.0","id":"1","source":"` + source + `","type":"` + typ + `","data":` + data + `}`
	}
	eg := func(topic, typ, data string) string {
		return `{"id":"1","topic":"` + topic + `","subject":"","eventType":"` + typ + `","eventTime":"2026-01-02T15:04:05Z","data":` + data + `}`
	}
	bin := func(source, typ, ct string) map[string]string {
		return map[string]string{"Content-Type": ct, "ce-specversion": "1.0", "ce-id": "1", "ce-source": source, "ce-type": typ}
	}
	structured := map[string]string{"Content-Type": "application/cloudevents+json"}
	batch := map[string]string{"Content-Type": "application/cloudevents-batch+json"}
	var cases []refusal
	add := func(name string, header map[string]string, body, field, detail string) {
		cases = append(cases, refusal{name: name, method: "POST", path: "/v1/events", body: body, header: header, field: field, detail: detail})
	}
	// Reserved names.
	add("source /herald", structured, ce("/herald", "t", "1"), "source", `"/herald" is reserved`)
	add("source under /herald/", structured, ce("/herald/endpoints", "t", "1"), "source", "reserved")
	add("type herald.*", structured, ce("/s", "herald.endpoint.disabled", "1"), "type", `"herald.endpoint.disabled" is reserved`)
	add("type herald.test", structured, ce("/s", "herald.test", "1"), "type", "reserved")
	add("batch", batch, "["+ce("/s", "t", "1")+","+ce("/s", "herald.endpoint.disabled", "1")+"]", "events[1].type", "reserved")
	add("json array", nil, "["+ce("/herald", "t", "1")+"]", "events[0].source", "reserved")
	add("binary source", bin("/herald", "t", "text/plain"), "x", "ce-source", "reserved")
	add("binary type", bin("/s", "herald.delivery.dead_lettered", "text/plain"), "x", "ce-type", "reserved")
	add("event grid topic", nil, eg("/herald", "t", "1"), "topic", "reserved")
	add("event grid eventType", nil, "["+eg("/s", "t", "1")+","+eg("/s", "herald.endpoint.disabled", "1")+"]", "events[1].eventType", "reserved")
	// Repeated members.
	add("data", structured, ce("/s", "t", `{"a":1,"a":2}`), "data.a", "repeated member")
	add("nested data", structured, ce("/s", "t", `{"x":{"a":1,"b":2,"a":1}}`), "data.x.a", "repeated member")
	add("data in an array", batch, "["+ce("/s", "t", "1")+","+ce("/s", "t", `{"x":[{},{"a":1,"\u0061":2}]}`)+"]", "events[1].data.x[1].a", "repeated member")
	add("json array data", nil, "["+ce("/s", "t", `{"a":{"b":1,"b":2}}`)+"]", "events[0].data.a.b", "repeated member")
	add("binary body", bin("/s", "t", "application/json"), `{"x":{"a":1,"a":2}}`, "body.x.a", "repeated member")
	add("event grid data", nil, "["+eg("/s", "t", `{"a":1,"a":2}`)+"]", "events[0].data.a", "repeated member")
	add("envelope", structured, `{`+ok+`,"type":"u"}`, "type", "repeated member")
	refuseAll(t, b, cases)
	if rc.count() != 0 {
		t.Fatalf("refused publishes reached the endpoint %d times", rc.count())
	}

	var a struct{ Matches bool }
	if code, raw := b.do("POST", "/v1/subscriptions/"+ops+"/filter-test",
		map[string]any{"specversion": "1.0", "id": "1", "source": "/herald", "type": "herald.endpoint.disabled"}, &a); code != http.StatusOK || !a.Matches {
		t.Fatalf("filter-test of an operational event: %d %s", code, raw)
	}
	// What only looks like a reserved name is published.
	for _, ev := range []string{ce("/heraldry", "heraldic.t", "1"), ce("/s/herald", "com.herald.t", `{"a":{"a":1}}`)} {
		resp, raw := b.send("POST", "/v1/events", structured, ev)
		if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(raw), `"duplicate":false`) {
			t.Fatalf("publish %s: %d %s", ev, resp.StatusCode, raw)
		}
	}
}
