package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/subscription"
)

// redriveInput has the shape of the redrive body (deliveries.go).
type redriveInput struct {
	SubscriptionID string   `json:"subscription_id"`
	IDs            []string `json:"ids"`
}

// FuzzManagementDecode checks decodeJSON, the decoder of every management
// request body, on the bodies of the subscription routes, the redrive route
// and a retry policy:
//
//   - it never panics, and every problem names a field;
//   - it accepts only valid JSON, and what it accepts encoding/json decodes
//     to the same value (it is a strict subset);
//   - what it accepts re-encodes (json.Marshal) to a body it accepts again
//     and decodes to the same value;
//   - the same body with a member repeated, a value after it, or a member
//     name in other letters is never accepted;
//   - no string it accepts holds invalid UTF-8 or a control character
//     other than tab;
//   - a subscription input that subscription.Input.Apply also accepts has
//     a URL and headers the HTTP client sends without complaint.
func FuzzManagementDecode(f *testing.F) {
	seeds := []string{
		`{"name":"billing","url":"https://example.com/hook","event_types":["invoice.paid"],"subject_begins_with":"/a","subject_ends_with":".pdf",` +
			`"retry_policy":{"preset":"custom","delays":["1s",2.5],"max_attempts":5,"ttl":"1h","jitter":0.1,"success_codes":[200],"no_retry_codes":[410]},` +
			`"timeout":"10s","headers":{"X-Api-Key":"k\tv","X-B":""},"dead_letter":false}`,
		`{"name":"a","url":"http://admin:s3cret@127.0.0.1:9000/h?q=1"}`,
		`{"retry_policy":null,"headers":null,"event_types":null}`,
		`{"retry_policy":{"backoff":{"initial":"1s","multiplier":2,"max":"1m"}}}`,
		`{"subscription_id":"sub_1","ids":["dlv_1","dlv_2"]}`,
		`{"preset":"pubsub","max_attempts":0,"ttl":86400}`,
		`{"name":"a","name":"b"}`,
		`{"NAME":"a"}`,
		`{"name":"a"}}`,
		`{"name":"a"} {}`,
		`{"name":"\u0000\ud800\udc00\ud800"}`,
		"{\"name\":\"\xff\"}",
		`{"headers":{"X-A":"1","x-a":"2","Keep-Alive":"x"}}`,
		`{"retry_policy":{"delays":[1e308],"max_attempts":1e30}}`,
		`{"url":"http://:80/"}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		` { "name" : "x" , "url" : "http://x/" } `,
		`{"a":-0.5e+3,"b":[true,false,null],"c":{}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if in, ok := checkDecode[subscription.Input](t, data); ok {
			checkApply(t, in)
		}
		checkDecode[redriveInput](t, data)
		checkDecode[retry.Spec](t, data)
	})
}

// checkDecode checks decodeJSON's properties for a body decoded into a T,
// and returns the value when it was accepted.
func checkDecode[T any](t *testing.T, data []byte) (T, bool) {
	t.Helper()
	var v T
	if err := decodeJSON(data, "", &v); err != nil {
		if err.Field == "" || err.Detail == "" {
			t.Fatalf("%q: problem without a field or detail: %#v", data, err)
		}
		return v, false
	}
	if !json.Valid(data) {
		t.Fatalf("accepted invalid JSON %q", data)
	}
	mine, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%q: marshal: %v", data, err)
	}

	var std T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&std); err != nil {
		t.Fatalf("%q accepted, but encoding/json refuses it: %v", data, err)
	}
	if theirs, _ := json.Marshal(std); !bytes.Equal(mine, theirs) {
		t.Fatalf("%q: decoded to %s; encoding/json decodes %s", data, mine, theirs)
	}

	var again T
	if err := decodeJSON(mine, "", &again); err != nil {
		t.Fatalf("%q: its re-encoding %s is refused: %v", data, mine, err)
	}
	if b, _ := json.Marshal(again); !bytes.Equal(b, mine) {
		t.Fatalf("%q: re-encoded %s, decoded again to %s", data, mine, b)
	}

	if name, raw, ok := firstMember(data); ok {
		body := bytes.TrimLeft(data, " \t\r\n")
		repeated := strconv.Quote(name) + ":" + string(raw) + "," + string(body[1:])
		mustRefuse[T](t, data, "{"+repeated)
		if upper := strings.ToUpper(name); upper != name {
			mustRefuse[T](t, data, "{"+strconv.Quote(upper)+":"+string(raw)+"}")
		}
	}
	for _, tail := range []string{"}", " {}", "0", `""`, "]"} {
		mustRefuse[T](t, data, string(data)+tail)
	}

	for _, s := range stringsIn(reflect.ValueOf(v)) {
		if !utf8.ValidString(s) {
			t.Fatalf("%q: accepted invalid UTF-8 %q", data, s)
		}
		for _, r := range s {
			if unicode.IsControl(r) && r != '\t' {
				t.Fatalf("%q: accepted control character %U in %q", data, r, s)
			}
		}
	}
	return v, true
}

