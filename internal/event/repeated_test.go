package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestParseRefusesRepeatedMembers: data holding an object that repeats a
// member name, at any depth, is refused in every publish format, naming
// the member's path (and the event's index in an array), as are repeated
// members of the event itself; the same name in different objects is not
// a repeat.
func TestParseRefusesRepeatedMembers(t *testing.T) {
	const ok = `"specversion":"1.0","id":"1","source":"/s","type":"t"`
	ce := func(data string) string { return `{` + ok + `,"data":` + data + `}` }
	eg := func(data string) string {
		return `{"id":"1","subject":"","eventType":"t","eventTime":"2026-01-02T15:04:05Z","data":` + data + `}`
	}
	bin := func(ct string) http.Header {
		return header(ct, "ce-specversion", "1.0", "ce-id", "1", "ce-source", "/s", "ce-type", "t")
	}
	many := func(n int, last string) string { // an object of n members k0, k1, ..., then last
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		return b.String() + last + `}`
	}
	structured, batch, plain := header(mediaStructured), header(mediaBatch), header(mediaJSON)
	const repeated = "repeated member"
	checkRefusals(t, []refusalCase{
		{"top level", structured, ce(`{"a":1,"a":2}`), "data.a", 0, repeated},
		{"same value", structured, ce(`{"a":1,"b":2,"a":1}`), "data.a", 0, repeated},
		{"nested", structured, ce(`{"x":{"a":1,"b":{},"a":[]}}`), "data.x.a", 0, repeated},
		{"in an array", structured, ce(`{"x":[{"a":1},{"b":1,"c":{"d":1},"b":2}]}`), "data.x[1].b", 0, repeated},
		{"data an array", structured, ce(`[1,[{"a":1}],{"a":1,"a":1}]`), "data[2].a", 0, repeated},
		{"escaped name", structured, ce(`{"a":1,"\u0061":2}`), "data.a", 0, repeated},
		{"escaped both", structured, ce(`{"\u00e9":1,"\u00E9":2}`), "data.é", 0, repeated},
		{"empty name", structured, ce(`{"":1,"":2}`), "data.", 0, repeated},
		{"unpaired surrogates alike", structured, ce(`{"\ud800":1,"\udfff":2}`), "data.\ufffd", 0, repeated},
		{"after many members", structured, ce(many(100, `"k42":0`)), "data.k42", 0, repeated},
		{"after 16 members", structured, ce(many(16, `"k0":0`)), "data.k0", 0, repeated},
		{"whitespace", structured, "{" + ok + `,"data": { "a" : 1 , "a" : 2 } }`, "data.a", 0, repeated},
		{"batch", batch, "[" + ce(`{"a":1}`) + "," + ce(`{"x":{"a":1,"a":2}}`) + "]", "events[1].data.x.a", 1, repeated},
		{"json array", plain, "[" + ce(`1`) + "," + ce(`2`) + "," + ce(`{"a":{"b":1,"b":1}}`) + "]", "events[2].data.a.b", 2, repeated},
		{"json object", plain, ce(`{"a":1,"a":2}`), "data.a", 0, repeated},
		{"binary json", bin("application/json"), `{"x":{"a":1,"a":2}}`, "body.x.a", 0, repeated},
		{"binary +json", bin("application/vnd.acme+json; charset=utf-8"), `[{"a":1,"a":2}]`, "body[0].a", 0, repeated},
		{"event grid", plain, eg(`{"a":1,"a":2}`), "data.a", 0, repeated},
		{"event grid batch", plain, "[" + eg(`1`) + "," + eg(`{"x":[{"a":1,"a":2}]}`) + "]", "events[1].data.x[0].a", 1, repeated},
		{"long path", structured, ce(strings.Repeat(`{"abcdefghij":`, 100) + `{"z":1,"z":2}` + strings.Repeat(`}`, 100)),
			// 128 bytes of the path, "...", its last 128
			"data" + strings.Repeat(".abcdefghij", 11) + ".abcdef..." + "fghij" + strings.Repeat(".abcdefghij", 11) + ".z", 0, repeated},
		{"long name", structured, ce(`{"` + strings.Repeat("n", 100) + `":1,"` + strings.Repeat("n", 100) + `":2}`),
			"data." + strings.Repeat("n", 64) + "...", 0, repeated},
		// The event's own members.
		{"envelope", structured, `{` + ok + `,"id":"2"}`, "id", 0, repeated},
		{"envelope escaped", structured, `{` + ok + `,"\u0069d":"2"}`, "id", 0, repeated},
		{"envelope extension", structured, `{` + ok + `,"ext":1,"ext":1}`, "ext", 0, repeated},
		{"envelope in a batch", batch, "[" + ce(`1`) + `,{` + ok + `,"data":1,"data":2}]`, "events[1].data", 1, repeated},
		{"event grid envelope", plain, `[{"id":"1","subject":"","eventType":"t","eventType":"u","eventTime":"2026-01-02T15:04:05Z"}]`, "events[0].eventType", 0, repeated},
	})
	for _, data := range []string{`{"x":{"a":1},"y":{"a":1}}`, `{"a":{"a":{"a":1}}}`, `[{"a":1},{"a":1}]`,
		`["a","a"]`, `{"a":"b","b":"a"}`, `{"a":1,"A":1}`, `{"a":{},"b":{},"c":[{}]}`, many(1000, `"k":0`),
		`{"a":{"b":1},"b":{"a":1}}`, `{"x":[{"a":1,"b":2},"a",{"b":1,"a":2}]}`} {
		if _, err := Parse(structured, []byte(ce(data))); err != nil {
			t.Errorf("data %.60s: %v", data, err)
		}
	}
	// Not JSON data: the body is kept as bytes, whatever it holds.
	if _, err := Parse(bin("text/plain"), []byte(`{"a":1,"a":2}`)); err != nil {
		t.Errorf("text/plain body: %v", err)
	}
}

