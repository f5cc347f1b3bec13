package event

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestParseRefusesReservedNames: in every publish format, an event with
// the operational events' source ("/herald", or one under "/herald/") or a
// type beginning with "herald.", in any letter case, is refused, naming
// the field as the format names it (and the event's index in an array);
// with AllowReserved (as filter-test parses) it is accepted. Names that
// only look alike are not reserved.
func TestParseRefusesReservedNames(t *testing.T) {
	structured := header(mediaStructured)
	ce := func(source, typ string) string {
		return `{"specversion":"1.0","id":"1","source":"` + source + `","type":"` + typ + `"}`
	}
	eg := func(topic, typ string) string {
		return `{"id":"1","topic":"` + topic + `","subject":"","eventType":"` + typ + `","eventTime":"2026-01-02T15:04:05Z"}`
	}
	bin := func(source, typ string) http.Header {
		return header("text/plain", "ce-specversion", "1.0", "ce-id", "1", "ce-source", source, "ce-type", typ)
	}
	tests := []refusalCase{
		{"structured source", structured, ce("/herald", "t"), "source", 0, `"/herald" is reserved`},
		{"structured source under /herald/", structured, ce("/herald/x", "t"), "source", 0, `"/herald/x" is reserved`},
		{"structured type", structured, ce("/s", "herald.endpoint.disabled"), "type", 0, `"herald.endpoint.disabled" is reserved`},
		{"structured both: source first", structured, ce("/herald", "herald.endpoint.disabled"), "source", 0, "reserved"},
		{"herald.test is reserved too", structured, ce("/s", "herald.test"), "type", 0, "reserved"},
		{"batch", header(mediaBatch), "[" + ce("/s", "t") + "," + ce("/s", "herald.x") + "]", "events[1].type", 1, "reserved"},
		{"json array", header(mediaJSON), "[" + ce("/s", "t") + "," + ce("/s", "t") + "," + ce("/herald", "t") + "]", "events[2].source", 2, "reserved"},
		{"json object", header(mediaJSON), ce("/s", "herald.delivery.dead_lettered"), "type", 0, "reserved"},
		{"binary source", bin("/herald", "t"), "x", "ce-source", 0, "reserved"},
		{"binary type", bin("/s", "herald.endpoint.enabled"), "x", "ce-type", 0, "reserved"},
		{"binary percent-encoded", bin("%2Fherald", "t"), "x", "ce-source", 0, "reserved"},
		{"event grid topic", header(mediaJSON), eg("/herald", "t"), "topic", 0, "reserved"},
		{"event grid eventType", header(mediaJSON), "[" + eg("/s", "t") + "," + eg("/s", "herald.endpoint.frozen") + "]", "events[1].eventType", 1, "reserved"},
		{"escaped in JSON", structured, `{"specversion":"1.0","id":"1","source":"/s","type":"\u0068erald.x"}`, "type", 0, "reserved"},
		// In any letter case.
		{"structured source in capitals", structured, ce("/HERALD", "t"), "source", 0, `"/HERALD" is reserved`},
		{"structured source under /Herald/", structured, ce("/Herald/x", "t"), "source", 0, "reserved"},
		{"structured type in capitals", structured, ce("/s", "HERALD.endpoint.disabled"), "type", 0, `"HERALD.endpoint.disabled" is reserved`},
		{"mixed case type", structured, ce("/s", "hErAlD.test"), "type", 0, "reserved"},
		{"batch in capitals", header(mediaBatch), "[" + ce("/s", "t") + "," + ce("/s", "Herald.x") + "]", "events[1].type", 1, "reserved"},
		{"json array in capitals", header(mediaJSON), "[" + ce("/HERALD/y", "t") + "]", "events[0].source", 0, "reserved"},
		{"binary source in capitals", bin("/HeRaLd", "t"), "x", "ce-source", 0, "reserved"},
		{"binary type in capitals", bin("/s", "HERALD.endpoint.enabled"), "x", "ce-type", 0, "reserved"},
		{"binary percent-encoded capitals", bin("%2FHERALD", "t"), "x", "ce-source", 0, "reserved"},
		{"event grid topic in capitals", header(mediaJSON), eg("/HERALD", "t"), "topic", 0, "reserved"},
		{"event grid eventType in capitals", header(mediaJSON), eg("/s", "HERALD.endpoint.frozen"), "eventType", 0, "reserved"},
		{"escaped capitals in JSON", structured, `{"specversion":"1.0","id":"1","source":"/s","type":"\u0048ERALD.x"}`, "type", 0, "reserved"},
	}
	checkRefusals(t, tests)
	for _, tt := range tests {
		evs, err := ParseWith(tt.h, []byte(tt.body), ParseOptions{DefaultSource: "/accounts/a", AllowReserved: true})
		if err != nil || len(evs) == 0 {
			t.Errorf("%s with AllowReserved: %v", tt.name, err)
		}
	}
	for _, body := range []string{ce("/heraldry", "t"), ce("/HERALDRY", "t"), ce("herald", "t"), ce("/s/herald", "t"), ce("/s/HERALD", "t"),
		ce("/s", "herald"), ce("/s", "HERALD"), ce("/s", "com.herald.x"), ce("/s", "com.HERALD.x"), ce("/s", "heraldx.y")} {
		if _, err := Parse(structured, []byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// refusalCase is a publish request Parse must refuse, naming field (in the
// event of this index) with a detail that contains detail.
type refusalCase struct {
	name   string
	h      http.Header
	body   string
	field  string
	index  int
	detail string
}

// checkRefusals parses each case (with a default source, as the API
// does) and checks its refusal.
func checkRefusals(t *testing.T, cases []refusalCase) {
	t.Helper()
	for _, tt := range cases {
		evs, err := ParseWith(tt.h, []byte(tt.body), ParseOptions{DefaultSource: "/accounts/a"})
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: accepted (%v): %+v", tt.name, err, evs)
			continue
		}
		if fe.Field != tt.field || fe.Index != tt.index || !strings.Contains(fe.Detail, tt.detail) {
			t.Errorf("%s: got field %q index %d detail %q; want field %q index %d detail containing %q",
				tt.name, fe.Field, fe.Index, fe.Detail, tt.field, tt.index, tt.detail)
		}
	}
}
