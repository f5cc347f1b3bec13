package expr

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzIndexJSON: indexJSON takes a payload only when go-json-experiment/json
// finds it valid, takes every valid one without a backslash, and an
// event it takes reads as it reads decoded (the eager Input; but for
// both data and data_base64, where the eager path picks either).
func FuzzIndexJSON(f *testing.F) {
	for _, seed := range []string{lazyEvent, sampleEvent, benchEvent, `{"a":1,"a":2}`, `{"a":"\ud800"}`, `{"a":"\u00e9\n"}`,
		"{\"a\":\"\xff\"}", `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":tru}`, `{"a":[1,]}`, `{"a":{}}x`, `[1]`, ` `,
		`{"a":"\x"}`, `{"a":"` + "\x01" + `"}`, `{"a":"\"}`, `{"a" 1}`, `{,}`, `{"data":[1e400,-0,0.5E-2]}`} {
		f.Add([]byte(seed))
	}
	tr, err := CompileTransform(`[event, data]`)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		d, ok := indexJSON(payload)
		valid := jsontext.Value(payload).IsValid()
		if ok && !valid || valid && !ok && bytes.IndexByte(payload, '\\') < 0 {
			t.Fatalf("indexJSON %v, IsValid %v: %q", ok, valid, payload)
		}
		if !ok || payload[d.nodes[0].start] != '{' || bytes.Contains(payload, []byte("data_base64")) {
			return // the eager path picks data or data_base64 at random
		}
		lazy, err := NewInput(payload)
		eager, eagerErr := newEagerInput(payload)
		if errString(err) != errString(eagerErr) {
			t.Fatalf("NewInput: %v; eager %v: %q", err, eagerErr, payload)
		}
		if err != nil {
			return
		}
		got, _, err := tr.Apply(context.Background(), lazy)
		want, _, wantErr := tr.Apply(context.Background(), eager)
		if string(got) != string(want) || errString(err) != errString(wantErr) {
			t.Fatalf("lazy %s %v, eager %s %v: %q", got, err, want, wantErr, payload)
		}
	})
}
