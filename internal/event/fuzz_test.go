package event

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fuzzHeader builds headers from a content type and "name: value" lines.
func fuzzHeader(contentType, lines string) http.Header {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	for line := range strings.SplitSeq(lines, "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok {
			h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	return h
}

const binaryHeaders = "ce-specversion: 1.0\nce-id: 1\nce-source: /s\nce-type: t"

// FuzzParse checks that Parse never panics, that every error is a
// *FieldError, and that every accepted event survives Marshal and a second
// Parse unchanged. It also checks every delivery encoding of each accepted
// event (checkEncodings).
func FuzzParse(f *testing.F) {
	f.Add(mediaStructured, "", []byte(fullEvent))
	f.Add(mediaStructured, "", []byte(`{"specversion":"1.0","id":"1","source":"s","type":"t","data":null,"x":null}`))
	f.Add(mediaStructured, "", []byte(`{"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"AAFi"}`))
	f.Add(mediaStructured, "", []byte(`{"specversion":"1.0","id":"1","source":"s","type":"t","time":"2026-01-02T15:04:05.999999999-00:00"}`))
	f.Add(mediaBatch, "", []byte(batchOf(3)))
	f.Add(mediaJSON, "", []byte(batchOf(2)))
	f.Add(mediaJSON, "", []byte(`{"specversion":"1.0","id":"1","source":"s","type":"t","ext":1e400,"e2":"\ud800"}`))
	f.Add("application/json; charset=utf-8", binaryHeaders+"\nce-subject: caf%C3%A9\nce-time: 2026-01-02T15:04:05+05:30", []byte(`{"a": [1, 2]}`))
	f.Add("application/octet-stream", binaryHeaders+"\nce-ext: %25", []byte("\x00\xff"))
	f.Add("", binaryHeaders, []byte(""))
	f.Add("text/plain", "", []byte("hello"))
	f.Add(mediaBatch, "", []byte(`[]`))
	f.Add(mediaStructured, "", []byte(`{"specversion":"1.0","id":"a\u0000","source":"s","type":"t\u001b[2J","subject":"\ud83d\ude00\uffff","x":"\u0085"}`))
	f.Add("text/plain", binaryHeaders+"\nce-subject: %00%7F%C2%85", []byte("x"))
	f.Add(mediaJSON, "", []byte(`[{"id":"1","topic":"/t","subject":"","eventType":"e","eventTime":"2020-08-13T17:18:13.1647262Z","data":{"a":1},"dataVersion":"1.0","metadataVersion":"1"}]`))
	f.Add(mediaJSON, "", []byte(`{"id":"1","topic":"/t","subject":"s","eventType":"e","eventTime":"2026-01-02T15:04:05+05:30","data":null,"dataVersion":null}`))
	f.Add(mediaJSON, "", []byte(`[{"id":"1","topic":"/t","subject":"s","eventType":"e","eventTime":"2026-01-02T15:04:05Z"},{"specversion":"1.0","id":"1","source":"s","type":"t"}]`))
	f.Fuzz(func(t *testing.T, contentType, headers string, body []byte) {
		events, err := Parse(fuzzHeader(contentType, headers), body)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("error %T %v is not a *FieldError with a field", err, err)
			}
			return
		}
		if len(events) == 0 || len(events) > MaxBatchEvents {
			t.Fatalf("accepted %d events", len(events))
		}
		for i, e := range events {
			b, err := e.Marshal()
			if err != nil {
				t.Fatalf("event %d: Marshal: %v", i, err)
			}
			again, err := Parse(http.Header{"Content-Type": {mediaStructured}}, b)
			if err != nil {
				t.Fatalf("event %d: re-parse of %s: %v", i, b, err)
			}
			if len(again) != 1 || !reflect.DeepEqual(again[0], e) {
				t.Fatalf("event %d changed:\n got %#v\nwant %#v\njson %s", i, again, e, b)
			}
			checkEncodings(t, e, b)
		}
	})
}

// checkEncodings encodes the stored event p (e, marshaled) in every
// delivery schema and as a dead letter, and checks that each encoding
// succeeds, that JSON bodies are valid JSON, that binary-mode headers are
// printable ASCII and that Parse reads a binary-mode request back to e's
// attributes.
func checkEncodings(t *testing.T, e Event, p []byte) {
	t.Helper()
	it := Item{Payload: p, DeliveryID: "dlv_1", Attempt: 2, PublishedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tg := Target{AccountID: "acc_1", SubscriptionName: "s", Batch: true}
	dl := DeadLetterInfo{Reason: "MaxDeliveryAttemptsExceeded", Attempts: 3, LastOutcome: "http_500", LastStatusCode: 500,
		LastAttemptAt: it.PublishedAt.Add(time.Hour)}
	for _, schema := range Schemas() {
		items := []Item{it}
		if CanBatch(schema) {
			items = append(items, it)
		}
		for _, dead := range []bool{false, true} {
			var enc Encoded
			var err error
			if dead {
				enc, err = EncodeDeadLetter(schema, tg, it, dl)
			} else {
				enc, err = Encode(schema, tg, items)
			}
			if err != nil {
				t.Fatalf("%s (dead letter %v): %v\npayload %s", schema, dead, err, p)
			}
			if schema == SchemaCloudEventsBinary {
				h := http.Header{}
				if enc.ContentType != "" {
					h.Set("Content-Type", enc.ContentType)
				}
				for _, kv := range enc.Header {
					for i := 0; i < len(kv[1]); i++ {
						if c := kv[1][i]; c < 0x21 || c > 0x7e {
							t.Fatalf("header %s: %q is not printable ASCII", kv[0], kv[1])
						}
					}
					h.Add(kv[0], kv[1])
				}
				if dead {
					continue // lastdeliveryattempttime is longer than Parse allows
				}
				back, err := Parse(h, enc.Body)
				if err != nil {
					t.Fatalf("binary mode read back: %v\nheaders %q\npayload %s", err, enc.Header, p)
				}
				got := back[0]
				if got.ID != e.ID || got.Source != e.Source || got.Type != e.Type || got.Subject != e.Subject ||
					!got.Time.Equal(e.Time) || got.DataSchema != e.DataSchema || len(got.Extensions) != len(e.Extensions) {
					t.Fatalf("binary mode read back\n got %#v\nwant %#v", got, e)
				}
				continue
			}
			// The data schema sends the data as it is, JSON or not.
			if schema != SchemaData || dead {
				if !json.Valid(enc.Body) {
					t.Fatalf("%s (dead letter %v): invalid JSON %s\npayload %s", schema, dead, enc.Body, p)
				}
			}
		}
	}
}
