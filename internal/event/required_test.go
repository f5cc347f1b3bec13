package event

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// requiredCase is a request that lacks a required attribute, perhaps sent
// under another name, and what its problem must say.
type requiredCase struct {
	name   string
	h      http.Header
	body   string
	field  string
	detail string // the whole detail
}

// requiredCases: in every publish format, a missing required attribute is
// reported before a complaint about another member's name, and names the
// member that looks like it misnamed.
func requiredCases() []requiredCase {
	const noType = `"specversion":"1.0","id":"1","source":"/s"`
	hint := func(sent, attr string) string {
		return attr + " is required; did you mean to send " + sent + " as " + attr + "?"
	}
	batch := header(mediaBatch)
	return []requiredCase{
		{"event_type", structured, `{` + noType + `,"event_type":"t"}`, "type", hint("event_type", "type")},
		{"eventType", structured, `{` + noType + `,"eventType":"t"}`, "type", hint("eventType", "type")},
		{"eventtype, a valid extension name", structured, `{` + noType + `,"eventtype":"t"}`, "type", hint("eventtype", "type")},
		{"Type", structured, `{` + noType + `,"Type":"t"}`, "type", hint("Type", "type")},
		{"tpye", structured, `{` + noType + `,"tpye":"t"}`, "type", hint("tpye", "type")},
		{"event_id", structured, `{"specversion":"1.0","event_id":"1","source":"/s","type":"t"}`, "id", hint("event_id", "id")},
		{"eventID", structured, `{"specversion":"1.0","source":"/s","type":"t","eventID":"1"}`, "id", hint("eventID", "id")},
		{"spec_version", structured, `{"spec_version":"1.0","id":"1","source":"/s","type":"t"}`, "specversion", hint("spec_version", "specversion")},
		{"event_source", structured, `{"specversion":"1.0","id":"1","event_source":"/s","type":"t"}`, "source", hint("event_source", "source")},
		{"the misnamed member after another bad name", structured, `{` + noType + `,"Bad_Name":1,"event_type":"t"}`, "type", hint("event_type", "type")},
		{"no near name", structured, `{` + noType + `,"kind":"t"}`, "type",
			`type is required: the kind of event, such as "com.example.order.created"`},
		{"as application/json", header(mediaJSON), `{` + noType + `,"event_type":"t"}`, "type", hint("event_type", "type")},
		{"batch", batch, `[{` + noType + `,"type":"t"},{` + noType + `,"event_type":"t"}]`, "events[1].type", hint("event_type", "type")},
		{"binary ce-event-type", bin("text/plain", "ce-type", "<delete>", "ce-event-type", "t"), "x", "ce-type", hint("ce-event-type", "ce-type")},
		{"binary ce-eventtype", bin("text/plain", "ce-type", "<delete>", "ce-eventtype", "t"), "x", "ce-type", hint("ce-eventtype", "ce-type")},
		{"binary type without ce-", bin("text/plain", "ce-type", "<delete>", "Type", "t"), "x", "ce-type", hint("type", "ce-type")},
		{"binary ce-event_id", bin("text/plain", "ce-id", "<delete>", "ce-event_id", "1"), "x", "ce-id", hint("ce-event_id", "ce-id")},
		{"binary no near name", bin("text/plain", "ce-source", "<delete>"), "x", "ce-source",
			`ce-source is required: a URI-reference naming where the event happened, such as "/shop/orders"`},
		{"Event Grid type", header(mediaJSON), `{"id":"1","eventType":null,"type":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z","topic":"/t"}`,
			"eventType", hint("type", "eventType")},
		{"Event Grid EventTime after an unknown member", header(mediaJSON), `{"id":"1","eventType":"t","subject":"s","EventTime":"2026-03-01T10:00:00Z","topic":"/t"}`,
			"eventTime", hint("EventTime", "eventTime")},
	}
}

func TestRequiredBeforeOtherNames(t *testing.T) {
	for _, tc := range requiredCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.h, []byte(tc.body))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field || fe.Detail != tc.detail {
				t.Fatalf("field %q detail %q\nwant field %q detail %q", fe.Field, fe.Detail, tc.field, tc.detail)
			}
		})
	}
}

