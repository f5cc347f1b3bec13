package expr

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// lazyEvent is an event whose data exercises every JSON kind, escapes,
// characters encoding/json escapes, numbers in every notation, empty
// containers, an object large enough to be searched through a map and,
// unescaped, U+2028 in a value and a name (LS).
var lazyEvent = strings.ReplaceAll(`{"specversion":"1.0","id":"e1","source":"/shop","type":"order.created","time":"2024-05-01T10:00:00Z",
	"tenant":"acme","priority":3,"urgent":true,"dataschema":null,
	"data":{"amount":120.5,"currency":"EUR","items":[{"sku":"a","qty":2},{"sku":"b","qty":1.0}],
	"customer":{"name":"Ada <ada@example.com>","tags":["x","y"]},"nums":[1,2.5,-0,1e3,1E-7,123456789012345678,0.1,1e21,-2e-9],
	"text":"line\nbreak \"quoted\" caf\u00e9 \ud83d\ude00 \u0001 \u2028 & <b>","raw":"é – ok LS","LS":"LS","sep":"a b","flag":false,"none":null,
	"empty":{},"nothing":[],"nested":[[1,[2]],{"a":{"b":[]}}],
	"wide":{"k01":1,"k02":2,"k03":3,"k04":4,"k05":5,"k06":6,"k07":7,"k08":8,"k09":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17}}}`, "LS", "\u2028")

// lazyCases are expressions whose results (output or error) must be the
// same on the lazy and the eager Input.
var lazyCases = []string{
	// reading members and elements
	`data`, `event`, `data.amount`, `data.customer.name`, `data.items[1].qty`, `data.nums`, `data.text`,
	`data.raw`, `data.sep`, `data.none`, `data.empty`, `data.nothing`, `data.nested`, `data.wide.k17`, `data.wide`,
	`data["currency"]`, `data.items[0]["sku"]`, `data.nested[0][1][0]`, `event.tenant + event.type`,
	// errors of reading
	`data.missing`, `data.customer.email`, `data.wide.k99`, `data.items[5]`, `data.items[-1]`, `data.items["a"]`,
	`data[1]`, `data.currency.code`, `event.dataschema`, `data.items[0.5]`, `data.nums[1u]`, `data.nums[2.0]`,
	// presence, in, size
	`has(data.amount)`, `has(data.missing)`, `has(data.none)`, `has(data.wide.k05)`, `has(event.dataschema)`,
	`"currency" in data`, `"k16" in data.wide`, `1 in data`, `"x" in data.customer.tags`, `2.5 in data.nums`,
	`2 in data.items.map(i, i.qty)`, `{"sku": "a", "qty": 2} in data.items`, `size(data)`, `size(data.nums)`,
	`size(data.wide)`, `size(event)`, `size(data.empty)`, `size(data.text)`, `data.?missing.orValue(7)`,
	`data.?customer.?name`, `data[?"amount"]`, `data.items[?3].orValue(0)`, `data.items[?1].qty`,
	// equality
	`data == data`, `data.items == data.items`, `data.customer == {"name": "Ada <ada@example.com>", "tags": ["x", "y"]}`,
	`{"name": "Ada <ada@example.com>", "tags": ["x", "y"]} == data.customer`, `data.customer == {"name": "Ada"}`,
	`data.customer == {"name": "Eve", "tags": ["x", "y"]}`, `data.items[1] == {"sku": "b", "qty": 2}`,
	`data.customer.tags == ["x", "z"]`, `data.customer == {"name": "Ada <ada@example.com>", "tagz": ["x", "y"]}`,
	`data.items[0] == {"sku": "a", "qty": 2}`, `data.items[1] == {"sku": "b", "qty": 1u}`, `data.nums[0] == 1`,
	`data.customer.tags == ["x", "y"]`, `["x", "y"] == data.customer.tags`, `data.nothing == []`, `data.empty == {}`,
	`data.none == null`, `data == null`, `data.items != data.nums`, `data.amount == "120.5"`,
	// macros
	`data.items.map(i, i.sku)`, `data.items.filter(i, i.qty > 1)`, `data.items.exists(i, i.sku == "b")`,
	`data.items.all(i, i.qty >= 1)`, `data.nums.exists_one(x, x == 0.1)`, `data.wide.all(k, k.startsWith("k"))`,
	`size(data.wide.filter(k, data.wide[k] > 15))`, `"k16" in data.wide.filter(k, data.wide[k] > 15)`, `data.customer.exists(k, k == "nope")`, `data.customer.all(k, k != "")`, `data.items.map(i, i.price)`,
	`data.items.all(i, i.qty > "x")`, `data.nums.map(x, x * 2.0)`, `data.nested.map(n, size(n))`,
	// types and conversions
	`type(data) == map`, `type(data.items) == list`, `type(data.text) == string`, `type(data.amount) == double`,
	`string(data.items)`, `int(data.amount)`, `dyn(data).customer`, `data.amount + 1`, `data.items + [1]`,
	`[1] + data.items`, `data.items + data.nums`, `size(data.items + data.items)`, `data.customer + 1`,
	`string(data.customer)`, `bool(data.flag)`, `type(data)`, `double(data.nums[0])`,
	// extensions
	`data.customer.tags.join("-")`, `math.greatest(data.nums)`, `math.least([data.amount, 3.0])`,
	`"%s and %s".format([data.customer.tags, data.currency])`, `"%s".format([data.items])`, `data.text.size()`,
	`base64.encode(bytes(data.currency))`, `data.items.map(i, i.sku).join(",")`,
}

