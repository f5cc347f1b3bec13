package eventtype

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// BenchmarkSchemaWork measures what one schema test (Work's unit: one
// value checked against one subschema) costs the validator, for data and
// schemas of several shapes, each an array of 16 KiB (4 KiB against 200
// subschemas an item): ns/test is the
// validator's time (decoded data, the walk and the validation, not the
// decoding) over the tests the walk counted. The figures set
// DefaultMaxWork's scale (the server's --max-schema-work).
func BenchmarkSchemaWork(b *testing.B) {
	allOf := strings.TrimSuffix(strings.Repeat(`{"minimum": 0},`, 200), ",")
	for _, c := range []struct {
		name, schema, item string
		size               int
	}{
		{"integers", `{"type": "array", "items": {"type": "integer"}}`, `12345`, 16 << 10},
		{"strings", `{"type": "array", "items": {"type": "string", "maxLength": 64}}`, `"abcdefgh"`, 16 << 10},
		{"objects", `{"type": "array", "items": {"type": "object", "required": ["id", "n"], "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}, "n": {"type": "integer", "minimum": 0}, "ok": {"type": "boolean"}}}}`,
			`{"id": "abc", "n": 7, "ok": true}`, 16 << 10},
		{"enum", `{"type": "array", "items": {"enum": ["a", "b", "c", 1, 2, 3]}}`, `"c"`, 16 << 10},
		{"anyOf", `{"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}}`, `null`, 16 << 10},
		{"allOf200", `{"type": "array", "items": {"allOf": [` + allOf + `]}}`, `5`, 4 << 10},
	} {
		s, err := Compile([]byte(c.schema))
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		data := []byte("[" + strings.TrimSuffix(strings.Repeat(c.item+",", c.size/(len(c.item)+1)), ",") + "]")
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		w := &Work{}
		if vs, err := s.check(v, w); len(vs) != 0 || err != nil {
			b.Fatalf("%s: %+v %v", c.name, vs, err)
		}
		b.Run(fmt.Sprintf("%s/%dtests", c.name, w.Spent), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.check(v, &Work{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(w.Spent), "ns/test")
		})
	}
}
