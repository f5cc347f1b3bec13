package event

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const acctSource = "/accounts/acc_1"

func parseEG(t *testing.T, body string) []Event {
	t.Helper()
	events, err := ParseWith(header(mediaJSON), []byte(body), ParseOptions{DefaultSource: acctSource})
	if err != nil {
		t.Fatalf("ParseWith: %v", err)
	}
	return events
}

func TestParseEventGridArray(t *testing.T) {
	body := `[
	  {"id": "e1", "eventType": "Contoso.Items.ItemReceived", "subject": "items/1",
	   "eventTime": "2026-03-01T10:00:00.1234567Z", "data": {"itemSku": "Standard", "n": 1.50},
	   "dataVersion": "2.0", "metadataVersion": "1",
	   "topic": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.EventGrid/topics/contoso"},
	  {"id": "e2", "eventType": "Contoso.Items.ItemSold", "subject": "", "eventTime": "2026-03-01T12:00:00+02:00",
	   "data": "text", "dataVersion": ""},
	  {"id": "e3", "eventType": "Contoso.Ping", "subject": "s", "eventTime": "2026-03-01T10:00:00Z",
	   "data": null, "dataVersion": null, "topic": null, "metadataVersion": null}
	]`
	got := parseEG(t, body)
	want := []Event{
		{
			SpecVersion: "1.0", ID: "e1", Source: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.EventGrid/topics/contoso",
			Type: "Contoso.Items.ItemReceived", Subject: "items/1",
			Time:       time.Date(2026, 3, 1, 10, 0, 0, 123456700, time.UTC),
			Data:       json.RawMessage(`{"itemSku":"Standard","n":1.50}`),
			Extensions: map[string]any{"dataversion": "2.0"},
		},
		{
			SpecVersion: "1.0", ID: "e2", Source: acctSource, Type: "Contoso.Items.ItemSold",
			Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("", 7200)),
			Data: json.RawMessage(`"text"`),
		},
		{
			SpecVersion: "1.0", ID: "e3", Source: acctSource, Type: "Contoso.Ping", Subject: "s",
			Time: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		},
	}
	if !reflect.DeepEqual(unchecked(got), want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
	for _, e := range got {
		roundTrip(t, e)
	}
}

