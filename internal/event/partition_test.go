package event

import (
	"net/http"
	"strings"
	"testing"
)

// TestPartitionKey: a partitionkey of up to MaxPartitionKeyLen bytes is
// read back by PartitionKey; one longer, empty, or not a string is refused
// naming partitionkey in every format (ce-partitionkey in binary mode); an
// event without one has "".
func TestPartitionKey(t *testing.T) {
	ce := func(key string) string {
		return `{"specversion":"1.0","id":"1","source":"/s","type":"t","partitionkey":` + key + `}`
	}
	long := strings.Repeat("k", MaxPartitionKeyLen+1)
	bin := func(key string) http.Header {
		return header("text/plain", "ce-specversion", "1.0", "ce-id", "1", "ce-source", "/s", "ce-type", "t", "ce-partitionkey", key)
	}
	checkRefusals(t, []refusalCase{
		{"too long", header(mediaStructured), ce(`"` + long + `"`), "partitionkey", 0, "at most 256 bytes"},
		{"a number", header(mediaStructured), ce(`7`), "partitionkey", 0, "must be a string"},
		{"a boolean", header(mediaStructured), ce(`true`), "partitionkey", 0, "must be a string"},
		{"empty", header(mediaStructured), ce(`""`), "partitionkey", 0, "must not be empty"},
		{"in a batch", header(mediaBatch), "[" + ce(`"a"`) + "," + ce(`"`+long+`"`) + "]", "events[1].partitionkey", 1, "at most"},
		{"binary", bin(long), "x", "ce-partitionkey", 0, "at most"},
	})
	for _, tt := range []struct {
		name string
		h    http.Header
		body string
		want string
	}{
		{"longest", header(mediaStructured), ce(`"` + long[1:] + `"`), long[1:]},
		{"binary", bin("order-7"), "x", "order-7"},
		{"none", header(mediaStructured), `{"specversion":"1.0","id":"1","source":"/s","type":"t"}`, ""},
	} {
		evs, err := Parse(tt.h, []byte(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := evs[0].PartitionKey(); got != tt.want {
			t.Errorf("%s: PartitionKey() = %q; want %q", tt.name, got, tt.want)
		}
	}
}
