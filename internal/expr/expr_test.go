package expr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// sampleEvent is a stored CloudEvent with an extension and JSON data.
const sampleEvent = `{"specversion":"1.0","id":"e1","source":"/shop","type":"order.created",
	"subject":"orders/7","time":"2024-05-01T10:00:00Z","datacontenttype":"application/json",
	"tenant":"acme","priority":3,"urgent":true,"dataschema":null,
	"data":{"amount":120.5,"currency":"EUR","items":[{"sku":"a","qty":2},{"sku":"b","qty":1}],
	"customer":{"name":"Ada <ada@example.com>"},"big":12345678901}}`

func input(t testing.TB, payload string) *Input {
	t.Helper()
	in, err := NewInput([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src    string
		filter       bool
		line, column int
		message      string
	}{
		{"empty", "", false, 0, 0, "the expression is empty"},
		{"blank", " \n\t", true, 0, 0, "the expression is empty"},
		{"too long", "data.a" + strings.Repeat(" ", MaxSourceBytes), false, 0, 0,
			fmt.Sprintf("the expression is %d bytes, more than 4096", MaxSourceBytes+6)},
		{"not UTF-8", "'\xff'", false, 0, 0, "the expression is not UTF-8"},
		{"syntax", "data.a +", false, 1, 9, "Syntax error: mismatched input '<EOF>'"},
		{"undeclared", "data.a == 1 &&\n  amount > 2", true, 2, 3, "undeclared reference to 'amount'"},
		{"no overload", "'a' + 1", false, 1, 5, "found no matching overload for '_+_'"},
		{"several errors", "x + y", false, 1, 1, "undeclared reference to 'x' (and 1 more errors)"},
		{"filter not bool", "'yes'", true, 1, 1, "the expression's result is string, not a bool"},
		{"filter int", "size(data.items)", true, 1, 1, "the expression's result is int, not a bool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.filter {
				_, err = CompileFilter(tc.src)
			} else {
				_, err = CompileTransform(tc.src)
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T); want a *CompileError", err, err)
			}
			if ce.Line != tc.line || ce.Column != tc.column || !strings.Contains(ce.Message, tc.message) {
				t.Fatalf("got %d:%d %q; want %d:%d containing %q", ce.Line, ce.Column, ce.Message, tc.line, tc.column, tc.message)
			}
			if tc.line > 0 && !strings.HasPrefix(ce.Error(), fmt.Sprintf("line %d, column %d: ", tc.line, tc.column)) {
				t.Fatalf("Error() %q does not lead with the position", ce.Error())
			}
		})
	}
}

func TestCompileAtTheBound(t *testing.T) {
	src := "data.a" + strings.Repeat(" ", MaxSourceBytes-6)
	if _, err := CompileTransform(src); err != nil {
		t.Fatalf("a %d-byte expression: %v", len(src), err)
	}
	if _, err := CompileFilter("data.flag"); err != nil {
		t.Fatalf("a dynamic filter expression: %v", err)
	}
}

