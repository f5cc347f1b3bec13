package event

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

// TestWithData: the data (or data_base64) is replaced, datacontenttype
// becomes application/json, dataschema goes, everything else stays; the
// result parses as a CloudEvent and every schema encodes it.
func TestWithData(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"json data", `{"specversion":"1.0","id":"e1","source":"/s","type":"t","subject":"a/b","datacontenttype":"application/json","dataschema":"https://x/v1","tenant":"acme","data":{"amount":150}}`},
		{"base64 data", `{"specversion":"1.0","id":"e1","source":"/s","type":"t","subject":"a/b","datacontenttype":"application/octet-stream","tenant":"acme","data_base64":"AAEC"}`},
		{"no data", `{"specversion":"1.0","id":"e1","source":"/s","type":"t","subject":"a/b","tenant":"acme"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WithData([]byte(tc.in), []byte(`{"text":"<b> & é"}`))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			want := map[string]any{"specversion": "1.0", "id": "e1", "source": "/s", "type": "t", "subject": "a/b",
				"tenant": "acme", "datacontenttype": "application/json", "data": map[string]any{"text": "<b> & é"}}
			if len(m) != len(want) {
				t.Fatalf("members %v; want %v", m, want)
			}
			for k, v := range want {
				if b1, _ := json.Marshal(m[k]); string(b1) != mustJSON(t, v) {
					t.Fatalf("%s = %s; want %s (in %s)", k, b1, mustJSON(t, v), got)
				}
			}
			h := http.Header{"Content-Type": []string{"application/cloudevents+json"}}
			if _, err := ParseWith(h, got, ParseOptions{}); err != nil {
				t.Fatalf("does not parse: %v", err)
			}
			for _, schema := range Schemas() {
				if _, err := Encode(schema, Target{AccountID: "a", SubscriptionName: "s"}, []Item{{Payload: got, DeliveryID: "d", Attempt: 1}}); err != nil {
					t.Fatalf("%s: %v", schema, err)
				}
			}
		})
	}
	if _, err := WithData([]byte(`[1]`), []byte(`1`)); !errors.Is(err, ErrMalformedPayload) {
		t.Fatalf("a payload that is not an object: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// memberList is a MemberIndex over members given (or none: -1).
type memberList [][3]string

func (l memberList) Members() int {
	if l == nil {
		return -1
	}
	return len(l)
}

func (l memberList) Member(j int) (name, key, val []byte) {
	return []byte(l[j][0]), []byte(l[j][1]), []byte(l[j][2])
}

// TestDataHeadFromIndex: DataHead reads the members an index gives, not
// the payload (which it reads when the index has none), and the data
// appended after it makes WithData's payload; an index of no member kept
// is a malformed payload.
func TestDataHeadFromIndex(t *testing.T) {
	p := []byte(`{"specversion":"1.0","id":"e1","data":{"a":1},"dataschema":"x","tenant":"acme"}`)
	want, err := WithData(p, []byte(`[1]`))
	if err != nil {
		t.Fatal(err)
	}
	index := memberList{{"specversion", `"specversion"`, `"1.0"`}, {"id", `"id"`, `"e1"`},
		{"data", `"data"`, `{"a":1}`}, {"dataschema", `"dataschema"`, `"x"`}, {"tenant", `"tenant"`, `"acme"`}}
	for _, tc := range []struct {
		name  string
		p     []byte
		index MemberIndex
	}{
		{"index", []byte(`not read`), index},
		{"no index", p, memberList(nil)},
		{"nil", p, nil},
	} {
		got, err := DataHead(tc.p, tc.index, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got = append(append(got, `[1]`...), '}'); string(got) != string(want) {
			t.Fatalf("%s: %s; want %s", tc.name, got, want)
		}
	}
	if _, err := DataHead(p, memberList{{"data", `"data"`, `1`}}, 0); !errors.Is(err, ErrMalformedPayload) {
		t.Fatalf("no member kept: %v", err)
	}
}
