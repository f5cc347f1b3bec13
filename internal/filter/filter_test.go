package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

func mustCompile(t testing.TB, raw string) *Matcher {
	t.Helper()
	m, err := Compile(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("Compile(%s): %v", raw, err)
	}
	return m
}

// The errors are *FieldError, whose Error is "field: detail".
func TestCompileErrorType(t *testing.T) {
	_, err := Compile(json.RawMessage(`[{"operator_type": "StringIn", "key": "subject", "values": ["a", 1]}]`))
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %T %v, want *FieldError", err, err)
	}
	if fe.Field != "advanced_filters[0].values[1]" || fe.Detail != "must be a string, not a number" ||
		err.Error() != "advanced_filters[0].values[1]: must be a string, not a number" {
		t.Fatalf("got %q / %q / %q", fe.Field, fe.Detail, err.Error())
	}
}

func TestNil(t *testing.T) {
	for _, raw := range []string{"", "  ", "null", "[]", " [\n] "} {
		m, err := Compile(json.RawMessage(raw))
		if m != nil || err != nil {
			t.Fatalf("Compile(%q) = %v, %v; want nil, nil", raw, m, err)
		}
	}
	var m *Matcher
	if !m.Match(NewEvent([]byte(`{}`))) || !m.Match(nil) || m.Len() != 0 {
		t.Fatal("a nil Matcher must match everything")
	}
	if i, why := m.Explain(nil); i != -1 || why != "" {
		t.Fatalf("nil Matcher Explain = %d %q", i, why)
	}
	// A nil Event: every key is missing.
	m = mustCompile(t, `[{"operator_type": "StringNotIn", "key": "subject", "values": ["a"]}, {"operator_type": "IsNullOrUndefined", "key": "data.x"}]`)
	if !m.Match(nil) {
		t.Fatal("NotIn and IsNullOrUndefined must match a nil event")
	}
	m = mustCompile(t, `[{"operator_type": "IsNotNull", "key": "data.x"}]`)
	if i, why := m.Explain(nil); m.Match(nil) || i != 0 || why != "data.x is missing" {
		t.Fatalf("IsNotNull on a nil event: %d %q", i, why)
	}
}

const benchEvent = `{"specversion":"1.0","id":"evt-1","source":"/orders","type":"Order.Created","subject":"Orders/EU/42",` +
	`"datacontenttype":"application/json","time":"2026-03-01T12:00:00Z","priority":5,"region":"EU-West",` +
	`"data":{"amount":150,"currency":"EUR","note":"Café Straße","customer":{"region":"EU","tier":"Gold"},` +
	`"tags":["Red","green","blue"],"codes":[1,2,3],"ok":true,"nothing":null}}`

// benchFilters are 25 filters that all pass on benchEvent (so all are
// evaluated), of every operator, on attributes and data.
const benchFilters = `[
{"operator_type": "NumberGreaterThan", "key": "data.amount", "value": 100},
{"operator_type": "NumberLessThan", "key": "data.amount", "value": 1000},
{"operator_type": "NumberGreaterThanOrEquals", "key": "data.amount", "value": 150},
{"operator_type": "NumberLessThanOrEquals", "key": "priority", "value": 5},
{"operator_type": "NumberIn", "key": "data.codes", "value": null, "values": [3, 7]},
{"operator_type": "NumberNotIn", "key": "data.amount", "values": [1]},
{"operator_type": "NumberInRange", "key": "data.amount", "values": [[100, 200]]},
{"operator_type": "NumberNotInRange", "key": "data.amount", "values": [[0, 10]]},
{"operator_type": "BoolEquals", "key": "data.ok", "value": true},
{"operator_type": "StringContains", "key": "data.note", "values": ["strasse", "straße"]},
{"operator_type": "StringNotContains", "key": "subject", "values": ["asia"]},
{"operator_type": "StringBeginsWith", "key": "subject", "values": ["orders/"]},
{"operator_type": "StringNotBeginsWith", "key": "type", "values": ["herald."]},
{"operator_type": "StringEndsWith", "key": "subject", "values": ["/42"]},
{"operator_type": "StringNotEndsWith", "key": "source", "values": ["/x"]},
{"operator_type": "StringIn", "key": "data.currency", "values": ["usd", "eur"]},
{"operator_type": "StringNotIn", "key": "data.customer.region", "values": ["us"]},
{"operator_type": "StringIn", "key": "data.tags", "values": ["BLUE"]},
{"operator_type": "StringIn", "key": "region", "values": ["eu-west"]},
{"operator_type": "StringIn", "key": "data.customer.tier", "values": ["gold"]},
{"operator_type": "IsNullOrUndefined", "key": "data.nothing"},
{"operator_type": "IsNullOrUndefined", "key": "data.absent"},
{"operator_type": "IsNotNull", "key": "id"},
{"operator_type": "IsNotNull", "key": "data.customer"},
{"operator_type": "StringNotIn", "key": "dataschema", "values": ["x"]}]`

