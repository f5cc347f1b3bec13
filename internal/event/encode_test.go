package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/datadriven"
)

func init() {
	// -update is another name for datadriven's -rewrite: go test
	// ./internal/event -run Golden -update rewrites testdata/encode.
	flag.BoolVar(datadriven.Rewrite, "update", false, "rewrite the golden files of testdata/encode (same as -rewrite)")
}

// Defaults of the golden files' commands.
const (
	goldenAccount      = "acc_golden"
	goldenSubscription = "orders-eu"
	goldenPublished    = "2026-05-04T10:00:00.25Z"
)

// TestEncodeGolden runs testdata/encode/*.txt. Each case is a command
//
//	encode schema=S [batch] [attempt=N,N...] [published=T] [account=A] [subscription=N]
//	deadletter schema=S [reason=R] [tries=N] [outcome=O] [status=N] [last=T] [attempt=N] [published=T]
//
// with one event a line as input (a CloudEvent or an Event Grid event, read
// by ParseWith as application/json with the default source
// /accounts/acc_golden, then stored with Marshal: delivery i is dlv_i),
// and the request as output: its content type, the schema's headers in
// order, and the body byte for byte (Go-quoted when it is not one line of
// UTF-8).
func TestEncodeGolden(t *testing.T) {
	datadriven.Walk(t, "testdata/encode/*.txt", func(t *testing.T, path string) {
		datadriven.RunFile(t, path, func(c *datadriven.Case) (string, error) {
			fields := strings.Fields(c.Cmd)
			a := datadriven.ParseArgs(fields[1:], "batch")
			schema, _ := a.Value("schema")
			tg := Target{AccountID: goldenAccount, SubscriptionName: goldenSubscription, Batch: a.Flag("batch")}
			if v, ok := a.Value("account"); ok {
				tg.AccountID = v
			}
			if v, ok := a.Value("subscription"); ok {
				tg.SubscriptionName = v
			}
			published := goldenPublished
			if v, ok := a.Value("published"); ok {
				published = v
			}
			pub, err := time.Parse(time.RFC3339Nano, published)
			if err != nil {
				return "", err
			}
			var attempts []int
			if v, ok := a.Value("attempt"); ok {
				for s := range strings.SplitSeq(v, ",") {
					n, err := strconv.Atoi(s)
					if err != nil {
						return "", fmt.Errorf("attempt=%s: %v", v, err)
					}
					attempts = append(attempts, n)
				}
			}
			items, err := goldenItems(c.Input, pub, attempts)
			if err != nil {
				return "", err
			}
			var enc Encoded
			switch fields[0] {
			case "encode":
				if err := a.Unused(); err != nil {
					return "", err
				}
				enc, err = Encode(schema, tg, items)
			case "deadletter":
				dl := DeadLetterInfo{Reason: "MaxDeliveryAttemptsExceeded"}
				if v, ok := a.Value("reason"); ok {
					dl.Reason = v
				}
				if dl.Attempts, err = a.Int("tries", 1); err != nil {
					return "", err
				}
				dl.LastOutcome, _ = a.Value("outcome")
				if dl.LastStatusCode, err = a.Int("status", 0); err != nil {
					return "", err
				}
				if v, ok := a.Value("last"); ok {
					if dl.LastAttemptAt, err = time.Parse(time.RFC3339Nano, v); err != nil {
						return "", err
					}
				}
				if err := a.Unused(); err != nil {
					return "", err
				}
				if len(items) != 1 {
					return "", fmt.Errorf("deadletter takes one event")
				}
				enc, err = EncodeDeadLetter(schema, tg, items[0], dl)
			default:
				return "", fmt.Errorf("unknown command %q", fields[0])
			}
			if err != nil {
				return "error: " + err.Error(), nil
			}
			return renderEncoded(enc), nil
		})
	})
}

// goldenItems stores each input line as Herald would: parsed, then
// marshaled.
func goldenItems(lines []string, published time.Time, attempts []int) ([]Item, error) {
	var items []Item
	for i, line := range lines {
		events, err := ParseWith(header(mediaJSON), []byte(line), ParseOptions{DefaultSource: "/accounts/" + goldenAccount})
		if err != nil {
			return nil, fmt.Errorf("input line %d: %v", i+1, err)
		}
		if len(events) != 1 {
			return nil, fmt.Errorf("input line %d: one event a line", i+1)
		}
		p, err := events[0].Marshal()
		if err != nil {
			return nil, err
		}
		it := Item{Payload: p, DeliveryID: "dlv_" + strconv.Itoa(i+1), Attempt: 1, PublishedAt: published}
		if i < len(attempts) {
			it.Attempt = attempts[i]
		}
		items = append(items, it)
	}
	return items, nil
}