func TestParseEventGridSingleObject(t *testing.T) {
	got := parseEG(t, `{"id":"1","eventType":"t","subject":"sub","eventTime":"2026-03-01T10:00:00Z","data":{"a":1}}`)
	want := Event{SpecVersion: "1.0", ID: "1", Source: acctSource, Type: "t", Subject: "sub",
		Time: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Data: json.RawMessage(`{"a":1}`)}
	if len(got) != 1 || !reflect.DeepEqual(unchecked(got)[0], want) {
		t.Fatalf("got %#v", got)
	}
	// Parse has no default source: the topic is then required.
	_, err := Parse(header(mediaJSON), []byte(`{"id":"1","eventType":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z"}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "topic" || fe.Index != 0 {
		t.Fatalf("Parse without topic: %v", err)
	}
	events := mustParse(t, header(mediaJSON), `{"id":"1","eventType":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z","topic":"/t"}`)
	if events[0].Source != "/t" {
		t.Fatalf("got %#v", events[0])
	}
}

// Event Grid events are read only as application/json; the CloudEvents
// media types keep their meaning.
func TestParseEventGridOnlyAsJSON(t *testing.T) {
	eg := `{"id":"1","eventType":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z","topic":"/t"}`
	for _, tc := range []struct{ ct, body string }{{mediaStructured, eg}, {mediaBatch, "[" + eg + "]"}} {
		_, err := ParseWith(header(tc.ct), []byte(tc.body), ParseOptions{DefaultSource: acctSource})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Index != 0 {
			t.Errorf("%s: err = %v, want the event refused", tc.ct, err)
		}
	}
}

func TestParseEventGridErrors(t *testing.T) {
	const ok = `"id":"1","eventType":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z"`
	const ce = `{"specversion":"1.0","id":"1","source":"s","type":"t"}`
	tests := []struct {
		name, body, field string
		index             int
		detailHas         string
	}{
		{"third event without eventType", `[{` + ok + `},{` + ok + `},{"id":"3","subject":"s","eventTime":"2026-03-01T10:00:00Z","eventType":null}]`,
			"events[2].eventType", 2, "required"},
		{"empty eventType", `{"id":"1","eventType":"","subject":"s","eventTime":"2026-03-01T10:00:00Z"}`, "eventType", 0, "required"},
		{"missing id", `[{"eventType":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z"}]`, "events[0].id", 0, "required"},
		{"missing subject", `[{"id":"1","eventType":"t","eventTime":"2026-03-01T10:00:00Z"}]`, "events[0].subject", 0, "required"},
		{"missing eventTime", `[{"id":"1","eventType":"t","subject":"s"}]`, "events[0].eventTime", 0, "required"},
		{"bad eventTime", `[{"id":"1","eventType":"t","subject":"s","eventTime":"13/08/2020"}]`, "events[0].eventTime", 0, "RFC 3339"},
		{"eventType not string", `[{"id":"1","eventType":7,"subject":"s","eventTime":"2026-03-01T10:00:00Z"}]`, "events[0].eventType", 0, "must be a string"},
		{"dataVersion not string", `[{` + ok + `,"dataVersion":1}]`, "events[0].dataVersion", 0, "must be a string"},
		{"metadataVersion 2", `[{` + ok + `,"metadataVersion":"2"}]`, "events[0].metadataVersion", 0, `"1"`},
		{"empty topic", `[{` + ok + `,"topic":""}]`, "events[0].topic", 0, "empty"},
		{"bad topic", `[{` + ok + `,"topic":"http://[::1"}]`, "events[0].topic", 0, "URI-reference"},
		{"unknown member", `[{` + ok + `,"EventType":"x"}]`, "events[0].EventType", 0, "not a member"},
		{"dead-letter member", `[{` + ok + `,"deadLetterReason":"x"}]`, "events[0].deadLetterReason", 0, "not a member"},
		{"repeated member", `[{` + ok + `,"id":"2"}]`, "events[0].id", 0, "repeated"},
		{"control character in subject", `[{"id":"1","eventType":"t","subject":"a\u0007","eventTime":"2026-03-01T10:00:00Z"}]`, "events[0].subject", 0, "control"},
		{"long eventType", `[{"id":"1","eventType":"` + strings.Repeat("t", MaxTypeLen+1) + `","subject":"s","eventTime":"2026-03-01T10:00:00Z"}]`, "events[0].eventType", 0, "at most 256"},
		{"control character in dataVersion", `[{` + ok + `,"dataVersion":"\u0000"}]`, "events[0].dataVersion", 0, "control"},
		{"unpaired surrogate in id", `[{"id":"\ud800","eventType":"t","subject":"s","eventTime":"2026-03-01T10:00:00Z"}]`, "events[0].id", 0, "surrogate"},
		{"Event Grid after CloudEvents", `[` + ce + `,` + ce + `,{` + ok + `}]`, "events[2]", 2, "an Event Grid event"},
		{"CloudEvent after Event Grid", `[{` + ok + `},` + ce + `]`, "events[1]", 1, "a CloudEvent in an array of Event Grid events"},
		{"eventType with specversion is a CloudEvent", `[{"specversion":"1.0","id":"1","source":"s","type":"t","eventType":"x"}]`, "events[0].eventType", 0, "lowercase"},
		{"not an object among Event Grid events", `[{` + ok + `},1]`, "events[1]", 1, "JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, err := ParseWith(header(mediaJSON), []byte(tt.body), ParseOptions{DefaultSource: acctSource})
			if err == nil {
				t.Fatalf("accepted: %#v", events)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err %T %v", err, err)
			}
			if fe.Field != tt.field || fe.Index != tt.index || !strings.Contains(fe.Detail, tt.detailHas) {
				t.Fatalf("got field %q index %d detail %q; want field %q index %d detail containing %q",
					fe.Field, fe.Index, fe.Detail, tt.field, tt.index, tt.detailHas)
			}
		})
	}
}

// An Event Grid event published to Herald and delivered with the eventgrid
// schema comes out as it went in; as a CloudEvent it round-trips through
// Marshal and Parse.
func TestEventGridRoundTrip(t *testing.T) {
	in := `[{"id":"a1","topic":"/subscriptions/x/topics/y","subject":"orders/7","eventType":"Shop.OrderPlaced",` +
		`"eventTime":"2026-03-01T10:00:00.5Z","data":{"total":12.5,"items":["x","y"]},"dataVersion":"3","metadataVersion":"1"},` +
		`{"id":"a2","topic":"/subscriptions/x/topics/y","subject":"orders/8","eventType":"Shop.OrderPlaced",` +
		`"eventTime":"2026-03-01T10:00:01Z","data":"plain","dataVersion":"","metadataVersion":"1"}]`
	events := parseEG(t, in)
	items := make([]Item, len(events))
	for i, e := range events {
		p := roundTrip(t, e)
		items[i] = Item{Payload: p, DeliveryID: "d", Attempt: 1, PublishedAt: time.Now()}
	}
	enc, err := Encode(SchemaEventGrid, Target{SubscriptionName: "s", Batch: true}, items)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(enc.Body, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered\n%s\npublished\n%s", enc.Body, in)
	}
	// And the delivered body can be published to Herald again unchanged.
	again := parseEG(t, string(enc.Body))
	if !reflect.DeepEqual(again, events) {
		t.Fatalf("republished: %#v", again)
	}
}