// An Event parses its attributes once and its data once, however many
// matchers read it, and its data only when a data.* key is read.
func TestEventParsedOnce(t *testing.T) {
	attrOnly := mustCompile(t, `[{"operator_type": "StringIn", "key": "type", "values": ["order.created"]}, {"operator_type": "IsNotNull", "key": "priority"}]`)
	ev := NewEvent([]byte(benchEvent))
	if ev.parses != 0 {
		t.Fatal("NewEvent parsed")
	}
	for range 3 {
		if !attrOnly.Match(ev) {
			t.Fatal("no match")
		}
	}
	if ev.parses != 1 || ev.dataParses != 0 {
		t.Fatalf("attribute filters: %d parses, %d data parses; want 1, 0", ev.parses, ev.dataParses)
	}
	all := mustCompile(t, benchFilters)
	for range 3 {
		if i, why := all.Explain(ev); i >= 0 {
			t.Fatalf("filter %d fails: %s", i, why)
		}
		if !all.Match(ev) {
			t.Fatal("no match")
		}
	}
	if ev.parses != 1 || ev.dataParses != 1 {
		t.Fatalf("%d parses, %d data parses; want 1, 1", ev.parses, ev.dataParses)
	}
}

// Match allocates nothing once the event is parsed.
func TestMatchAllocs(t *testing.T) {
	m := mustCompile(t, benchFilters)
	ev := NewEvent([]byte(benchEvent))
	m.Match(ev)
	if n := testing.AllocsPerRun(100, func() { m.Match(ev) }); n != 0 {
		t.Fatalf("Match allocates %v times per run", n)
	}
}

// A Matcher is safe for concurrent use, each goroutine with its Events.
func TestConcurrentMatchers(t *testing.T) {
	m := mustCompile(t, benchFilters)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if !m.Match(NewEvent([]byte(benchEvent))) {
					t.Error("no match")
					return
				}
			}
		})
	}
	wg.Wait()
}

// foldRune is canonical for strings.EqualFold: every rune folds to a rune
// EqualFold equates with it, and all the runes of a case folding orbit
// fold to the same rune.
func TestFoldRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		f := foldRune(r)
		if !strings.EqualFold(string(r), string(f)) {
			t.Fatalf("foldRune(%U) = %U, which EqualFold does not equate", r, f)
		}
		if g := foldRune(unicode.SimpleFold(r)); g != f {
			t.Fatalf("foldRune(%U) = %U but foldRune(SimpleFold) = %U", r, f, g)
		}
	}
	if got := string(appendFold(nil, "ÉCOLE Straße K\xff")); got != string(appendFold(nil, "école STRAßE k\uFFFD")) {
		t.Fatalf("appendFold: %q", got)
	}
}

// The compiled Matcher agrees with the reference implementation on random
// events and filters.
func TestMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const runs = 20000
	matched, later := 0, 0
	for iter := range runs {
		payload := randomEvent(rng)
		raw := randomFilters(rng)
		m := mustCompile(t, raw)
		var list []Filter
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatal(err)
		}
		want := refMatch(list, []byte(payload))
		got, why := m.Explain(NewEvent([]byte(payload)))
		if got != want || m.Match(NewEvent([]byte(payload))) != (want < 0) {
			t.Fatalf("#%d: event %s\nfilters %s\nExplain: %d %s; the reference: %d", iter, payload, raw, got, why, want)
		}
		switch {
		case got < 0:
			matched++
		case got > 0:
			later++
		}
	}
	// Every outcome is well represented: a match, the first filter
	// failing, a later one failing.
	if matched < runs/20 || later < runs/20 || runs-matched-later < runs/20 {
		t.Fatalf("of %d random cases, %d match and %d fail after the first filter", runs, matched, later)
	}
	t.Logf("of %d random cases, %d match and %d fail after the first filter", runs, matched, later)
}

