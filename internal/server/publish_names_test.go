package server_test

import (
	"encoding/json"
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

// TestPublishRefusesReservedNamesInAnyCase: the operational events'
// source and type prefix are reserved in any letter case, on every publish
// route: POST /v1/events (structured, batch, binary, Event Grid schema),
// an Event Grid topic's POST /api/events (Event Grid schema, CloudEvents)
// and a namespace topic's POST /topics/{topic}:publish. Each refusal names
// the field, in the route's error form, and nothing is delivered: not to a
// subscription of every type, nor to one whose case-insensitive advanced
// filter takes types beginning with "herald." or sources beginning with
// "/herald". What only looks alike is published (to the subscription of
// every type alone).
func TestPublishRefusesReservedNamesInAnyCase(t *testing.T) {
	b := setup(t)
	tn := newTenant(b, "shop")
	rc := newReceiver(t, status(200))
	for name, body := range map[string]map[string]any{
		"everything": {"url": rc.URL},
		"herald-filter": {"url": rc.URL, "advanced_filters": []map[string]any{
			{"operator_type": "StringBeginsWith", "key": "type", "values": []string{"herald."}}}},
		"herald-source": {"url": rc.URL, "advanced_filters": []map[string]any{
			{"operator_type": "StringBeginsWith", "key": "source", "values": []string{"/herald"}}}},
	} {
		body["name"] = name
		if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions", body, nil); code != http.StatusCreated {
			t.Fatalf("subscription %s: %d %s", name, code, raw)
		}
	}
	const structured, jsonType = "application/cloudevents+json", "application/json"
	ce, eg := reservedCE, reservedEG
	type publish = reservedPublish
	cases := reservedNamePublishes()
	for _, c := range cases {
		header := map[string]string{"Content-Type": c.ct}
		if c.path == "/v1/events" {
			header["Authorization"] = "Bearer " + tn.pubKey
		} else {
			header["Authorization"] = "SharedAccessKey " + tn.pubKey
		}
		for k, v := range c.header {
			header[k] = v
		}
		resp, raw := b.send("POST", c.path, header, c.body)
		var answer struct {
			Field, Detail string
			Error         struct{ Message string }
		}
		_ = json.Unmarshal(raw, &answer)
		field, detail := answer.Field, answer.Detail
		if c.path != "/v1/events" { // Event Grid's error form: the field first in the message
			field, detail, _ = strings.Cut(answer.Error.Message, ": ")
		}
		if resp.StatusCode != http.StatusBadRequest || field != c.field || !strings.Contains(detail, "is reserved") {
			t.Errorf("POST %s (%s) %s: %d %s; want 400 naming %s as reserved", c.path, c.ct, c.body, resp.StatusCode, raw, c.field)
		}
	}
	// What only looks like a reserved name is published, on every route.
	for _, c := range []publish{
		{"/v1/events", structured, ce("/s/HERALD", "com.HERALD.t"), nil, ""},
		{"/api/events", jsonType, eg("HERALD", "HERALD"), nil, ""},
		{"/topics/shop:publish", structured, ce("/s", "Heraldx.t"), nil, ""},
	} {
		auth := "SharedAccessKey " + tn.pubKey
		if c.path == "/v1/events" {
			auth = "Bearer " + tn.pubKey
		}
		if resp, raw := b.send("POST", c.path, map[string]string{"Content-Type": c.ct, "Authorization": auth}, c.body); resp.StatusCode/100 != 2 {
			t.Errorf("POST %s %s: %d %s; want it published", c.path, c.body, resp.StatusCode, raw)
		}
	}
	b.settle()
	eventually(t, "the look-alikes delivered to the subscription of every type", func() bool { return rc.count() == 3 })
	b.settle()
	if rc.count() != 3 {
		t.Fatalf("%d pushes; want the 3 look-alikes to the subscription of every type alone", rc.count())
	}
}

// reservedCE is a structured CloudEvent of source and typ.
func reservedCE(source, typ string) string {
	return `{"specversion":"1.0","id":"1","source":"` + source + `","type":"` + typ + `","data":1}`
}

// reservedEG is an Event Grid event array of one event of topic and typ.
func reservedEG(topic, typ string) string {
	return `[{"id":"1","topic":"` + topic + `","subject":"s","eventType":"` + typ + `","eventTime":"2026-01-02T15:04:05Z","data":1,"dataVersion":"1"}]`
}

// reservedPublish is one publish of TestPublishRefusesReservedNamesInAnyCase:
// its route, content type, body, extra headers and the field its refusal
// names.
type reservedPublish struct {
	path, ct, body string
	header         map[string]string
	field          string
}

// reservedNamePublishes are the publishes of reserved names in other
// letter cases, every route and format, each with the field its refusal
// names.
func reservedNamePublishes() []reservedPublish {
	ce, eg := reservedCE, reservedEG
	type publish = reservedPublish
	const structured, batch, jsonType = "application/cloudevents+json", "application/cloudevents-batch+json", "application/json"
	var cases []publish
	for _, source := range []string{"/HERALD", "/Herald/endpoints", "/hErAlD"} {
		cases = append(cases,
			publish{"/v1/events", structured, ce(source, "t"), nil, "source"},
			publish{"/v1/events", batch, "[" + ce("/s", "t") + "," + ce(source, "t") + "]", nil, "events[1].source"},
			publish{"/v1/events", "text/plain", "x", map[string]string{"ce-specversion": "1.0", "ce-id": "1", "ce-source": source, "ce-type": "t"}, "ce-source"},
			publish{"/v1/events", jsonType, eg(source, "t"), nil, "events[0].topic"},
			publish{"/api/events", jsonType, eg(source, "t"), nil, "events[0].topic"},
			publish{"/api/events", structured, ce(source, "t"), nil, "source"},
			publish{"/topics/shop:publish", structured, ce(source, "t"), nil, "source"},
			publish{"/topics/shop:publish", batch, "[" + ce(source, "t") + "]", nil, "events[0].source"},
		)
	}
	for _, typ := range []string{"HERALD.endpoint.disabled", "Herald.test", "hErAlD.delivery.dead_lettered"} {
		cases = append(cases,
			publish{"/v1/events", structured, ce("/s", typ), nil, "type"},
			publish{"/v1/events", batch, "[" + ce("/s", typ) + "]", nil, "events[0].type"},
			publish{"/v1/events", "text/plain", "x", map[string]string{"ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": typ}, "ce-type"},
			publish{"/v1/events", jsonType, eg("/s", typ), nil, "events[0].eventType"},
			publish{"/api/events", jsonType, eg("/s", typ), nil, "events[0].eventType"},
			publish{"/api/events", structured, ce("/s", typ), nil, "type"},
			publish{"/topics/shop:publish", structured, ce("/s", typ), nil, "type"},
			publish{"/topics/shop:publish", batch, "[" + ce("/s", "t") + "," + ce("/s", typ) + "]", nil, "events[1].type"},
		)
	}
	return cases
}