// TestLazyAsEager: every expression of lazyCases, transform and filter,
// gives on the lazy Input (the event's JSON indexed) what it gives on the
// eager one (decoded into Go values): the same output or the same error.
func TestLazyAsEager(t *testing.T) {
	lazy, eager := input(t, lazyEvent), eagerInput(t, lazyEvent)
	if _, ok := lazy.data.(object); !ok {
		t.Fatalf("the lazy Input's data is a %T", lazy.data)
	}
	ctx := context.Background()
	for _, src := range lazyCases {
		tr, err := CompileTransform(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, skip, err := tr.Apply(ctx, lazy)
		want, wantSkip, wantErr := tr.Apply(ctx, eager)
		if string(got) != string(want) || skip != wantSkip || errString(err) != errString(wantErr) {
			t.Errorf("%s:\n lazy  %s %v %v\n eager %s %v %v", src, got, skip, err, want, wantSkip, wantErr)
		}
		f, err := CompileFilter(src)
		if err != nil {
			continue
		}
		match, cost, err := f.Match(ctx, lazy)
		wantMatch, wantCost, wantErr := f.Match(ctx, eager)
		if match != wantMatch || cost != wantCost || errString(err) != errString(wantErr) {
			t.Errorf("filter %s:\n lazy  %v %d %v\n eager %v %d %v", src, match, cost, err, wantMatch, wantCost, wantErr)
		}
	}
}

// eagerInput is the Input of payload decoded into Go values.
func eagerInput(t testing.TB, payload string) *Input {
	t.Helper()
	in, err := newEagerInput([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// errString is err's kind and message, "" for nil.
func errString(err error) string {
	var ee *EvalError
	if errors.As(err, &ee) {
		return ee.Kind + ": " + ee.Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestLazyCostAsEager: the cost an evaluation spends is the same on the
// lazy values, so the cost limit cuts the same expressions.
func TestLazyCostAsEager(t *testing.T) {
	src := `data.list.all(x, data.list.all(y, x != -1.0)) && data.s.size() > 0`
	f, err := CompileFilter(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 300, 2000} {
		event := listEvent(n, 100)
		_, cost, err := f.Match(context.Background(), input(t, event))
		_, wantCost, wantErr := f.Match(context.Background(), eagerInput(t, event))
		if cost != wantCost || errString(err) != errString(wantErr) {
			t.Errorf("%d elements: cost %d, %v; eager %d, %v", n, cost, err, wantCost, wantErr)
		}
	}
}

// TestNewInputRefusesAsEager: a bad data_base64 is refused with the
// eager path's message.
func TestNewInputRefusesAsEager(t *testing.T) {
	for _, payload := range []string{`{"data_base64":"!!"}`, `{"data_base64":[1]}`, `{"data_base64":"aGk"}`} {
		_, err := NewInput([]byte(payload))
		_, eagerErr := newEagerInput([]byte(payload))
		if err == nil || errString(err) != errString(eagerErr) {
			t.Errorf("NewInput(%s): %v; eager %v", payload, err, eagerErr)
		}
	}
}

// TestLazyInputShared: goroutines reading one lazy Input at once (run
// with -race) each get the whole answer.
func TestLazyInputShared(t *testing.T) {
	in := input(t, lazyEvent)
	tr, err := CompileTransform(`{"w": data.wide, "i": data.items.map(i, i.sku), "e": event}`)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := tr.Apply(context.Background(), eagerInput(t, lazyEvent))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 8)
	for range 8 {
		go func() {
			out, _, err := tr.Apply(context.Background(), in)
			done <- string(out) + errString(err)
		}()
	}
	for range 8 {
		if got := <-done; got != string(want) {
			t.Errorf("got %s; want %s", got, want)
		}
	}
}

// TestLazyPayloadsAsEager: payloads of every shape (strings ending in
// escaped backslashes or quotes, whitespace everywhere, nesting, numbers
// beyond float64) give on the lazy Input what they give on the eager one.
func TestLazyPayloadsAsEager(t *testing.T) {
	tr, err := CompileTransform(`[event, data, size(event)]`)
	if err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{
		`{"data":"a\\"}`, `{"data":"a\"b","x":"\\\\"}`, `{"data":["\\\"", "\"\\", "\\\\\\\"\\"]}`,
		` { "id" : "1" , "data" : { "a" : [ 1 , { } , [ ] ] , "b" : null } } `, "{\"data\"\n:\t{\"a\"\r:\n1}}",
		`{"data":[[[[[[1]]]]],{"a":{"b":{"c":{}}}}]}`, `{"data":{"n":[-0.0,1e-400,1.5E+3,-12345678901234567890]}}`,
		`{"data":true}`, `{"data":12}`, `{"data":"x"}`, `{"data":null}`, `{}`,
	} {
		lazy, eager := input(t, payload), eagerInput(t, payload)
		if _, ok := lazy.event.(object); !ok {
			t.Errorf("%s: not lazy", payload)
		}
		got, _, err := tr.Apply(context.Background(), lazy)
		want, _, wantErr := tr.Apply(context.Background(), eager)
		if string(got) != string(want) || errString(err) != errString(wantErr) {
			t.Errorf("%s:\n lazy  %s %v\n eager %s %v", payload, got, err, want, wantErr)
		}
	}
}
