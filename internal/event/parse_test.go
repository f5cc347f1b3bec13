package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// header builds request headers: a content type (omitted when empty) and
// name/value pairs.
func header(contentType string, kv ...string) http.Header {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func mustParse(t *testing.T, h http.Header, body string) []Event {
	t.Helper()
	events, err := Parse(h, []byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return events
}

// roundTrip checks that Marshal output parses back to an identical event and
// that marshaling is stable.
func roundTrip(t *testing.T, e Event) []byte {
	t.Helper()
	b, err := e.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	again := mustParse(t, header(mediaStructured), string(b))
	if len(again) != 1 {
		t.Fatalf("re-parse gave %d events", len(again))
	}
	if !reflect.DeepEqual(again[0], e) {
		t.Fatalf("round trip changed the event\n got %#v\nwant %#v\njson %s", again[0], e, b)
	}
	b2, err := again[0].Marshal()
	if err != nil {
		t.Fatalf("Marshal again: %v", err)
	}
	if string(b2) != string(b) {
		t.Fatalf("Marshal not stable:\n%s\n%s", b, b2)
	}
	return b
}

const fullEvent = `{
  "specversion": "1.0", "id": "evt-1", "source": "/billing", "type": "invoice.paid",
  "subject": "inv/42", "datacontenttype": "application/json",
  "dataschema": "https://example.com/schema.json", "time": "2026-01-02T15:04:05.123+01:00",
  "traceparent": "00-abc", "count": 42, "flag": true, "ratio": -1.5e3,
  "data": { "amount" : 10, "note": "<b>" }
}`

func TestParseStructured(t *testing.T) {
	events := mustParse(t, header("application/cloudevents+json; charset=utf-8"), fullEvent)
	if len(events) != 1 {
		t.Fatalf("got %d events", len(events))
	}
	want := Event{
		SpecVersion: "1.0", ID: "evt-1", Source: "/billing", Type: "invoice.paid",
		Subject: "inv/42", DataContentType: "application/json",
		DataSchema: "https://example.com/schema.json",
		Time:       time.Date(2026, 1, 2, 15, 4, 5, 123e6, time.FixedZone("", 3600)),
		Data:       json.RawMessage(`{"amount":10,"note":"<b>"}`),
		Extensions: map[string]any{
			"traceparent": "00-abc", "count": json.Number("42"), "flag": true, "ratio": json.Number("-1.5e3"),
		},
	}
	if !reflect.DeepEqual(unchecked(events)[0], want) {
		t.Fatalf("got  %#v\nwant %#v", events[0], want)
	}
	b := roundTrip(t, events[0])
	const golden = `{"specversion":"1.0","id":"evt-1","source":"/billing","type":"invoice.paid",` +
		`"subject":"inv/42","datacontenttype":"application/json","dataschema":"https://example.com/schema.json",` +
		`"time":"2026-01-02T15:04:05.123+01:00","count":42,"flag":true,"ratio":-1.5e3,"traceparent":"00-abc",` +
		`"data":{"amount":10,"note":"<b>"}}`
	if string(b) != golden {
		t.Fatalf("Marshal:\n got %s\nwant %s", b, golden)
	}
}

func TestParseMinimalAndNulls(t *testing.T) {
	events := mustParse(t, header(mediaStructured),
		`{"specversion":"1.0","id":"1","source":"s","type":"t","subject":null,"data":null,"ext":null,"time":"2026-01-02T15:04:05Z"}`)
	want := Event{SpecVersion: "1.0", ID: "1", Source: "s", Type: "t",
		Time: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)}
	if !reflect.DeepEqual(unchecked(events)[0], want) {
		t.Fatalf("got %#v", events[0])
	}
	roundTrip(t, events[0])
}

func TestParseBatch(t *testing.T) {
	body := `[{"specversion":"1.0","id":"1","source":"s","type":"a"},
	          {"specversion":"1.0","id":"2","source":"s","type":"b","data":"text","datacontenttype":"text/plain"}]`
	events := mustParse(t, header("application/cloudevents-batch+json; charset=utf-8"), body)
	if len(events) != 2 || events[0].ID != "1" || events[1].Type != "b" || string(events[1].Data) != `"text"` {
		t.Fatalf("got %#v", events)
	}
	for _, e := range events {
		roundTrip(t, e)
	}
}

func TestParseApplicationJSON(t *testing.T) {
	one := mustParse(t, header("Application/JSON"), `{"specversion":"1.0","id":"1","source":"s","type":"a"}`)
	if len(one) != 1 || one[0].ID != "1" {
		t.Fatalf("object: got %#v", one)
	}
	many := mustParse(t, header("application/json"),
		`[{"specversion":"1.0","id":"1","source":"s","type":"a"},{"specversion":"1.0","id":"2","source":"s","type":"a"}]`)
	if len(many) != 2 || many[1].ID != "2" {
		t.Fatalf("array: got %#v", many)
	}
}

func TestParseBinary(t *testing.T) {
	h := header("application/json; charset=utf-8",
		"Ce-Specversion", "1.0", "Ce-Id", "evt-9", "Ce-Source", "https://example.com/src",
		"Ce-Type", "order.created", "Ce-Subject", "caf%C3%A9%20%25%22x%22+y",
		"Ce-Time", "2026-03-04T05:06:07.5-03:30", "Ce-Dataschema", "urn:schema:order",
		"Ce-Traceparent", "00-%E2%9C%93", "Herald-Other", "ignored")
	events := mustParse(t, h, "{ \"a\" : [1, 2] }\n")
	want := Event{
		SpecVersion: "1.0", ID: "evt-9", Source: "https://example.com/src", Type: "order.created",
		Subject: `café %"x"+y`, DataContentType: "application/json; charset=utf-8",
		DataSchema: "urn:schema:order",
		Time:       time.Date(2026, 3, 4, 5, 6, 7, 5e8, time.FixedZone("", -(3*3600+1800))),
		Data:       json.RawMessage(`{"a":[1,2]}`),
		Extensions: map[string]any{"traceparent": "00-✓"},
	}
	if !reflect.DeepEqual(unchecked(events)[0], want) {
		t.Fatalf("got  %#v\nwant %#v", events[0], want)
	}
	roundTrip(t, events[0])
}

func TestParseBinaryJSONContentTypes(t *testing.T) {
	for _, ct := range []string{"application/json", "text/json", "application/vnd.acme+json", "application/cloudevents+json"} {
		h := header(ct, "ce-specversion", "1.0", "ce-id", "1", "ce-source", "s", "ce-type", "t")
		if ct == "application/cloudevents+json" {
			// Structured mode wins over ce-* headers, as the HTTP binding says.
			events := mustParse(t, h, `{"specversion":"1.0","id":"2","source":"s","type":"t"}`)
			if events[0].ID != "2" {
				t.Fatalf("%s: ce headers used instead of the body", ct)
			}
			continue
		}
		events := mustParse(t, h, `{"x":1}`)
		if string(events[0].Data) != `{"x":1}` || events[0].DataBase64 != "" {
			t.Fatalf("%s: got %#v", ct, events[0])
		}
	}
}

func TestParseBinaryNonJSONRoundTripsViaBase64(t *testing.T) {
	body := "\x00\x01binary\xff\xfe"
	h := header("application/octet-stream", "ce-specversion", "1.0", "ce-id", "1", "ce-source", "s", "ce-type", "t")
	events := mustParse(t, h, body)
	e := events[0]
	if e.DataBase64 != "AAFiaW5hcnn//g==" || e.Data != nil || e.DataContentType != "application/octet-stream" {
		t.Fatalf("got %#v", e)
	}
	b := roundTrip(t, e)
	if !strings.Contains(string(b), `"data_base64":"AAFiaW5hcnn//g=="`) {
		t.Fatalf("Marshal: %s", b)
	}

	// Text without a content type is opaque too.
	events = mustParse(t, header("", "ce-specversion", "1.0", "ce-id", "1", "ce-source", "s", "ce-type", "t"), "hello")
	if events[0].DataBase64 != "aGVsbG8=" || events[0].DataContentType != "" {
		t.Fatalf("no content type: got %#v", events[0])
	}
	roundTrip(t, events[0])
}

func TestParseBinaryEmptyBody(t *testing.T) {
	for _, ct := range []string{"application/json", "text/plain", ""} {
		h := header(ct, "ce-specversion", "1.0", "ce-id", "1", "ce-source", "s", "ce-type", "t")
		e := mustParse(t, h, "")[0]
		if e.Data != nil || e.DataBase64 != "" {
			t.Fatalf("%q: got data %#v", ct, e)
		}
		roundTrip(t, e)
	}
}

func TestParseUnsupportedMediaType(t *testing.T) {
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/cloudevents+xml"} {
		_, err := Parse(header(ct), []byte(`{"specversion":"1.0","id":"1","source":"s","type":"t"}`))
		if !errors.Is(err, ErrUnsupportedMediaType) {
			t.Fatalf("%q: err = %v, want ErrUnsupportedMediaType", ct, err)
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "content-type" || fe.Index != -1 {
			t.Fatalf("%q: err = %#v", ct, err)
		}
	}
	// A ce-specversion header makes any content type binary mode, except a
	// structured one Herald does not read.
	h := header("application/cloudevents+xml", "ce-specversion", "1.0", "ce-id", "1", "ce-source", "s", "ce-type", "t")
	if _, err := Parse(h, []byte("<e/>")); !errors.Is(err, ErrUnsupportedMediaType) {
		t.Fatalf("cloudevents+xml with ce headers: err = %v", err)
	}
}

func TestParseBodyTooLarge(t *testing.T) {
	body := make([]byte, MaxBodyBytes+1)
	_, err := Parse(header(mediaStructured), body)
	if !errors.Is(err, ErrBodyTooLarge) || errors.Is(err, ErrUnsupportedMediaType) {
		t.Fatalf("err = %v", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "body" {
		t.Fatalf("err = %#v", err)
	}
}

// batchOf returns a JSON array of n minimal events.
func batchOf(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"e%d","source":"/bench","type":"t","data":{"n":%d}}`, i, i)
	}
	b.WriteByte(']')
	return b.String()
}

func TestParseBatchLimits(t *testing.T) {
	events := mustParse(t, header(mediaBatch), batchOf(MaxBatchEvents))
	if len(events) != MaxBatchEvents || events[999].ID != "e999" || string(events[999].Data) != `{"n":999}` {
		t.Fatalf("got %d events", len(events))
	}
	for _, n := range []int{0, MaxBatchEvents + 1} {
		_, err := Parse(header(mediaBatch), []byte(batchOf(n)))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "body" || fe.Index != -1 {
			t.Fatalf("%d events: err = %#v", n, err)
		}
	}
}

// ok is the required attributes of a structured event, without the braces.
const ok = `"specversion":"1.0","id":"1","source":"s","type":"t"`

// structured is the header of a structured-mode request.
var structured = header(mediaStructured)

// bin is the header of a binary-mode request of content type ct with the
// required attributes, changed by kv (name, value pairs; the value
// "<delete>" removes the header).
func bin(ct string, kv ...string) http.Header {
	base := []string{"ce-specversion", "1.0", "ce-id", "1", "ce-source", "s", "ce-type", "t"}
	h := header(ct, base...)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<delete>" {
			h.Del(kv[i])
			continue
		}
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// parseErrorCase is a request Parse refuses, and the field, index and
// detail of the error it names.
type parseErrorCase struct {
	name      string
	h         http.Header
	body      string
	field     string
	index     int
	detailHas string
}

// parseErrors are the cases of TestParseErrors.
var parseErrors = []parseErrorCase{
	{"not json", structured, `{"id":`, "body", -1, "not valid JSON"},
	{"trailing data", structured, `{` + ok + `} x`, "body", -1, "not valid JSON"},
	{"json string", structured, `"hello"`, "body", -1, "JSON object"},
	{"empty body", structured, ``, "body", -1, "empty"},
	{"invalid utf8", structured, "{" + ok + `,"subject":"` + "\xff" + `"}`, "body", -1, "UTF-8"},
	{"array as structured", structured, `[{` + ok + `}]`, "body", -1, "batch"},
	{"object as batch", header(mediaBatch), `{` + ok + `}`, "body", -1, "array"},
	{"empty batch", header(mediaJSON), `[]`, "body", -1, "no events"},
	{"number as json", header(mediaJSON), `42`, "body", -1, "object or an array"},
	{"missing specversion", structured, `{"id":"1","source":"s","type":"t"}`, "specversion", 0, "required"},
	{"wrong specversion", structured, `{"specversion":"0.3","id":"1","source":"s","type":"t"}`, "specversion", 0, `"1.0"`},
	{"missing id", structured, `{"specversion":"1.0","source":"s","type":"t"}`, "id", 0, "required"},
	{"empty id", structured, `{"specversion":"1.0","id":"","source":"s","type":"t"}`, "id", 0, "required"},
	{"missing source", structured, `{"specversion":"1.0","id":"1","type":"t"}`, "source", 0, "required"},
	{"missing type", structured, `{"specversion":"1.0","id":"1","source":"s"}`, "type", 0, "required"},
	{"type not string", structured, `{"specversion":"1.0","id":"1","source":"s","type":7}`, "type", 0, "must be a string"},
	{"id not string", structured, `{"specversion":"1.0","id":{},"source":"s","type":"t"}`, "id", 0, "must be a string"},
	{"source not uri", structured, `{"specversion":"1.0","id":"1","source":"http://[::1","type":"t"}`, "source", 0, "URI-reference"},
	{"source bad escape", structured, `{"specversion":"1.0","id":"1","source":"/a%zz","type":"t"}`, "source", 0, "URI-reference"},
	{"source bad scheme", structured, `{"specversion":"1.0","id":"1","source":"1a:b","type":"t"}`, "source", 0, `URI-reference such as "/shop/orders" or "urn:example:shop": the part before its first ":" is not a scheme`},
	{"source no scheme", structured, `{"specversion":"1.0","id":"1","source":":b","type":"t"}`, "source", 0, `it begins with ":"; a scheme comes before it`},
	{"dataschema bad scheme", structured, `{` + ok + `,"dataschema":"1x:y"}`, "dataschema", 0, `absolute URI such as "https://example.com/schemas/order.json": the part before its first ":" is not a scheme`},
	{"empty subject", structured, `{` + ok + `,"subject":""}`, "subject", 0, "empty"},
	{"bad time", structured, `{` + ok + `,"time":"yesterday"}`, "time", 0, "RFC 3339"},
	{"time with comma", structured, `{` + ok + `,"time":"2026-01-02T15:04:05,5Z"}`, "time", 0, "RFC 3339"},
	{"time without zone", structured, `{` + ok + `,"time":"2026-01-02T15:04:05"}`, "time", 0, "RFC 3339"},
	{"time not string", structured, `{` + ok + `,"time":1700000000}`, "time", 0, "must be a string"},
	{"relative dataschema", structured, `{` + ok + `,"dataschema":"schemas/x"}`, "dataschema", 0, "absolute URI"},
	{"bad datacontenttype", structured, `{` + ok + `,"datacontenttype":"json"}`, "datacontenttype", 0, "media type"},
	{"data and data_base64", structured, `{` + ok + `,"data":1,"data_base64":"AA=="}`, "data_base64", 0, "mutually exclusive"},
	{"bad base64", structured, `{` + ok + `,"data_base64":"!!!"}`, "data_base64", 0, "base64"},
	{"base64 not string", structured, `{` + ok + `,"data_base64":12}`, "data_base64", 0, "base64"},
	{"uppercase extension", structured, `{` + ok + `,"Foo":"x"}`, "Foo", 0, "lowercase"},
	{"underscore extension", structured, `{` + ok + `,"foo_bar":"x"}`, "foo_bar", 0, "lowercase"},
	{"long extension", structured, `{` + ok + `,"abcdefghijklmnopqrstu":"x"}`, "abcdefghijklmnopqrstu", 0, "20"},
	{"object extension", structured, `{` + ok + `,"ext":{"a":1}}`, "ext", 0, "string, number or boolean"},
	{"array extension", structured, `{` + ok + `,"ext":[1]}`, "ext", 0, "string, number or boolean"},
	{"nul in id", structured, `{"specversion":"1.0","id":"a\u0000","source":"s","type":"t"}`, "id", 0, "control characters"},
	{"escape in type", structured, `{"specversion":"1.0","id":"1","source":"s","type":"t\u001b[31m"}`, "type", 0, "control characters"},
	{"del in source", structured, `{"specversion":"1.0","id":"1","source":"/s\u007f","type":"t"}`, "source", 0, "control characters"},
	{"newline in subject", structured, `{` + ok + `,"subject":"a\nb"}`, "subject", 0, "control characters"},
	{"control in extension", structured, `{` + ok + `,"ext":"\u0007"}`, "ext", 0, "control characters"},
	{"noncharacter in subject", structured, `{` + ok + `,"subject":"\ufdd0"}`, "subject", 0, "noncharacter"},
	{"lone high surrogate", structured, `{"specversion":"1.0","id":"\ud800x","source":"s","type":"t"}`, "id", 0, "unpaired surrogate"},
	{"lone low surrogate", structured, `{` + ok + `,"ext":"\udead"}`, "ext", 0, "unpaired surrogate"},
	{"reversed pair", structured, `{` + ok + `,"subject":"\udc00\ud800"}`, "subject", 0, "unpaired surrogate"},
	{"id too long", structured, `{"specversion":"1.0","id":"` + strings.Repeat("i", MaxIDLen+1) + `","source":"s","type":"t"}`, "id", 0, "at most 512 bytes"},
	{"source too long", structured, `{"specversion":"1.0","id":"1","source":"/` + strings.Repeat("s", MaxSourceLen) + `","type":"t"}`, "source", 0, "at most 1024 bytes"},
	{"type too long", structured, `{"specversion":"1.0","id":"1","source":"s","type":"` + strings.Repeat("t", MaxTypeLen+1) + `"}`, "type", 0, "at most 256 bytes"},
	{"subject too long", structured, `{` + ok + `,"subject":"` + strings.Repeat("s", MaxSubjectLen+1) + `"}`, "subject", 0, "at most 2048 bytes"},
	{"extension too long", structured, `{` + ok + `,"ext":"` + strings.Repeat("x", MaxExtensionValueLen+1) + `"}`, "ext", 0, "at most 1024 bytes"},
	{"extension number too long", structured, `{` + ok + `,"ext":1` + strings.Repeat("0", MaxExtensionValueLen) + `}`, "ext", 0, "at most 1024"},
	{"binary nul in id", bin("text/plain", "ce-id", "a%00"), "x", "ce-id", 0, "control characters"},
	{"binary escape in extension", bin("text/plain", "ce-ext", "%1B[2J"), "x", "ce-ext", 0, "control characters"},
	{"binary long type", bin("text/plain", "ce-type", strings.Repeat("t", MaxTypeLen+1)), "x", "ce-type", 0, "at most 256 bytes"},
	{"repeated member", structured, `{` + ok + `,"id":"2"}`, "id", 0, "repeated"},
	{"second event bad", header(mediaBatch), `[{` + ok + `},{"specversion":"1.0","id":"2","type":"t"}]`, "events[1].source", 1, "required"},
	{"batch element not object", header(mediaJSON), `[{` + ok + `},{` + ok + `},"x"]`, "events[2]", 2, "JSON object"},
	{"batch extension", header(mediaBatch), `[{` + ok + `,"BAD":1}]`, "events[0].BAD", 0, "lowercase"},
	{"binary missing id", bin("text/plain", "ce-id", "<delete>"), "x", "ce-id", 0, "required"},
	{"binary wrong specversion", bin("text/plain", "ce-specversion", "0.3"), "x", "ce-specversion", 0, `"1.0"`},
	{"binary bad time", bin("text/plain", "ce-time", "now"), "x", "ce-time", 0, "RFC 3339"},
	{"binary bad source", bin("text/plain", "ce-source", "http://[::1"), "x", "ce-source", 0, "URI-reference"},
	{"binary bad percent", bin("text/plain", "ce-subject", "50%"), "x", "ce-subject", 0, "percent"},
	{"binary bad utf8", bin("text/plain", "ce-subject", "%FF"), "x", "ce-subject", 0, "UTF-8"},
	{"binary empty subject", bin("text/plain", "ce-subject", ""), "x", "ce-subject", 0, "empty"},
	{"binary datacontenttype header", bin("text/plain", "ce-datacontenttype", "text/plain"), "x", "ce-datacontenttype", 0, "Content-Type"},
	{"binary data header", bin("text/plain", "ce-data", "x"), "x", "ce-data", 0, "reserved"},
	{"binary bad extension", bin("text/plain", "ce-my_ext", "x"), "x", "ce-my_ext", 0, "lowercase"},
	{"binary bad json", bin("application/json"), "{nope", "body", 0, "not valid JSON"},
	{"binary two json values", bin("application/json"), "1 2", "body", 0, "not valid JSON"},
	{"binary bad content type", bin("nonsense"), "x", "content-type", 0, "media type"},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range parseErrors {
		t.Run(tt.name, func(t *testing.T) {
			events, err := Parse(tt.h, []byte(tt.body))
			if err == nil {
				t.Fatalf("accepted: %#v", events)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err %T %v is not a *FieldError", err, err)
			}
			if fe.Field != tt.field || fe.Index != tt.index || !strings.Contains(fe.Detail, tt.detailHas) {
				t.Fatalf("got field %q index %d detail %q; want field %q index %d detail containing %q",
					fe.Field, fe.Index, fe.Detail, tt.field, tt.index, tt.detailHas)
			}
			if errors.Is(err, ErrUnsupportedMediaType) || errors.Is(err, ErrBodyTooLarge) {
				t.Fatalf("ordinary error wraps a sentinel: %v", err)
			}
		})
	}
}

func TestParseBinaryRepeatedHeader(t *testing.T) {
	h := header("text/plain", "ce-specversion", "1.0", "ce-id", "1", "ce-id", "2", "ce-source", "s", "ce-type", "t")
	_, err := Parse(h, []byte("x"))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "ce-id" || !strings.Contains(fe.Detail, "repeated") {
		t.Fatalf("err = %v", err)
	}
	// Header names differing only in case are the same header.
	h = http.Header{"ce-specversion": {"1.0"}, "Ce-Id": {"1"}, "ce-id": {"2"}, "Ce-Source": {"s"}, "Ce-Type": {"t"}}
	if _, err := Parse(h, nil); err == nil || !strings.Contains(err.Error(), "repeated") {
		t.Fatalf("mixed case: err = %v", err)
	}
}

func TestValidateAndMarshalRejectInvalid(t *testing.T) {
	base := Event{ID: "1", Source: "s", Type: "t"}
	tests := []struct {
		name  string
		mod   func(*Event)
		field string
	}{
		{"both data", func(e *Event) { e.Data = json.RawMessage(`1`); e.DataBase64 = "AA==" }, "data_base64"},
		{"bad data", func(e *Event) { e.Data = json.RawMessage(`{`) }, "data"},
		{"non-canonical base64", func(e *Event) { e.DataBase64 = "AA=\n=" }, "data_base64"},
		{"reserved extension", func(e *Event) { e.Extensions = map[string]any{"data": "x"} }, "data"},
		{"extension shadows attribute", func(e *Event) { e.Extensions = map[string]any{"subject": "x"} }, "subject"},
		{"nil extension", func(e *Event) { e.Extensions = map[string]any{"x": nil} }, "x"},
		{"bad number", func(e *Event) { e.Extensions = map[string]any{"x": json.Number("1e")} }, "x"},
		{"invalid utf8", func(e *Event) { e.Type = "\xff" }, "type"},
		{"control character", func(e *Event) { e.Subject = "a\x1b[2Jb" }, "subject"},
		{"C1 control", func(e *Event) { e.ID = "a\u0085" }, "id"},
		{"noncharacter", func(e *Event) { e.Type = "t\uFFFE" }, "type"},
		{"long id", func(e *Event) { e.ID = strings.Repeat("i", MaxIDLen+1) }, "id"},
		{"long extension", func(e *Event) { e.Extensions = map[string]any{"x": strings.Repeat("v", MaxExtensionValueLen+1)} }, "x"},
		{"control in extension", func(e *Event) { e.Extensions = map[string]any{"x": "\x00"} }, "x"},
		{"year 10000", func(e *Event) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "time"},
		{"wrong specversion", func(e *Event) { e.SpecVersion = "0.3" }, "specversion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base
			tt.mod(&e)
			_, err := e.Marshal()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || fe.Index != -1 {
				t.Fatalf("Marshal err = %#v, want field %q", err, tt.field)
			}
		})
	}
	if err := base.Validate(); err == nil {
		t.Fatal("Validate accepted an event without specversion")
	}
}

func TestMarshalConstructedEvent(t *testing.T) {
	e := Event{
		ID: "1", Source: "s", Type: "t", Subject: "a\"b\\c\u00e9</script>",
		Time:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("odd", 90)),
		Extensions: map[string]any{"n": 7, "f": 2.5, "b": false},
	}
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"specversion":"1.0","id":"1","source":"s","type":"t","subject":"a\"b\\cé</script>",` +
		`"time":"2026-01-02T03:02:35Z","b":false,"f":2.5,"n":7}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	got := mustParse(t, header(mediaStructured), string(b))[0]
	if !got.Time.Equal(e.Time) || got.Subject != e.Subject || got.Extensions["n"] != json.Number("7") {
		t.Fatalf("re-parse: %#v", got)
	}
}

func BenchmarkParseBatch100(b *testing.B) {
	body := []byte(batchOf(100))
	h := header(mediaBatch)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Parse(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshal(b *testing.B) {
	events, err := Parse(header(mediaStructured), []byte(fullEvent))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := events[0].Marshal(); err != nil {
			b.Fatal(err)
		}
	}
}

// unchecked returns copies of parsed events without Parse's mark (see
// Event.checked), to compare with events written out in a test.
func unchecked(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		e.checked = false
		out[i] = e
	}
	return out
}