// The pools TestMatchesReference draws its events and filters from.
var (
	randScalars = []string{`0`, `-0`, `1`, `2.5`, `-7`, `100`, `1e3`, `""`, `"a"`, `"A"`, `"ab"`, `"Ba"`, `"bA"`, `"é"`, `"É"`, `"100"`, `"true"`,
		`true`, `false`, `null`, `{"x":1}`, `[]`}
	randStrings = []string{`""`, `"a"`, `"A"`, `"b"`, `"ab"`, `"É"`, `"é"`, `"100"`}
	randNumbers = []string{`-7`, `0`, `1`, `2.5`, `100`, `1000`}
	randKeys    = []string{"data.a", "data.b", "data.c.d", "data.c", "subject", "ext", "Data.a", "dataschema"}
)

// randomValue is a JSON value for an event: one of randScalars, or an array
// of up to three of them.
func randomValue(rng *rand.Rand) string {
	if rng.IntN(4) == 0 {
		n := rng.IntN(4)
		items := make([]string, n)
		for i := range items {
			items[i] = randScalars[rng.IntN(len(randScalars))]
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	return randScalars[rng.IntN(len(randScalars))]
}

// randomList is a JSON array of n items of pool.
func randomList(rng *rand.Rand, pool []string, n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = pool[rng.IntN(len(pool))]
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// randomEvent is a structured CloudEvent with some of the keys the filters
// of randomFilters test, its data sometimes not JSON.
func randomEvent(rng *rand.Rand) string {
	var data, attrs []string
	for _, k := range []string{"a", "b"} {
		if rng.IntN(4) > 0 {
			data = append(data, fmt.Sprintf("%q:%s", k, randomValue(rng)))
		}
	}
	switch rng.IntN(3) {
	case 0:
		data = append(data, `"c":{"d":`+randomValue(rng)+`}`)
	case 1:
		data = append(data, `"c":`+randomValue(rng))
	}
	if rng.IntN(4) > 0 {
		attrs = append(attrs, `"subject":`+randStrings[rng.IntN(len(randStrings))])
	}
	if rng.IntN(2) == 0 {
		attrs = append(attrs, `"ext":`+randScalars[rng.IntN(len(randScalars)-2)])
	}
	switch rng.IntN(6) {
	case 0:
		attrs = append(attrs, `"data_base64":"AA=="`)
	case 1:
		attrs = append(attrs, `"datacontenttype":"text/plain","data":{`+strings.Join(data, ",")+`}`)
	default:
		attrs = append(attrs, `"data":{`+strings.Join(data, ",")+`}`)
	}
	return `{"specversion":"1.0","id":"x","source":"/s","type":"t",` + strings.Join(attrs, ",") + `}`
}

// randomFilters is a JSON array of one to four valid filters on randKeys.
func randomFilters(rng *rand.Rand) string {
	n := 1 + rng.IntN(4)
	filters := make([]string, n)
	for i := range filters {
		op := operators[rng.IntN(len(operators))]
		f := fmt.Sprintf(`{"operator_type": %q, "key": %q`, op.name, randKeys[rng.IntN(len(randKeys))])
		switch {
		case op.operand == operandValue && op.kind == kindBool:
			f += fmt.Sprintf(`, "value": %v`, rng.IntN(2) == 0)
		case op.operand == operandValue:
			f += `, "value": ` + randNumbers[rng.IntN(len(randNumbers))]
		case op.operand == operandRanges:
			f += `, "values": [[0, 1], [2.5, 100]]`
			if rng.IntN(2) == 0 {
				f = strings.Replace(f, "[[0, 1], ", "[[-7, -7], ", 1)
			}
		case op.operand == operandValues && op.kind == kindNumber:
			f += `, "values": ` + randomList(rng, randNumbers, 1+rng.IntN(3))
		case op.operand == operandValues:
			f += `, "values": ` + randomList(rng, randStrings, 1+rng.IntN(3))
		}
		filters[i] = f + "}"
	}
	return "[" + strings.Join(filters, ", ") + "]"
}

// TestArraysTestedOnce: every operator tests an array's elements at most
// once each, in Match and Explain alike, so the work grows as the array
// does (Event.Tested counts it: one test per element and value it is
// compared with, at most 2 values here). The elements never hit, so each
// filter reads them all.
func TestArraysTestedOnce(t *testing.T) {
	const n = 300
	small, large := arrayEvent(n), arrayEvent(4*n)
	for op := range operands {
		m := mustCompile(t, filterOn(op))
		for _, explain := range []bool{false, true} {
			work := func(payload []byte) int {
				ev := NewEvent(payload)
				if explain {
					m.Explain(ev)
				} else {
					m.Match(ev)
				}
				return ev.Tested()
			}
			if a, b := work(small), work(large); a > 2*n || b > 4*a {
				t.Errorf("%s (explain %v): %d values tested for %d elements, %d for %d", op, explain, a, n, b, 4*n)
			}
		}
	}
}