// repeatedReference finds the first repeated member of the JSON value b as
// encoding/json's tokens show it, naming it as dataJSON does: the
// reference for FuzzDataJSON.
func repeatedReference(b []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	var walk func(path string) (string, error)
	walk = func(path string) (string, error) {
		tok, err := d.Token()
		if err != nil {
			return "", err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return "", err
				}
				name := k.(string)
				shown := name
				if len(shown) > 64 {
					shown = shown[:64] + "..."
				}
				if seen[name] {
					return shortPath(path + "." + shown), nil
				}
				seen[name] = true
				if p, err := walk(path + "." + shown); p != "" || err != nil {
					return p, err
				}
			}
		case json.Delim('['):
			for i := 0; d.More(); i++ {
				if p, err := walk(path + "[" + strconv.Itoa(i) + "]"); p != "" || err != nil {
					return p, err
				}
			}
		default:
			return "", nil
		}
		_, err = d.Token() // the closing delimiter
		return "", err
	}
	return walk("")
}

// FuzzDataJSON checks dataJSON against repeatedReference (on valid JSON in
// valid UTF-8, as data is), and that the data it returns is what
// json.Compact writes.
func FuzzDataJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"x":[{"a":1},{"b":1,"b":2}]}`, `{"a":1,"\u0061":2}`,
		`[{"a":{"b":[1,{"c":1,"c":1}]}}]`, `{"\ud800":1,"\udbff":1}`, ` { "a" : [ 1 , 2 ] } `, `"x"`, `{}`, `[[],{}]`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}`,
		fullEvent, publishBody(2)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !validJSON(b) || !utf8.Valid(b) {
			return
		}
		want, err := repeatedReference(b)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		data, got := dataJSON(b)
		if got != want {
			t.Fatalf("dataJSON(%q) names %q; the reference %q", b, got, want)
		}
		if want != "" {
			return
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, buf.Bytes()) {
			t.Fatalf("dataJSON(%q) = %q; json.Compact writes %q", b, data, buf.Bytes())
		}
	})
}
