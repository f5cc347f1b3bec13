package event

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/cloudevents/sdk-go/v2/types"
)

// sdkEvents are read back with the CloudEvents Go SDK. Their extension
// values stay within what the SDK's type system holds (strings, booleans,
// 32-bit integers).
var sdkEvents = []string{
	fullEventSDK,
	`{"specversion":"1.0","id":"img-7","source":"/cameras/3","type":"camera.snapshot","datacontenttype":"image/png",` +
		`"time":"2026-05-04T09:59:58.5+02:00","data_base64":"iVBORw0KGgo="}`,
	`{"specversion":"1.0","id":"note-1","source":"/notes","type":"note.created","datacontenttype":"text/plain",` +
		`"data":"h\u00e9llo \"world\"\n"}`,
	`{"specversion":"1.0","id":"min-1","source":"/min","type":"ping"}`,
	`{"specversion":"1.0","id":"json-1","source":"urn:x","type":"t","data":[1,"two",{"three":3}]}`,
	`{"specversion":"1.0","id":"id 1%","source":"/a%20b","type":"t","subject":"caf\u00e9 \"x\" 100% \u2713",` +
		`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","note":"\u00fcber cool","data":{"a":1}}`,
}

const fullEventSDK = `{"specversion":"1.0","id":"evt-1","source":"/billing","type":"invoice.paid","subject":"inv/42",` +
	`"datacontenttype":"application/json","dataschema":"https://example.com/schema.json",` +
	`"time":"2026-01-02T15:04:05.123+01:00","count":42,"flag":true,"traceparent":"00-abc","data":{"amount":10,"note":"<b>"}}`

// sdkRequest builds the POST that a sender would make of enc.
func sdkRequest(t *testing.T, enc Encoded) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://receiver.invalid/hook", bytes.NewReader(enc.Body))
	if err != nil {
		t.Fatal(err)
	}
	if enc.ContentType != "" {
		req.Header.Set("Content-Type", enc.ContentType)
	}
	for _, h := range enc.Header {
		req.Header.Add(h[0], h[1])
	}
	return req
}

// stored parses one of sdkEvents and returns it with its stored payload.
func stored(t *testing.T, body string) (Event, Item) {
	t.Helper()
	e := mustParse(t, header(mediaStructured), body)[0]
	p, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return e, Item{Payload: p, DeliveryID: "dlv_1", Attempt: 1, PublishedAt: time.Now()}
}

// checkSDKEvent compares what the SDK read with the event Herald stored.
// binary says the event came in binary mode, where the SDK (v2.16.2) does
// not percent-decode header values (the HTTP binding says a receiver must):
// the test decodes them itself; every extension is then a string; and JSON
// data without a datacontenttype arrives as application/json.
func checkSDKEvent(t *testing.T, got cloudevents.Event, want Event, binary bool) {
	t.Helper()
	dec := func(s string) string {
		if !binary {
			return s
		}
		d, err := url.PathUnescape(s)
		if err != nil {
			t.Errorf("percent-decoding %q: %v", s, err)
		}
		return d
	}
	if err := got.Validate(); err != nil {
		t.Errorf("SDK: invalid event: %v", err)
	}
	if got.SpecVersion() != "1.0" || dec(got.ID()) != want.ID || dec(got.Source()) != want.Source ||
		dec(got.Type()) != want.Type || dec(got.Subject()) != want.Subject {
		t.Errorf("SDK read specversion %q id %q source %q type %q subject %q; want %+v",
			got.SpecVersion(), got.ID(), got.Source(), got.Type(), got.Subject(), want)
	}
	if got.DataSchema() != want.DataSchema {
		t.Errorf("dataschema %q, want %q", got.DataSchema(), want.DataSchema)
	}
	if !got.Time().Equal(want.Time) {
		t.Errorf("time %v, want %v", got.Time(), want.Time)
	}
	wantCT := want.DataContentType
	if binary && wantCT == "" && len(want.Data) > 0 {
		wantCT = "application/json"
	}
	if binary && wantCT == "" && want.DataBase64 != "" {
		wantCT = "application/octet-stream"
	}
	if got.DataContentType() != wantCT {
		t.Errorf("datacontenttype %q, want %q", got.DataContentType(), wantCT)
	}
	wantExt := map[string]string{}
	for k, v := range want.Extensions {
		switch v := v.(type) {
		case json.Number:
			wantExt[k] = v.String()
		case bool:
			wantExt[k] = map[bool]string{true: "true", false: "false"}[v]
		default:
			wantExt[k] = v.(string)
		}
	}
	gotExt := map[string]string{}
	for k, v := range got.Extensions() {
		s, err := types.Format(v)
		if err != nil {
			t.Errorf("extension %s: %v", k, err)
		}
		gotExt[k] = dec(s)
	}
	if !reflect.DeepEqual(gotExt, wantExt) {
		t.Errorf("extensions %v, want %v", gotExt, wantExt)
	}
	// The data: what the SDK holds for it is the bytes a receiver works with.
	var wantData []byte
	switch {
	case want.DataBase64 != "":
		wantData = mustBase64(t, want.DataBase64)
	case len(want.Data) > 0 && strings.HasPrefix(want.DataContentType, "text/"):
		var s string
		if err := json.Unmarshal(want.Data, &s); err != nil {
			t.Fatal(err)
		}
		wantData = []byte(s)
	default:
		wantData = want.Data
	}
	if !bytes.Equal(got.Data(), wantData) {
		t.Errorf("data %q, want %q", got.Data(), wantData)
	}
}