func mustRefuse[T any](t *testing.T, orig []byte, body string) {
	t.Helper()
	var v T
	if err := decodeJSON([]byte(body), "", &v); err == nil {
		t.Fatalf("from %q: accepted %q", orig, body)
	}
}

// stringsIn returns every string in v, map keys included, and every string
// in the JSON held by a json.RawMessage.
func stringsIn(v reflect.Value) []string {
	var out []string
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		var x any
		if len(v.Bytes()) > 0 && json.Unmarshal(v.Bytes(), &x) == nil {
			out = append(out, stringsIn(reflect.ValueOf(&x).Elem())...)
		}
		return out
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			out = append(out, stringsIn(v.Elem())...)
		}
	case reflect.String:
		out = append(out, v.String())
	case reflect.Struct:
		for i := range v.NumField() {
			out = append(out, stringsIn(v.Field(i))...)
		}
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, stringsIn(v.Index(i))...)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			out = append(out, stringsIn(it.Key())...)
			out = append(out, stringsIn(it.Value())...)
		}
	}
	return out
}

// errNoDial stops a request at the dial, after net/http has checked it.
var errNoDial = errors.New("no dial in a fuzz test")

var checkTransport = &http.Transport{
	DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, errNoDial },
}

// checkApply runs Apply on a decoded subscription input and, when it
// accepts, checks that net/http builds and would send the attempt's request
// (its URL and custom headers) without refusing it.
func checkApply(t *testing.T, in subscription.Input) {
	t.Helper()
	sub := subscription.Subscription{Name: "n", URL: "http://example.com/", Timeout: subscription.DefaultTimeout}
	if err := in.Apply(&sub); err != nil {
		if err.Field == "" || err.Detail == "" {
			t.Fatalf("Apply: problem without a field or detail: %#v", err)
		}
		return
	}
	req, err := http.NewRequest(http.MethodPost, sub.URL, strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("accepted url %q, which net/http refuses: %v", sub.URL, err)
	}
	for k, v := range sub.Headers {
		req.Header.Set(k, v)
	}
	if _, err := checkTransport.RoundTrip(req); !errors.Is(err, errNoDial) {
		t.Fatalf("accepted url %q and headers %q, which net/http refuses: %v", sub.URL, sub.Headers, err)
	}
	if pw, ok := req.URL.User.Password(); ok && pw != "xxxxx" && strings.Contains(redact.URL(sub.URL), ":"+pw+"@") {
		t.Fatalf("redact.URL(%q) = %q shows the password", sub.URL, redact.URL(sub.URL))
	}
}

// firstMember returns the first member of a JSON object, as encoding/json
// reads it.
func firstMember(data []byte) (name string, raw json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", nil, false
	}
	tok, err := dec.Token()
	if err != nil {
		return "", nil, false
	}
	name, ok = tok.(string)
	if !ok || dec.Decode(&raw) != nil {
		return "", nil, false
	}
	return name, raw, true
}
