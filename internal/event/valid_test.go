package event

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// validJSONCases are inputs on which validJSON and encoding/json.Valid
// could plausibly disagree: the edges of the number, string, literal and
// structure grammar, UTF-8 that json.Valid does not check, and nesting at
// and past maxNestingDepth.
var validJSONCases = []string{
	// Empty input, whitespace, trailing garbage.
	"", " ", " \t\r\n", "\v1", "\f1", "1\v", "\u00a01", "1\x00", " 1 ", "\t\n\r1\r\n\t",
	"1 2", "{} {}", "[]]", "{}}", "nullx", "true,", `"a""b"`, "\xef\xbb\xbf1",
	// Numbers.
	"0", "-0", "1", "-", "--1", "+1", "01", "-01", "00", "1.", "1.5", "-1.5", ".5",
	"1e", "1e5", "1E+2", "1e-2", "1E+", "1e+-2", "1.e2", "1.5e", "1.5E-07",
	"0.0", "0e0", "0x10", "1_000", "Infinity", "-Infinity", "NaN", "1e400",
	"123456789012345678901234567890", "-0.000000000000000000001e-999", "1.2.3",
	"1ee2", "1e2.5", "0-", "- 1", "[-]", "[1.]", "[01]", "[1e]", "{\"a\":-}",
	// Literals.
	"true", "false", "null", "tru", "nul", "fals", "True", "NULL", "truee", "nulll",
	"[true,false,null]", "[tru]", `{"a":nul}`,
	// Strings and escapes.
	`""`, `"a"`, `"`, `"abc`, `"\"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\x"`, `"\a"`,
	`"\'"`, `"\0"`, `"\u"`, `"\u12"`, `"\u123"`, `"\u1234"`, `"\u12345"`, `"\u12g4"`,
	`"\uABCD"`, `"\uabcd"`, `"\U1234"`, `"\ud800"`, `"\udc00"`, `"\ud83d\ude00"`,
	`"\ud800\u0041"`, `"\u0000"`, "\"\\\"", "\"\\u00\"", "\"a\\", "\"a\\u",
	"\"\x00\"", "\"\x01\"", "\"\x1f\"", "\"\t\"", "\"\n\"", "\"\r\"", "\" \"", "\"\x7f\"",
	// UTF-8, valid and not: json.Valid accepts any byte >= 0x80 in a string.
	"\"caf\xc3\xa9\"", "\"\xff\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
	"\"\xc0\xaf\"", "\"\x80\x80\x80\x80\x80\"", "\xff", "[\xc3\xa9]", "{\"\xff\":\"\xfe\"}",
	"\"long plain run then \xe2\x82\xac and escape \\n and \xff end\"",
	// Arrays.
	"[]", "[ ]", "[1]", "[1,2]", "[1,]", "[,1]", "[,]", "[1 2]", "[", "]", "[[]", "[]]",
	"[[[]]]", "[{}]", "[1,[2,[3]]]", "[\n1\n,\n2\n]", "[1;2]", "[\"a\",]", "[]\x00",
	// Objects.
	"{}", "{ }", `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{"a"}`, `{1:2}`, `{a:1}`,
	`{'a':1}`, `{"a":1 "b":2}`, `{"a":1,"b":2}`, `{,"a":1}`, `{"a"::1}`, `{"a":1]`,
	`[1}`, `{"a":[1,{"b":null}]}`, `{"a":{"b":{"c":{}}}}`, " { \"a\" : 1 , \"b\" : [ ] } ",
	`{"a":1}{`, `{"":""}`, `{"\u0041":1}`, `{"\x":1}`, "{\"a\x00\":1}",
	// Mixed close brackets and nesting near the inline word's 64 levels.
	"[{]}", "{[}]", "{\"a\":[}", "[\"a\":1]",
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65),
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
	strings.Repeat(`{"a":[`, 70) + "1" + strings.Repeat("]}", 70),
	strings.Repeat(`{"a":[`, 70) + "1" + strings.Repeat("}]", 70),
	strings.Repeat("[", 65) + strings.Repeat("]", 64) + "}",
	// Nesting at and past encoding/json's limit.
	strings.Repeat("[", maxNestingDepth) + strings.Repeat("]", maxNestingDepth),
	strings.Repeat("[", maxNestingDepth+1) + strings.Repeat("]", maxNestingDepth+1),
	strings.Repeat(`{"a":`, maxNestingDepth) + "0" + strings.Repeat("}", maxNestingDepth),
	strings.Repeat(`{"a":`, maxNestingDepth+1) + "0" + strings.Repeat("}", maxNestingDepth+1),
	strings.Repeat("[{\"a\":", maxNestingDepth/2) + "[]" + strings.Repeat("}]", maxNestingDepth/2),
	strings.Repeat("[", maxNestingDepth+1),
	strings.Repeat("[", 100000),
}