// renderEncoded writes a request as the golden files show it.
func renderEncoded(enc Encoded) string {
	var b strings.Builder
	ct := enc.ContentType
	if ct == "" {
		ct = "(none)"
	}
	fmt.Fprintf(&b, "content-type: %s\n", ct)
	for _, h := range enc.Header {
		if h[1] == "" { // no trailing space for an editor to strip
			fmt.Fprintf(&b, "%s:\n", h[0])
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", h[0], h[1])
	}
	switch {
	case len(enc.Body) == 0:
		b.WriteString("body: (empty)")
	case utf8.Valid(enc.Body) && !bytes.ContainsAny(enc.Body, "\r\n"):
		fmt.Fprintf(&b, "body: %s", enc.Body)
	default:
		fmt.Fprintf(&b, "body (Go-quoted): %q", enc.Body)
	}
	return b.String()
}

// readSeed reads testdata/seed/NAME, a JSON example copied from Azure Event
// Grid's delivery documentation: eventgrid-event.json and
// eventgrid-deadletter.json are its Event Grid schema event and dead-letter
// event, cloudevents-event.json and cloudevents-deadletter.json its
// CloudEvents 1.0 ones (the dead letter without the trailing comma that
// makes the documentation's text invalid JSON), and custom-deadletter.json
// its custom-schema dead-letter event.
func readSeed(t *testing.T, name string) (map[string]any, []byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/seed/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m, b
}

// compareWithSeed checks got against the seed's example want field by
// field: every field of want is in got with an equal value of the same JSON
// type, and got has no other fields but extra.
func compareWithSeed(t *testing.T, got, want map[string]any, extra ...string) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("field %q missing (seed: %v)", k, w)
			continue
		}
		if reflect.TypeOf(g) != reflect.TypeOf(w) {
			t.Errorf("field %q: type %T, seed's %T", k, g, w)
			continue
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("field %q: %v, seed's %v", k, g, w)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok && !slices.Contains(extra, k) {
			t.Errorf("field %q not in the seed's example", k)
		}
	}
}