// A name refused for itself is still reported once nothing required is
// missing: the deferral changes the order, not what is refused.
func TestMisnamedMembersStillRefused(t *testing.T) {
	for _, tc := range []struct {
		h           http.Header
		body, field string
	}{
		{structured, `{` + ok + `,"event_type":"t"}`, "event_type"},
		{structured, `{` + ok + `,"a_b":"x","c_d":"y"}`, "a_b"},
		{structured, `{` + ok + `,"ext":{"a":1}}`, "ext"},
		{bin("text/plain", "ce-event_type", "t"), "x", "ce-event_type"},
		{bin("text/plain", "ce-data", "t"), "x", "ce-data"},
		{header(mediaJSON), `{"id":"1","eventType":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z","topic":"/t","type":"t"}`, "type"},
	} {
		_, err := Parse(tc.h, []byte(tc.body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: err = %v, want a problem naming %s", tc.body, err, tc.field)
		}
	}
}

// A JSON object that is no CloudEvent is told what Herald accepts, as one
// event, in a batch and as application/json; one that is a CloudEvent
// lacking only specversion is told to send it.
func TestPlainJSONToldWhatHeraldAccepts(t *testing.T) {
	plain := `{"order_id": 1234, "items": [{"sku": "A-1"}], "total": 9.5}`
	for _, tc := range []struct {
		h           http.Header
		body, field string
	}{
		{structured, plain, "specversion"},
		{header(mediaJSON), plain, "specversion"},
		{header(mediaBatch), "[" + plain + "]", "events[0].specversion"},
		{header(mediaJSON), "[" + plain + "," + plain + "]", "events[0].specversion"},
	} {
		_, err := Parse(tc.h, []byte(tc.body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Fatalf("%s as %s: err = %v, want a problem naming %s", tc.body, tc.h.Get("Content-Type"), err, tc.field)
		}
		for _, want := range []string{"not a CloudEvent", `"specversion": "1.0"`, "application/cloudevents+json", "ce-specversion", "application/cloudevents-batch+json"} {
			if !strings.Contains(fe.Detail, want) {
				t.Errorf("%s: detail %q does not say %q", tc.body, fe.Detail, want)
			}
		}
	}
	_, err := Parse(structured, []byte(`{"id":"1","source":"/s","type":"t"}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "specversion" || fe.Detail != `specversion is required: the CloudEvents version, "1.0"` {
		t.Fatalf("a CloudEvent without specversion: %v", err)
	}
}

// Problems with JSON syntax, kinds of values, base64, percent-encoding and
// URIs name the place at fault in words of their own, not encoding/json's,
// encoding/base64's or net/url's.
func TestSyntaxProblemsInPlainWords(t *testing.T) {
	for _, tc := range []struct {
		h                   http.Header
		body, field, detail string
	}{
		{structured, `{"id":}`, "body", `not valid JSON: expected a value at byte 7 (found '}')`},
		{structured, `{"id":"1",}`, "body", `not valid JSON: expected a member name in double quotes at byte 11 (found '}')`},
		{structured, `{'id':1}`, "body", `not valid JSON: expected a member name in double quotes at byte 2 (found '\'')`},
		{structured, `{"id" 1}`, "body", `not valid JSON: expected ':' after a member name at byte 7 (found '1')`},
		{structured, `{"id":tru}`, "body", `not valid JSON: expected true, false or null at byte 10 (found '}')`},
		{structured, `{"id":"1"} x`, "body", `not valid JSON: expected nothing after the JSON value at byte 12 (found 'x')`},
		{structured, `{"id":"1"`, "body", `not valid JSON: it ends too soon, at byte 9 (a string, array or object is not closed, or a value is missing)`},
		{bin("application/json"), `[1 2]`, "body", `not valid JSON: expected ',' or ']' after an array item at byte 4 (found '2'); content type "application/json" requires JSON`},
		{structured, `{` + ok + `,"data_base64":"AB!D"}`, "data_base64", `not valid base64: found '!' at byte 3; it must be standard base64 (A-Z, a-z, 0-9, + and /), padded with = to a multiple of 4 characters`},
		{structured, `{` + ok + `,"data_base64":"AB"}`, "data_base64", `not valid base64: it must be standard base64 (A-Z, a-z, 0-9, + and /), padded with = to a multiple of 4 characters`},
		{bin("text/plain", "ce-subject", "50%"), "x", "ce-subject", `bad percent-encoding: "%" is not "%" followed by two hexadecimal digits (send a "%" itself as %25)`},
		{structured, `{"specversion":1,"id":"1","source":"/s","type":"t"}`, "specversion", `must be the string "1.0", not a number`},
		{structured, `{"specversion":"1.0","id":"1","source":"/s","type":["t"]}`, "type", `must be a string, not an array`},
		{structured, `{` + ok + `,"data_base64":true}`, "data_base64", `must be a base64 string, not a boolean`},
		{structured, `{"specversion":"1.0","id":"1","source":"a b:c","type":"t"}`, "source",
			`must be a URI-reference such as "/shop/orders" or "urn:example:shop": the part before its first ":" is not a scheme (letters, digits, "+", "-" and "."), ` +
				`and a reference without one may not hold ":" before its first "/": begin it with "/" or "./", or give a scheme`},
		{structured, `{"specversion":"1.0","id":"1","source":"/a%zz","type":"t"}`, "source",
			`must be a URI-reference such as "/shop/orders" or "urn:example:shop": "%zz" is not "%" followed by two hexadecimal digits (send a "%" itself as %25)`},
		{structured, `{"specversion":"1.0","id":"1","source":"http://a b/","type":"t"}`, "source",
			`must be a URI-reference such as "/shop/orders" or "urn:example:shop": its host may not hold " "`},
		{structured, `{` + ok + `,"dataschema":"http://h:x/s"}`, "dataschema",
			`must be an absolute URI such as "https://example.com/schemas/order.json": the port after its host must be digits`},
	} {
		_, err := Parse(tc.h, []byte(tc.body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Detail != tc.detail {
			t.Errorf("%s: err = %v\nwant %s: %s", tc.body, err, tc.field, tc.detail)
		}
	}
}

func TestNearMiss(t *testing.T) {
	for _, tc := range []struct {
		want  string
		names []string
		miss  string
	}{
		{"type", []string{"id", "time", "typ", "kind"}, "typ"},
		{"type", []string{"time", "byte", "types2"}, ""},
		{"id", []string{"uid", "_id"}, "_id"},
		{"id", []string{"idx", "kid"}, ""},
		{"specversion", []string{"version", "cloudEventsVersion"}, ""},
		{"specversion", []string{"specVersoin"}, "specVersoin"},
		{"source", []string{"event", "ce", "Ce-Source"}, "Ce-Source"},
		{"type", []string{"type"}, ""},
	} {
		if got := nearMiss(tc.want, tc.names); got != tc.miss {
			t.Errorf("nearMiss(%q, %q) = %q, want %q", tc.want, tc.names, got, tc.miss)
		}
	}
}
