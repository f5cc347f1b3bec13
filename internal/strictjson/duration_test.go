package strictjson

import (
	"strings"
	"testing"
	"time"
)

// A Duration reads a Go duration string only; anything else, a number above
// all, is refused with an example of what to send, naming the field.
func TestDurationDecode(t *testing.T) {
	var v struct {
		Timeout *Duration `json:"timeout"`
	}
	for _, tc := range []struct {
		body   string
		want   time.Duration
		detail string // the whole detail; "" when accepted
	}{
		{`{"timeout":"1m30s"}`, 90 * time.Second, ""},
		{`{"timeout":"250ms"}`, 250 * time.Millisecond, ""},
		{`{"timeout":30}`, 0, `must be a duration string, not a number: for 30 seconds send "30s" (units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h")`},
		{`{"timeout":1.5}`, 0, `must be a duration string, not a number: for 1.5 seconds send "1.5s" (units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h")`},
		{`{"timeout":-3}`, 0, `must be a duration string such as "30s", not a number (units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h")`},
		{`{"timeout":true}`, 0, `must be a duration string such as "30s", not a boolean (units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h")`},
		{`{"timeout":{}}`, 0, `must be a duration string such as "30s", not an object (units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h")`},
		{`{"timeout":"30"}`, 0, `"30" has no unit: for 30 seconds send "30s" (units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h")`},
		{`{"timeout":"soon"}`, 0, `"soon" is not a duration such as "30s" (units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h")`},
		{`{"timeout":"9999999999h"}`, 0, `"9999999999h" is out of range: a duration must be shorter than 2562047h (about 292 years)`},
	} {
		v.Timeout = nil
		err := Decode([]byte(tc.body), "", &v)
		switch {
		case tc.detail == "" && (err != nil || v.Timeout == nil || v.Timeout.D() != tc.want):
			t.Errorf("%s: %v, %v; want %s", tc.body, v.Timeout, err, tc.want)
		case tc.detail != "" && (err == nil || err.Field != "timeout" || err.Detail != tc.detail):
			t.Errorf("%s: %v\nwant timeout: %s", tc.body, err, tc.detail)
		}
	}
}

func TestParseDurationShortensLongInput(t *testing.T) {
	for _, s := range []string{strings.Repeat("x", 1000), strings.Repeat("9", 1000)} {
		_, msg := ParseDuration(s)
		if len(msg) > 250 || !strings.Contains(msg, "...") {
			t.Errorf("message not shortened: %s", msg)
		}
	}
}