func TestSDKReadsStructured(t *testing.T) {
	for _, body := range sdkEvents {
		want, it := stored(t, body)
		enc, err := Encode(SchemaCloudEvents, Target{}, []Item{it})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cehttp.NewEventFromHTTPRequest(sdkRequest(t, enc))
		if err != nil {
			t.Fatalf("%s: SDK: %v", want.ID, err)
		}
		checkSDKEvent(t, *got, want, false)
	}
}

func TestSDKReadsBinary(t *testing.T) {
	for _, body := range sdkEvents {
		want, it := stored(t, body)
		enc, err := Encode(SchemaCloudEventsBinary, Target{}, []Item{it})
		if err != nil {
			t.Fatal(err)
		}
		msg := cehttp.NewMessageFromHttpRequest(sdkRequest(t, enc))
		if enc := msg.ReadEncoding(); enc.String() != "binary" {
			t.Fatalf("%s: SDK sees encoding %v, want binary", want.ID, enc)
		}
		got, err := cehttp.NewEventFromHTTPRequest(sdkRequest(t, enc))
		if err != nil {
			t.Fatalf("%s: SDK: %v", want.ID, err)
		}
		checkSDKEvent(t, *got, want, true)
	}
}

func TestSDKReadsBatch(t *testing.T) {
	var want []Event
	var items []Item
	for _, body := range sdkEvents {
		e, it := stored(t, body)
		want, items = append(want, e), append(items, it)
	}
	for _, n := range []int{1, len(items)} {
		enc, err := Encode(SchemaCloudEvents, Target{Batch: true}, items[:n])
		if err != nil {
			t.Fatal(err)
		}
		got, err := cehttp.NewEventsFromHTTPRequest(sdkRequest(t, enc))
		if err != nil {
			t.Fatalf("SDK: %v", err)
		}
		if len(got) != n {
			t.Fatalf("SDK read %d events, want %d", len(got), n)
		}
		for i := range got {
			checkSDKEvent(t, got[i], want[i], false)
		}
	}
}

// The dead-letter CloudEvent is a valid CloudEvent whose extensions carry
// the dead-letter fields, in both modes.
func TestSDKReadsDeadLetter(t *testing.T) {
	want, it := stored(t, fullEventSDK)
	it.PublishedAt = time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	dl := DeadLetterInfo{Reason: "MaxDeliveryAttemptsExceeded", Attempts: 7, LastOutcome: "http_503", LastStatusCode: 503,
		LastAttemptAt: time.Date(2026, 1, 3, 1, 2, 3, 0, time.UTC)}
	want.Extensions["deadletterreason"] = "MaxDeliveryAttemptsExceeded"
	want.Extensions["deliveryattempts"] = json.Number("7")
	want.Extensions["lastdeliveryoutcome"] = "Busy"
	want.Extensions["lasthttpstatuscode"] = json.Number("503")
	want.Extensions["publishtime"] = "2026-01-02T15:00:00Z"
	want.Extensions["lastdeliveryattempttime"] = "2026-01-03T01:02:03Z"
	for _, schema := range []string{SchemaCloudEvents, SchemaCloudEventsBinary} {
		enc, err := EncodeDeadLetter(schema, Target{}, it, dl)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cehttp.NewEventFromHTTPRequest(sdkRequest(t, enc))
		if err != nil {
			t.Fatalf("%s: SDK: %v", schema, err)
		}
		checkSDKEvent(t, *got, want, schema == SchemaCloudEventsBinary)
	}
}