func TestTransformResults(t *testing.T) {
	in := input(t, sampleEvent)
	for _, tc := range []struct{ name, src, want string }{
		{"map", `{"total": data.amount, "who": data.customer.name, "tenant": event.tenant}`,
			`{"tenant":"acme","total":120.5,"who":"Ada <ada@example.com>"}`},
		{"list", `data.items.map(i, i.sku)`, `["a","b"]`},
		{"string", `event.type + ":" + event.subject`, `"order.created:orders/7"`},
		{"number", `data.amount * 2.0`, `241`},
		{"int", `int(data.items[0].qty) + 1`, `3`},
		{"large number kept", `data.big`, `12345678901`},
		{"bool", `event.urgent && data.currency == "EUR"`, `true`},
		{"whole data", `data`, `{"amount":120.5,"big":12345678901,"currency":"EUR","customer":{"name":"Ada <ada@example.com>"},"items":[{"qty":2,"sku":"a"},{"qty":1,"sku":"b"}]}`},
		{"number extension", `event.priority == 3`, `true`},
		{"absent attribute", `has(event.dataschema)`, `false`},
		{"optional", `data.?discount.orValue(0)`, `0`},
		{"bytes", `b"hi"`, `"aGk="`},
		{"timestamp", `timestamp(event.time) + duration("1h")`, `"2024-05-01T11:00:00Z"`},
		{"duration", `duration("1500ms")`, `"1.5s"`},
		{"strings extension", `data.currency.lowerAscii()`, `"eur"`},
		{"cross-type comparison", `data.amount > 100 && data.items[0].qty == 2`, `true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := CompileTransform(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, skip, err := tr.Apply(context.Background(), in)
			if err != nil || skip || string(got) != tc.want {
				t.Fatalf("got %s, skip %v, %v; want %s", got, skip, err, tc.want)
			}
		})
	}
}

func TestTransformNullSkips(t *testing.T) {
	tr, err := CompileTransform(`data.amount > 1000.0 ? data : null`)
	if err != nil {
		t.Fatal(err)
	}
	got, skip, err := tr.Apply(context.Background(), input(t, sampleEvent))
	if err != nil || !skip || got != nil {
		t.Fatalf("got %s, skip %v, %v; want a skip", got, skip, err)
	}
}

func TestInputData(t *testing.T) {
	for _, tc := range []struct{ name, event, src, want string }{
		{"no data", `{"id":"1","source":"s","type":"t","specversion":"1.0"}`, `data == null`, `true`},
		{"null data", `{"id":"1","data":null}`, `data == null`, `true`},
		{"string data", `{"id":"1","datacontenttype":"text/plain","data":"hello"}`, `data + "!"`, `"hello!"`},
		{"base64 data", `{"id":"1","data_base64":"aGk="}`, `string(data)`, `"hi"`},
		{"array data", `{"id":"1","data":[1,2,3]}`, `data.map(x, x * 2.0)`, `[2,4,6]`},
		{"attributes only", `{"id":"1","data":{"a":1}}`, `event`, `{"id":"1"}`},
		{"numbers", `{"id":"1","tenant":7,"data":{"a":1,"b":-2.5e3,"c":12345678901234567890}}`, `[event.tenant, data.a, data.b, data.c]`, `[7,1,-2500,12345678901234567000]`},
		{"number beyond float64", `{"id":"1","data":{"big":1e400,"small":1e-400,"n":3}}`, `[data.big > 1e308, data.small == 0.0, data.n]`, `[true,true,3]`},
		// Payloads indexJSON leaves to the eager path, read as encoding/json reads them.
		{"duplicate name", `{"id":"1","data":{"a":1,"a":2}}`, `data.a`, `2`},
		{"escaped name", `{"id":"1","data":{"caf\u00e9":1,"b\"":2}}`, `[data["café"], data["b\""]]`, `[1,2]`},
		{"escaped attribute", `{"id":"1","t\u0065nant":"acme","data":1}`, `event.tenant`, `"acme"`},
		{"invalid UTF-8", "{\"id\":\"1\",\"data\":\"a\xffb\"}", `data`, "\"a\ufffdb\""},
		{"escaped base64", `{"id":"1","data_base64":"aG\u006b="}`, `string(data)`, `"hi"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := CompileTransform(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := tr.Apply(context.Background(), input(t, tc.event))
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestNewInputRefuses(t *testing.T) {
	for _, payload := range []string{`[1]`, `not json`, `null`, `{"data_base64":"!!"}`, `{"data_base64":1}`, `{"a":1e400,"b":}`} {
		if _, err := NewInput([]byte(payload)); err == nil {
			t.Errorf("NewInput(%s) succeeded", payload)
		}
	}
}

// listEvent is an event whose data.list has n numbers and data.s a string
// of size bytes.
func listEvent(n, size int) string {
	nums := make([]string, n)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	return fmt.Sprintf(`{"id":"1","data":{"list":[%s],"s":%q}}`, strings.Join(nums, ","), strings.Repeat("x", size))
}

func TestTransformFailures(t *testing.T) {
	for _, tc := range []struct {
		name, event, src, kind, message string
	}{
		{"missing member", sampleEvent, `data.customer.email`, KindEval, "no such key: email"},
		{"missing attribute", `{"id":"1"}`, `event.subject`, KindEval, "no such key: subject"},
		{"wrong type", sampleEvent, `data.amount + 1`, KindEval, "no such overload"},
		{"member of a string", sampleEvent, `data.currency.code`, KindEval, "no such key"},
		{"division by zero", sampleEvent, `1 / (size(data.items) - 2)`, KindEval, "division by zero"},
		{"cost limit", listEvent(2000, 0), `data.list.all(x, data.list.all(y, x != -1.0))`, KindCost, "cost limit exceeded"},
		{"output too large", listEvent(0, 600_000), `[data.s, data.s]`, KindOutput,
			"the transform's output is more than 1048576 bytes"},
		{"map with an int key", sampleEvent, `{1: "a"}`, KindResult, "map key of type int, not a string"},
		{"NaN", sampleEvent, `[0.0 / 0.0]`, KindResult, "NaN, which JSON cannot carry"},
		{"a type", sampleEvent, `type(data)`, KindResult, "which JSON cannot carry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := CompileTransform(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, skip, err := tr.Apply(context.Background(), input(t, tc.event))
			var ee *EvalError
			if !errors.As(err, &ee) || got != nil || skip {
				t.Fatalf("got %.40s, skip %v, %v (%T); want an *EvalError", got, skip, err, err)
			}
			if ee.Kind != tc.kind || !strings.Contains(ee.Error(), tc.message) {
				t.Fatalf("got %s %q; want %s containing %q", ee.Kind, ee.Message, tc.kind, tc.message)
			}
		})
	}
}

func TestOutputAtTheBound(t *testing.T) {
	// `data.s` encodes as the string and its two quotes.
	tr, err := CompileTransform(`data.s`)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := tr.Apply(context.Background(), input(t, `{"data":{"s":"`+strings.Repeat("x", MaxOutputBytes-2)+`"}}`))
	if err != nil || len(got) != MaxOutputBytes {
		t.Fatalf("%d bytes, %v; want %d", len(got), err, MaxOutputBytes)
	}
}

func TestContextEndsEvaluation(t *testing.T) {
	tr, err := CompileTransform(`data.list.map(x, x + 1.0)`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = tr.Apply(ctx, input(t, listEvent(1000, 0)))
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Kind != KindCancelled {
		t.Fatalf("%v; want a KindCancelled *EvalError", err)
	}
}

func TestFilterMatch(t *testing.T) {
	in := input(t, sampleEvent)
	for _, tc := range []struct {
		name, src string
		match     bool
		kind      string
	}{
		{"true", `data.amount > 100 && data.currency == "EUR" || event.type == "refund"`, true, ""},
		{"false", `data.amount > 1000`, false, ""},
		{"extension", `event.tenant in ["acme", "globex"]`, true, ""},
		{"exists", `data.items.exists(i, i.sku == "b" && i.qty == 1)`, true, ""},
		{"has guards a missing member", `has(data.refund) && data.refund`, false, ""},
		{"missing member fails", `data.refund == true`, false, KindEval},
		{"dynamic result not a bool", `data.currency`, false, KindResult},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := CompileFilter(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, cost, err := f.Match(context.Background(), in)
			if cost == 0 || cost > CostLimit {
				t.Fatalf("cost %d; want one in (0, %d]", cost, CostLimit)
			}
			var ee *EvalError
			switch {
			case tc.kind == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.kind != "" && (!errors.As(err, &ee) || ee.Kind != tc.kind):
				t.Fatalf("error %v; want kind %s", err, tc.kind)
			case got != tc.match:
				t.Fatalf("match %v; want %v", got, tc.match)
			}
		})
	}
}

// TestProgramsShared: one compiled transform and filter, evaluated by
// goroutines at once, give each the same answers (run with -race): what
// internal/catalog relies on when its Entry's programs serve every worker.
func TestProgramsShared(t *testing.T) {
	in := input(t, sampleEvent)
	tr, err := CompileTransform(`{"sku": data.items[0].sku}`)
	if err != nil {
		t.Fatal(err)
	}
	f, err := CompileFilter(`data.amount > 100`)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			out, _, err := tr.Apply(context.Background(), in)
			ok, _, ferr := f.Match(context.Background(), in)
			if string(out) != `{"sku":"a"}` || err != nil || !ok || ferr != nil {
				t.Errorf("got %s %v %v %v", out, err, ok, ferr)
			}
		})
	}
	wg.Wait()
}
