package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/herald-events/herald/internal/eventtype"
)

// BenchmarkSchemaCheck validates one schema-enforced event's data (the
// invoice, schemaData, of the bench's default --payload, 512 bytes, and of
// 2 KB) against invoiceSchema, as the publish path's check does
// (eventtype.Schema.CheckJSON: decoding the data, then the validator's
// walk): what schema-enforced adds per event (docs/benchmarks.md, "Issue
// 38").
func BenchmarkSchemaCheck(b *testing.B) {
	s, err := eventtype.Compile([]byte(invoiceSchema))
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{512, 2048} {
		data := schemaData(size)
		if vs := s.CheckJSON(data); len(vs) != 0 {
			b.Fatalf("the bench's data breaks its schema: %+v", vs)
		}
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			loopCPU(b, func() error {
				if vs := s.CheckJSON(data); len(vs) != 0 {
					return fmt.Errorf("%+v", vs)
				}
				return nil
			})
		})
	}
}

// BenchmarkSchemaCheckParts measures what BenchmarkSchemaCheck's time is
// made of, and what the alternatives looked at for issue 38's bar would
// save (docs/benchmarks.md, "Issue 38: where the check's time goes"):
//   - decode/number: the data decoded as the check decodes it
//     (jsonschema.UnmarshalJSON: encoding/json's Decoder with UseNumber);
//   - decode/float: decoded by json.Unmarshal instead (numbers as
//     float64, no Decoder buffer; loses the precision of numbers of more
//     than 15 significant digits, so not used);
//   - validate/as-is: the validator's walk of decoded data;
//   - validate/no-number-keywords: the same walk against the schema without
//     its number keywords ("integer" made "number", no minimum or
//     maximum): the most a number fast path in the validator could save.
func BenchmarkSchemaCheckParts(b *testing.B) {
	noNumbers := regexp.MustCompile(`"type": "integer"|, "minimum": \d+|, "maximum": \d+`).ReplaceAllStringFunc(invoiceSchema,
		func(m string) string {
			if m == `"type": "integer"` {
				return `"type": "number"`
			}
			return ""
		})
	asIs, bare := compileBench(b, invoiceSchema), compileBench(b, noNumbers)
	for _, size := range []int{512, 2048} {
		data := schemaData(size)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		parts := map[string]func() error{
			"decode/number": func() error { _, err := jsonschema.UnmarshalJSON(bytes.NewReader(data)); return err },
			"decode/float": func() error {
				var f any
				return json.Unmarshal(data, &f)
			},
			"validate/as-is":              func() error { return asIs.Validate(v) },
			"validate/no-number-keywords": func() error { return bare.Validate(v) },
		}
		for _, name := range []string{"decode/number", "decode/float", "validate/as-is", "validate/no-number-keywords"} {
			b.Run(fmt.Sprintf("%s/%dB", name, size), func(b *testing.B) { loopCPU(b, parts[name]) })
		}
	}
}

// compileBench compiles a schema for BenchmarkSchemaCheckParts as
// eventtype.Compile does.
func compileBench(b *testing.B, schema string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	if err != nil {
		b.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("urn:bench", doc); err != nil {
		b.Fatal(err)
	}
	s, err := c.Compile("urn:bench")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// loopCPU runs f b.N times (b.Loop), reporting its allocations and the
// process's CPU time per run (cpu-ns/op, from /proc: procCPU), which the
// other processes of a shared machine do not inflate as they do the
// wall-clock ns/op.
func loopCPU(b *testing.B, f func() error) {
	b.ReportAllocs()
	cpu0 := procCPU(0)
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((procCPU(0)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
