package eventtype_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/strictjson"
)

// patterns is n properties of distinct patterns of about 1,800
// instructions each.
func patterns(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"a%d": {"pattern": "^[a-z]{1,900}%d$"}, `, i, i)
	}
	return b.String()
}

// create makes a type of the schema as version 1, returning New's error.
func create(schema string) error {
	in := eventtype.Input{Name: new(string), Schemas: map[string]json.RawMessage{"1": json.RawMessage(schema)}}
	*in.Name = "t"
	_, err := in.New(t0)
	return err
}

// TestCostlySchemasAreRefused: a schema whose numbers, regular
// expressions, $ref loops or branching recursion would make every check
// costly (or fail every event) is refused when written, naming schemas.1;
// schemas near the bounds compile.
func TestCostlySchemasAreRefused(t *testing.T) {
	for _, schema := range []string{
		`{"minimum": 1e999999}`,
		`{"enum": [1, 2, 1e-401]}`,
		`{"const": ` + strings.Repeat("9", eventtype.MaxNumberLen+1) + `}`,
		`{"pattern": "` + strings.Repeat(`a{1000}`, 3) + `"}`,
		`{"patternProperties": {"` + strings.Repeat(`[a-z]{900}`, 2) + `x": true}}`,
		`{"properties": {` + patterns(12) + `"b": true}}`,
		`{"$ref": "#"}`,
		`{"anyOf": [{"type": "string"}, {"$ref": "#"}]}`,
		`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`,
		`{"properties": {"a": {"not": {"$ref": "#/properties/a"}}}}`,
		`{"$defs": {"a": {"type": "array", "items": {"anyOf": [{"allOf": [{"$ref": "#/$defs/a"}, {"const": 0}]}, {"$ref": "#/$defs/a"}]}}}, "$ref": "#/$defs/a"}`,
		`{"$defs": {"a": {"items": {"oneOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}}, "$ref": "#/$defs/a"}`,
	} {
		var se *strictjson.Error
		if err := create(schema); !errors.As(err, &se) || se.Field != "schemas.1" {
			t.Errorf("%.100s: %v; want a problem naming schemas.1", schema, err)
		}
	}
	for _, schema := range []string{
		`{"minimum": 1e308, "maximum": 1.7976931348623157e308, "multipleOf": 5e-324}`,
		`{"pattern": "^[a-z0-9]{1,64}$", "properties": {"id": {"pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}}}`,
		`{"$defs": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}`,
		`{"$ref": "http://json-schema.org/draft-07/schema#"}`,
		`{"oneOf": [{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}, {"type": "array", "items": {"type": "integer"}}]}`,
		`{"properties": {` + patterns(11) + `"b": true}}`,
	} {
		if err := create(schema); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
}

// TestCheckBoundsTheData: at publish, a number beyond the bounds is a
// violation naming it (the validator's exact arithmetic on it would cost
// without bound); a string checked against format "regex" (draft-07) is
// compiled only within MaxPatternSize; and every violation's message and
// pointer are cut (512 and 256 bytes), however much of the data or the
// schema the validator's message quotes.
func TestCheckBoundsTheData(t *testing.T) {
	ints, err := eventtype.Compile([]byte(`{"type": "array", "items": {"type": "integer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for data, ptr := range map[string]string{
		`[1, 2, 1e999999]`:       "/2",
		`[1, 1E+401]`:            "/1",
		`[1, 1e-99999999999999]`: "/1",
		`[` + strings.Repeat("1", eventtype.MaxNumberLen+1) + `]`: "/0",
	} {
		vs := ints.CheckJSON([]byte(data))
		if len(vs) != 1 || vs[0].Pointer != ptr {
			t.Errorf("%.40s: %+v; want one violation at %s", data, vs, ptr)
		}
	}
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	if vs := ints.CheckJSON(deep(eventtype.MaxDataDepth + 2)); len(vs) != 1 || !strings.Contains(vs[0].Message, "levels deep") {
		t.Errorf("data %d levels deep: %+v; want one violation", eventtype.MaxDataDepth+1, vs)
	}
	any, _ := eventtype.Compile([]byte(`{}`))
	if vs := any.CheckJSON(deep(eventtype.MaxDataDepth + 1)); len(vs) != 0 {
		t.Errorf("data %d levels deep: %+v", eventtype.MaxDataDepth, vs)
	}
	if vs := ints.CheckJSON([]byte(`[1, 1e300, 12345678901234567890]`)); len(vs) != 0 {
		t.Errorf("numbers within the bounds: %+v", vs)
	}
	regex, err := eventtype.Compile([]byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "format": "regex"}`))
	if err != nil {
		t.Fatal(err)
	}
	if vs := regex.CheckJSON([]byte(`"` + strings.Repeat(`a{1000}`, 100) + `"`)); len(vs) != 1 || vs[0].Keyword != "format" {
		t.Errorf("a regular expression of 100,000 instructions as data: %+v; want a format violation", vs)
	}
	if vs := regex.CheckJSON([]byte(`"^[a-z]{1,64}$"`)); len(vs) != 0 {
		t.Errorf("a small regular expression: %+v", vs)
	}
	long := strings.Repeat("a", 10000)
	for schema, data := range map[string]string{
		`{"enum": [` + strings.Repeat(`"abcdefghij", `, 200) + `"x"]}`: `"y"`,
		`{"pattern": "^x"}`:                            `"` + long + `"`,
		`{"additionalProperties": {"type": "string"}}`: `{"` + long + `": 1}`,
	} {
		s, err := eventtype.Compile([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		vs := s.CheckJSON([]byte(data))
		if len(vs) == 0 {
			t.Errorf("%.20s: valid", data)
		}
		for _, v := range vs {
			if len(v.Message) > 512 || len(v.Pointer) > 256 {
				t.Errorf("a violation of %d bytes of message, %d of pointer: %.80s", len(v.Message), len(v.Pointer), v.Message)
			}
		}
	}
}

// TestEnumCostsOneLookup: an enum is checked with one lookup of the value,
// not a comparison with each member (an exact fraction made of each
// number compared, so that a 1 MiB array of numbers against an enum of
// 250 took two minutes and 30 GB), and means what the validator's enum
// means: 1 and 1.0 equal, an object's members in any order, the same
// message.
func TestEnumCostsOneLookup(t *testing.T) {
	members := make([]string, 250)
	for i := range members {
		members[i] = fmt.Sprint(i * 7)
	}
	s, err := eventtype.Compile([]byte(`{"type": "array", "items": {"enum": [` + strings.Join(members, ", ") + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("[" + strings.Repeat("1743, ", 999) + "0]")
	if allocs := testing.AllocsPerRun(3, func() { s.CheckJSON(data) }); allocs > 20*1000 {
		t.Errorf("checking 1,000 numbers against an enum of 250: %.0f allocations; want at most 20 a number", allocs)
	}
	mixed, err := eventtype.Compile([]byte(`{"enum": [1, "a", null, true, [1, {"x": 2, "y": [3]}], {"k": 1.5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for data, valid := range map[string]bool{
		`1.0`: true, `1e0`: true, `"a"`: true, `null`: true, `true`: true, `{"k": 15e-1}`: true,
		`[1.00, {"y": [3], "x": 2}]`: true,
		`2`:                          false, `"1"`: false, `false`: false, `[{"x": 2, "y": [3]}, 1]`: false, `{"k": 1.5, "j": 1}`: false, `"A"`: false,
	} {
		vs := mixed.CheckJSON([]byte(data))
		if (len(vs) == 0) != valid {
			t.Errorf("%s: %+v; want valid %v", data, vs, valid)
		}
		if !valid && (len(vs) != 1 || vs[0].Keyword != "enum" || vs[0].Message != "'enum' failed") {
			t.Errorf("%s: %+v; want one enum violation", data, vs)
		}
	}
	if vs := s.CheckJSON([]byte(`[3]`)); len(vs) != 1 || vs[0].Pointer != "/0" || !strings.HasPrefix(vs[0].Message, "value must be one of 0, 7, 14") {
		t.Errorf("an item not in the enum: %+v", vs)
	}
}

// TestNearestIsBounded: the nearest catalog name to a refused type is
// found within a bounded work (the edit distance's cells): a type of 256
// bytes against 1,000 names of 256 cost 65 million cells (150 ms) of
// every refused publish (past the bound, the nearest of the names
// compared, those nearest in length first); the nearest of close names is
// still found.
func TestNearestIsBounded(t *testing.T) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("%03d", i) + strings.Repeat("x", 253)
	}
	long := strings.Repeat("y", 256)
	if allocs := testing.AllocsPerRun(1, func() { eventtype.Nearest(long, names) }); allocs > 1000 {
		t.Errorf("Nearest of a far type among 1,000 long names: %.0f allocations; want at most 1,000 (a few per name compared)", allocs)
	}
	names = append(names, "invoice.paid", "invoice.voided", "order.placed")
	for in, want := range map[string]string{"invoice.piad": "invoice.paid", "Order.Placed": "order.placed"} {
		if got := eventtype.Nearest(in, names); got != want {
			t.Errorf("Nearest(%.20q) = %.20q; want %.20q", in, got, want)
		}
	}
}

// TestStoredSchemaThatNoLongerCompiles: a version stored before a bound
// that it breaks (here a $ref loop) is left out of the compiled catalog;
// an event that names no version is then refused under enforce, naming
// type and saying so (it made the check dereference a missing schema),
// and an event asking for a version that compiles is checked against it.
func TestStoredSchemaThatNoLongerCompiles(t *testing.T) {
	et := newType(t, `{"name": "thing", "schemas": {"1": {"type": "object"}}}`)
	et.Schemas[2] = json.RawMessage(`{"$ref": "#"}`) // as an older Herald stored it
	c := eventtype.NewCatalog(&loader{version: 1, types: []eventtype.EventType{et}}, nil, 0, nil)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := `{"specversion": "1.0", "id": "1", "source": "/s", "type": "thing", "data": {"a": 1}}`
	_, err := c.Check(structured(t, ev), eventtype.ModeEnforce, false, 0)
	refusal := asRefusal(t, err)
	if refusal == nil || refusal.Field != "type" || !strings.Contains(refusal.Detail, "does not compile") {
		t.Fatalf("an event of a type whose newest version does not compile: %v; want a refusal naming type", refusal)
	}
	v1 := strings.Replace(ev, `"data"`, `"dataschema": "https://x.example/thing/v1", "data"`, 1)
	if out, refusal := c.Check(structured(t, v1), eventtype.ModeEnforce, false, 0); refusal != nil || out != nil {
		t.Fatalf("an event asking for version 1: %v %v", out, refusal)
	}
}
