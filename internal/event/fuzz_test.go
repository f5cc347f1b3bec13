package event

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
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
// Parse unchanged.
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
		}
	})
}
