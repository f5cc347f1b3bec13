package strictjson

import (
	"encoding/json"
	"testing"
)

// FuzzParse: the parser accepts only valid JSON, and never panics. (The
// API's FuzzManagementDecode checks decoding into its request types.)
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a":[1,"x",null]}`, `"\ud800"`, `[1] 2`, `{"a":"\u0000"}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := parseJSON(data, ""); err == nil && !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
	})
}