// storeOne parses body as application/json (CloudEvent or Event Grid event)
// and returns the stored payload.
func storeOne(t *testing.T, body []byte) []byte {
	t.Helper()
	events, err := ParseWith(header(mediaJSON), body, ParseOptions{DefaultSource: "/accounts/acc_seed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("%d events", len(events))
	}
	p, err := events[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decodeOneEventGrid decodes an Event Grid body, which must be an array of
// one event.
func decodeOneEventGrid(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var arr []map[string]any
	if err := json.Unmarshal(body, &arr); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if len(arr) != 1 {
		t.Fatalf("body holds %d events, want 1: %s", len(arr), body)
	}
	return arr[0]
}

func mustTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// An Event Grid publisher's event, published to Herald and delivered with
// the eventgrid schema, arrives as the seed shows it: same fields, same
// values, same JSON types.
func TestEncodeEventGridMatchesSeed(t *testing.T) {
	want, raw := readSeed(t, "eventgrid-event.json")
	p := storeOne(t, raw)
	enc, err := Encode(SchemaEventGrid, Target{AccountID: "acc_1", SubscriptionName: "sub"},
		[]Item{{Payload: p, DeliveryID: "dlv_1", Attempt: 1, PublishedAt: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	compareWithSeed(t, decodeOneEventGrid(t, enc.Body), want)
	if enc.ContentType != "application/json" {
		t.Errorf("content type %q", enc.ContentType)
	}
}

// The seed's CloudEvents example, delivered with the eventgrid schema,
// carries its dataversion as dataVersion and its source as topic.
func TestEncodeEventGridFromSeedCloudEvent(t *testing.T) {
	ce, raw := readSeed(t, "cloudevents-event.json")
	shape, _ := readSeed(t, "eventgrid-event.json")
	p := storeOne(t, withSpecVersion(t, raw))
	published := time.Date(2020, 8, 13, 21, 21, 36, 401872600, time.UTC)
	enc, err := Encode(SchemaEventGrid, Target{SubscriptionName: "s"}, []Item{{Payload: p, Attempt: 1, PublishedAt: published}})
	if err != nil {
		t.Fatal(err)
	}
	got := decodeOneEventGrid(t, enc.Body)
	want := map[string]any{
		"id": ce["id"], "topic": ce["source"], "subject": ce["subject"], "eventType": ce["type"],
		"eventTime": "2020-08-13T21:21:36.4018726Z", "data": ce["data"], "dataVersion": ce["dataversion"],
		"metadataVersion": "1",
	}
	compareWithSeed(t, got, want)
	// The same fields, of the same types, as the seed's Event Grid event.
	for k, v := range shape {
		if reflect.TypeOf(got[k]) != reflect.TypeOf(v) {
			t.Errorf("field %q: %T, the seed's Event Grid event has %T", k, got[k], v)
		}
	}
	if h := headerValue(enc, "aeg-data-version"); h != "1.0" {
		t.Errorf("aeg-data-version %q", h)
	}
}

// withSpecVersion adds "specversion":"1.0" to the seed's CloudEvents
// examples, which leave it out (Herald requires it, as CloudEvents does).
func withSpecVersion(t *testing.T, raw []byte) []byte {
	t.Helper()
	i := bytes.IndexByte(raw, '{')
	if i < 0 {
		t.Fatal("not an object")
	}
	return slices.Concat(raw[:i+1], []byte(`"specversion":"1.0",`), raw[i+1:])
}

func headerValue(enc Encoded, name string) string {
	for _, h := range enc.Header {
		if h[0] == name {
			return h[1]
		}
	}
	return "<absent>"
}

// Dead letters carry the seed's dead-letter fields with the seed's values
// and types. Herald adds lastHttpStatusCode (lasthttpstatuscode), which
// Event Grid writes too, and lastdeliveryattempttime to the CloudEvent.
func TestEncodeDeadLetterMatchesSeed(t *testing.T) {
	dlFields := []string{"deadLetterReason", "deliveryAttempts", "lastDeliveryOutcome", "publishTime", "lastDeliveryAttemptTime"}
	for _, tc := range []struct{ schema, seed string }{
		{SchemaEventGrid, "eventgrid-deadletter.json"},
		{SchemaData, "custom-deadletter.json"},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			want, _ := readSeed(t, tc.seed)
			event := maps.Clone(want)
			for _, k := range dlFields {
				delete(event, k)
			}
			raw, _ := json.Marshal(event)
			it := Item{Payload: storeOne(t, raw), DeliveryID: "dlv_9", Attempt: 1, PublishedAt: mustTime(t, want["publishTime"])}
			dl := DeadLetterInfo{
				Reason: want["deadLetterReason"].(string), Attempts: int(want["deliveryAttempts"].(float64)),
				LastOutcome: "http_404", LastStatusCode: 404, LastAttemptAt: mustTime(t, want["lastDeliveryAttemptTime"]),
			}
			enc, err := EncodeDeadLetter(tc.schema, Target{SubscriptionName: "s"}, it, dl)
			if err != nil {
				t.Fatal(err)
			}
			got := decodeOneEventGrid(t, enc.Body)
			compareWithSeed(t, got, want, "lastHttpStatusCode")
			if got["lastHttpStatusCode"] != float64(404) {
				t.Errorf("lastHttpStatusCode %v", got["lastHttpStatusCode"])
			}
			// Without an HTTP response there is no status code; the
			// outcome still names what happened.
			dl.LastOutcome, dl.LastStatusCode = "timeout", 0
			enc, err = EncodeDeadLetter(tc.schema, Target{SubscriptionName: "s"}, it, dl)
			if err != nil {
				t.Fatal(err)
			}
			want["lastDeliveryOutcome"] = "TimedOut"
			compareWithSeed(t, decodeOneEventGrid(t, enc.Body), want)
		})
	}
	t.Run(SchemaCloudEvents, func(t *testing.T) {
		want, _ := readSeed(t, "cloudevents-deadletter.json")
		_, raw := readSeed(t, "cloudevents-event.json")
		last := time.Date(2020, 8, 13, 21, 21, 36, 0, time.UTC)
		it := Item{Payload: storeOne(t, withSpecVersion(t, raw)), Attempt: 1, PublishedAt: mustTime(t, want["publishtime"])}
		dl := DeadLetterInfo{Reason: "MaxDeliveryAttemptsExceeded", Attempts: 1, LastOutcome: "http_404", LastStatusCode: 404, LastAttemptAt: last}
		enc, err := EncodeDeadLetter(SchemaCloudEvents, Target{}, it, dl)
		if err != nil {
			t.Fatal(err)
		}
		if enc.ContentType != "application/cloudevents+json" {
			t.Errorf("content type %q", enc.ContentType)
		}
		var got map[string]any
		if err := json.Unmarshal(enc.Body, &got); err != nil {
			t.Fatal(err)
		}
		compareWithSeed(t, got, want, "specversion", "lasthttpstatuscode", "lastdeliveryattempttime")
		if got["lasthttpstatuscode"] != float64(404) || got["lastdeliveryattempttime"] != "2020-08-13T21:21:36Z" {
			t.Errorf("got %v", got)
		}
	})
}

func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pushRequest is the body of a Pub/Sub push request as Google documents it
// for push subscribers; a receiver decodes it with encoding/json.
type pushRequest struct {
	Message struct {
		Data        []byte            `json:"data"`
		Attributes  map[string]string `json:"attributes"`
		MessageID   string            `json:"messageId"`
		PublishTime time.Time         `json:"publishTime"`
	} `json:"message"`
	Subscription    string `json:"subscription"`
	DeliveryAttempt int    `json:"deliveryAttempt"`
}

func TestEncodePubSubEnvelope(t *testing.T) {
	want, it := stored(t, fullEventSDK)
	it.DeliveryID = "dlv_01HX"
	it.PublishedAt = time.Date(2026, 1, 2, 15, 4, 6, 789e6, time.FixedZone("", 3600))
	tg := Target{AccountID: "acc_7", SubscriptionName: "billing-push"}
	for attempt := 1; attempt <= 3; attempt++ {
		it.Attempt = attempt
		enc, err := Encode(SchemaPubSub, tg, []Item{it})
		if err != nil {
			t.Fatal(err)
		}
		if enc.ContentType != "application/json" || len(enc.Header) != 0 {
			t.Fatalf("content type %q, headers %v", enc.ContentType, enc.Header)
		}
		var got pushRequest
		dec := json.NewDecoder(bytes.NewReader(enc.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("decoding %s: %v", enc.Body, err)
		}
		if got.DeliveryAttempt != attempt {
			t.Errorf("deliveryAttempt %d, want %d", got.DeliveryAttempt, attempt)
		}
		if got.Subscription != "accounts/acc_7/subscriptions/billing-push" {
			t.Errorf("subscription %q", got.Subscription)
		}
		if got.Message.MessageID != "dlv_01HX" || !got.Message.PublishTime.Equal(it.PublishedAt) {
			t.Errorf("messageId %q publishTime %v", got.Message.MessageID, got.Message.PublishTime)
		}
		if string(got.Message.Data) != string(want.Data) {
			t.Errorf("data %q, want %q", got.Message.Data, want.Data)
		}
		wantAttrs := map[string]string{
			"specversion": "1.0", "id": "evt-1", "source": "/billing", "type": "invoice.paid", "subject": "inv/42",
			"datacontenttype": "application/json", "dataschema": "https://example.com/schema.json",
			"time": "2026-01-02T15:04:05.123+01:00", "count": "42", "flag": "true", "traceparent": "00-abc",
		}
		if !reflect.DeepEqual(got.Message.Attributes, wantAttrs) {
			t.Errorf("attributes %v\nwant %v", got.Message.Attributes, wantAttrs)
		}
	}
	// Binary data arrives as its bytes; text data as its text.
	for _, tc := range []struct{ body, data string }{
		{sdkEvents[1], "\x89PNG\r\n\x1a\n"},
		{sdkEvents[2], "h\u00e9llo \"world\"\n"},
		{sdkEvents[3], ""},
	} {
		_, it := stored(t, tc.body)
		enc, err := Encode(SchemaPubSub, tg, []Item{it})
		if err != nil {
			t.Fatal(err)
		}
		var got pushRequest
		if err := json.Unmarshal(enc.Body, &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Message.Data) != tc.data {
			t.Errorf("data %q, want %q", got.Message.Data, tc.data)
		}
	}
}

// A binary-mode request that Encode writes is read back by Parse as the
// event that was stored, except that extensions arrive as strings and JSON
// data without a content type gains application/json.
func TestEncodeBinaryRoundTripsThroughParse(t *testing.T) {
	for _, body := range append([]string{fullEvent}, sdkEvents...) {
		want, it := stored(t, body)
		enc, err := Encode(SchemaCloudEventsBinary, Target{}, []Item{it})
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		if enc.ContentType != "" {
			h.Set("Content-Type", enc.ContentType)
		}
		for _, kv := range enc.Header {
			if !isPrintableASCII(kv[1]) {
				t.Errorf("%s: header %s: %q is not printable ASCII", want.ID, kv[0], kv[1])
			}
			h.Add(kv[0], kv[1])
		}
		got := mustParse(t, h, string(enc.Body))[0]
		for k, v := range want.Extensions {
			switch v := v.(type) {
			case json.Number:
				want.Extensions[k] = v.String()
			case bool:
				want.Extensions[k] = strconv.FormatBool(v)
			}
		}
		switch {
		case want.DataContentType == "" && len(want.Data) > 0:
			want.DataContentType = "application/json"
		case want.DataContentType == "" && want.DataBase64 != "":
			want.DataContentType = "application/octet-stream"
		}
		if strings.HasPrefix(want.DataContentType, "text/") && len(want.Data) > 0 {
			// The text travels as itself and comes back as binary data.
			var s string
			if err := json.Unmarshal(want.Data, &s); err != nil {
				t.Fatal(err)
			}
			want.Data, want.DataBase64 = nil, base64.StdEncoding.EncodeToString([]byte(s))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip:\n got %#v\nwant %#v", got, want)
		}
	}
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{
		"Euro \u20ac \U0001F600":                 "Euro%20%E2%82%AC%20%F0%9F%98%80", // the HTTP binding's example
		"plain-ASCII_~!#$&'()*+,/:;<=>?@[]^`{|}": "plain-ASCII_~!#$&'()*+,/:;<=>?@[]^`{|}",
		`"100%"`:                                 "%22100%25%22",
		"tab\tdel\x7f":                           "tab%09del%7F",
		"":                                       "",
	} {
		if got := percentEncode(in); got != want {
			t.Errorf("percentEncode(%q) = %q, want %q", in, got, want)
		}
		if got, err := url.PathUnescape(percentEncode(in)); err != nil || got != in {
			t.Errorf("PathUnescape(percentEncode(%q)) = %q, %v", in, got, err)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	_, it := stored(t, fullEvent)
	two := []Item{it, it}
	for _, schema := range []string{SchemaCloudEventsBinary, SchemaData, SchemaPubSub} {
		if _, err := Encode(schema, Target{Batch: true}, two); !errors.Is(err, ErrBatchNotSupported) {
			t.Errorf("%s with two items: err = %v", schema, err)
		}
		if CanBatch(schema) {
			t.Errorf("CanBatch(%s)", schema)
		}
	}
	for _, schema := range Schemas() {
		if !ValidSchema(schema) {
			t.Errorf("ValidSchema(%s) false", schema)
		}
		if _, err := Encode(schema, Target{}, nil); err == nil {
			t.Errorf("%s: no items accepted", schema)
		}
	}
	if !CanBatch(SchemaCloudEvents) || !CanBatch(SchemaEventGrid) || ValidSchema("CloudEvents") || ValidSchema("") {
		t.Error("CanBatch/ValidSchema")
	}
	if got := Schemas(); !slices.Equal(got, []string{"cloudevents", "cloudevents-binary", "eventgrid", "data", "pubsub"}) {
		t.Errorf("Schemas() = %v", got)
	}
	if _, err := Encode("xml", Target{}, []Item{it}); err == nil {
		t.Error("unknown schema accepted")
	}
	if _, err := Encode("xml", Target{}, two); err == nil || errors.Is(err, ErrBatchNotSupported) {
		t.Errorf("unknown schema, two items: %v", err)
	}
	if _, err := EncodeDeadLetter("xml", Target{}, it, DeadLetterInfo{}); err == nil {
		t.Error("dead letter: unknown schema accepted")
	}
	// A payload that is not a stored CloudEvent fails loudly in every schema
	// that reads it.
	for _, p := range []string{``, `[]`, `{"id":"1"}`, `{"specversion":"1.0","id":"1","source":"s","type":"t"`,
		`{"specversion":"1.0","id":1,"source":"s","type":"t"}`, `{"specversion":"1.0","id":"1","source":"s","type":"t"} x`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","ext":{"a":1}}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"!!"}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","data":{"a":"}`} {
		bad := Item{Payload: []byte(p), DeliveryID: "dlv_bad", Attempt: 1}
		for _, schema := range []string{SchemaCloudEventsBinary, SchemaEventGrid, SchemaData, SchemaPubSub} {
			if strings.Contains(p, "data_base64") && (schema == SchemaEventGrid || schema == SchemaPubSub) {
				continue // they copy the stored base64 text without decoding it
			}
			if enc, err := Encode(schema, Target{}, []Item{bad}); !errors.Is(err, ErrMalformedPayload) {
				t.Errorf("%s: payload %s: err %v, body %s", schema, p, err, enc.Body)
			}
		}
		for _, schema := range Schemas() {
			if strings.Contains(p, "data_base64") && schema != SchemaCloudEventsBinary {
				continue
			}
			if _, err := EncodeDeadLetter(schema, Target{}, bad, DeadLetterInfo{}); !errors.Is(err, ErrMalformedPayload) {
				t.Errorf("dead letter %s: payload %s: err %v", schema, p, err)
			}
		}
	}
}

func TestEventGridOutcome(t *testing.T) {
	for _, tc := range []struct {
		outcome string
		status  int
		want    string
	}{
		{"http_200", 200, "Succeeded"},
		{"http_400", 400, "BadRequest"},
		{"http_401", 401, "Unauthorized"},
		{"http_403", 403, "Forbidden"},
		{"http_404", 404, "NotFound"},
		{"http_404", 0, "NotFound"},
		{"http_408", 408, "TimedOut"},
		{"http_413", 413, "PayloadTooLarge"},
		{"http_429", 429, "Busy"},
		{"http_503", 503, "Busy"},
		{"http_500", 500, "GenericError"},
		{"http_502", 0, "GenericError"},
		{"http_410", 410, "GenericError"},
		{"timeout", 0, "TimedOut"},
		{"connection_refused", 0, "SocketError"},
		{"connection_reset", 0, "SocketError"},
		{"dns_error", 0, "SocketError"},
		{"network_error", 0, "SocketError"},
		{"tls_error", 0, "GenericError"},
		{"destination_blocked", 0, "GenericError"},
		{"request_error", 0, "GenericError"},
		{"", 0, "GenericError"},
		{"http_abc", 0, "GenericError"},
	} {
		if got := EventGridOutcome(tc.outcome, tc.status); got != tc.want {
			t.Errorf("EventGridOutcome(%q, %d) = %q, want %q", tc.outcome, tc.status, got, tc.want)
		}
	}
}

// The hot path, one structured event, hands back the stored payload itself
// and allocates nothing.
func TestEncodeCloudEventsSingleIsThePayload(t *testing.T) {
	_, it := stored(t, fullEvent)
	enc, err := Encode(SchemaCloudEvents, Target{}, []Item{it})
	if err != nil {
		t.Fatal(err)
	}
	if &enc.Body[0] != &it.Payload[0] || len(enc.Body) != len(it.Payload) || enc.Header != nil {
		t.Fatal("the body is not the payload")
	}
	items := []Item{it}
	if n := testing.AllocsPerRun(100, func() { _, _ = Encode(SchemaCloudEvents, Target{}, items) }); n != 0 {
		t.Errorf("%v allocations a request, want 0", n)
	}
}

func benchmarkEncode(b *testing.B, schema string, n int) {
	events := mustParseB(b, fullEvent)
	p, err := events[0].Marshal()
	if err != nil {
		b.Fatal(err)
	}
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{Payload: p, DeliveryID: "dlv_" + strconv.Itoa(i), Attempt: 1, PublishedAt: time.Now()}
	}
	tg := Target{AccountID: "acc_1", SubscriptionName: "orders", Batch: n > 1}
	b.SetBytes(int64(n * len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(schema, tg, items); err != nil {
			b.Fatal(err)
		}
	}
}

func mustParseB(b *testing.B, body string) []Event {
	events, err := Parse(header(mediaStructured), []byte(body))
	if err != nil {
		b.Fatal(err)
	}
	return events
}

func BenchmarkEncode(b *testing.B) {
	for _, schema := range Schemas() {
		b.Run(schema, func(b *testing.B) { benchmarkEncode(b, schema, 1) })
	}
	b.Run("cloudevents-batch100", func(b *testing.B) { benchmarkEncode(b, SchemaCloudEvents, 100) })
	b.Run("eventgrid-batch100", func(b *testing.B) { benchmarkEncode(b, SchemaEventGrid, 100) })
}