// TestValidJSON checks validJSON against encoding/json.Valid on
// validJSONCases and on the package's sample events.
func TestValidJSON(t *testing.T) {
	cases := append([]string{fullEvent, batchOf(3), publishBody(5)}, validJSONCases...)
	for _, c := range cases {
		want := json.Valid([]byte(c))
		if got := validJSON([]byte(c)); got != want {
			t.Errorf("validJSON(%.80q) = %v; json.Valid says %v", c, got, want)
		}
	}
}

// TestValidJSONAllocs checks that validJSON does not allocate for a typical
// body nor for nesting up to 64 levels.
func TestValidJSONAllocs(t *testing.T) {
	for _, body := range [][]byte{
		[]byte(publishBody(10)),
		[]byte(strings.Repeat("[", 64) + strings.Repeat("]", 64)),
	} {
		if n := testing.AllocsPerRun(10, func() { validJSON(body) }); n != 0 {
			t.Errorf("validJSON(%.40q...) allocates %v times; want 0", body, n)
		}
	}
}

// FuzzValidJSON checks that validJSON agrees with encoding/json.Valid. The
// deep-nesting seeds make minimization slow: run it with a short
// -fuzzminimizetime (say 2s) to spend the time fuzzing.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validJSONCases {
		if len(c) > 64<<10 {
			continue // TestValidJSON has it; minimizing its mutants would stall the fuzzer
		}
		f.Add([]byte(c))
	}
	f.Add([]byte(fullEvent))
	f.Add([]byte(batchOf(2)))
	f.Add([]byte(publishBody(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v; json.Valid says %v", b, got, want)
		}
	})
}

// publishBody returns a typical publish body: a JSON array of n CloudEvents,
// each with ten string attributes and a data object of about 512 bytes
// (strings, numbers, a nested object and an array).
func publishBody(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"evt-%08d","source":"https://billing.example.com/accounts/4711",`+
			`"type":"com.example.billing.invoice.paid","subject":"invoices/2026/%06d","time":"2026-01-02T15:04:05.%06dZ",`+
			`"datacontenttype":"application/json","dataschema":"https://schemas.example.com/billing/invoice-paid/v3.json",`+
			`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tenant":"acme-corporation-emea",`, i, i, i)
		fmt.Fprintf(&b, `"data":{"invoiceId":"INV-2026-%06d","customer":{"id":"cus_9f8e7d6c5b4a","name":"Ada Lovelace & Co. Ltd",`+
			`"email":"billing@ada-lovelace.example","address":{"line1":"12 Analytical Engine Street","city":"London",`+
			`"postcode":"EC1A 1BB","country":"GB"}},"amount":%d.%02d,"currency":"EUR","taxRate":0.19,"paidAt":1767366245123,`+
			`"lines":[{"sku":"SKU-1001","qty":3,"unitPrice":19.99},{"sku":"SKU-2002","qty":1,"unitPrice":-5e-1}],`+
			`"note":"Paid in full \u2014 thank you! \"Receipt\" sent by e-mail.","tags":["priority","eu","recurring"],`+
			`"refunded":false,"dispute":null}}`, i, 1000+i*37, i%100)
	}
	b.WriteByte(']')
	return b.String()
}

// BenchmarkValidJSON compares validJSON with encoding/json.Valid on a
// typical publish body of 100 events (publishBody).
func BenchmarkValidJSON(b *testing.B) {
	body := []byte(publishBody(100))
	if !json.Valid(body) || !validJSON(body) {
		b.Fatal("the publish body is not valid JSON")
	}
	for _, bm := range []struct {
		name  string
		valid func([]byte) bool
	}{
		{"validJSON", validJSON},
		{"json.Valid", json.Valid},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				bm.valid(body)
			}
		})
	}
}
