package expr

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// boundsEvent is an event whose data holds a string of size bytes and a
// list of n numbers.
func boundsEvent(size, n int) string {
	return `{"id":"1","source":"s","type":"t","data":{"s":"` + strings.Repeat("a", size) +
		`","l":[` + strings.Repeat("1,", n-1) + `1]}}`
}

// allocated is the bytes the Go heap allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// applyKind applies src to payload and returns its error's Kind and
// message, and what the evaluation allocated.
func applyKind(t *testing.T, src, payload string) (kind, msg string, alloc uint64) {
	t.Helper()
	tr, err := CompileTransform(src)
	if err != nil {
		t.Fatal(err)
	}
	in := input(t, payload)
	alloc = allocated(func() { _, _, err = tr.Apply(context.Background(), in) })
	var ee *EvalError
	if !errors.As(err, &ee) {
		return "", "", alloc
	}
	return ee.Kind, ee.Message, alloc
}

// TestLargeResultsRefusedBeforeBuilt: replace, join and format compute
// their result's size first and fail past MaxValueBytes without building
// it (cel-go charges their cost after the call: a replace of a 20 KB
// string by itself built 400 MB before the cost limit could stop it).
func TestLargeResultsRefusedBeforeBuilt(t *testing.T) {
	payload := boundsEvent(20_000, 1000)
	for _, src := range []string{
		`data.s.replace("a", data.s)`,
		`data.s.replace("", data.s, 1000)`,
		`data.l.map(x, data.s).join("")`,
		`data.l.map(x, "").join(data.s)`,
	} {
		kind, msg, alloc := applyKind(t, src, payload)
		if kind != KindEval || !strings.Contains(msg, "more than 4194304") {
			t.Errorf("%s: %s %q; want a KindEval error naming MaxValueBytes", src, kind, msg)
		}
		if alloc > 16<<20 {
			t.Errorf("%s: allocated %d bytes; want under 16 MiB", src, alloc)
		}
	}
	kind, msg, _ := applyKind(t, `"%s%s".format([data.l.map(x, data.s), 1])`, payload)
	if kind != KindEval || !strings.Contains(msg, "format would build") {
		t.Errorf("format: %s %q; want a KindEval error naming MaxValueBytes", kind, msg)
	}
	if kind, msg, _ := applyKind(t, `data.s.replace("a", "bb").size()`, payload); kind != "" {
		t.Errorf("a replace under the bound: %s %q", kind, msg)
	}
}

// TestCostBySize: the calls cel-go charged one unit whatever their
// operands read or build cost a unit per ten bytes (sizeCost): a loop of
// them over a 100 KB string or a 10,000-element list of the event runs
// out of cost instead of taking seconds (each of these ran to its end
// within the limit before, math.greatest in 8 s).
func TestCostBySize(t *testing.T) {
	payload := boundsEvent(100_000, 10_000)
	for _, src := range []string{
		`data.l.map(x, data.s.size())`,
		`data.l.map(x, size(bytes(data.s)))`,
		`data.l.map(x, dyn(data.s) < dyn(data.s))`,
		`data.l.map(x, 2 in data.l)`,
		`data.l.map(x, data == data)`,
		`data.l.map(x, math.greatest(data.l))`,
		`data.l.map(x, "%s".format([data.s]).size())`,
		`data.l.map(x, size(data.l + [1]))`,
		`data.l.map(x, data.s in {"a": 1})`,
		`data.l.map(x, optional.of(data.s) == optional.of(data.s))`,
	} {
		if kind, msg, _ := applyKind(t, src, payload); kind != KindCost {
			t.Errorf("%s: %s %q; want KindCost", src, kind, msg)
		}
	}
	// The same calls on small operands cost as little as they did.
	if kind, msg, _ := applyKind(t, `[data.l.size(), "ab".size(), 1 in [1, 2], math.greatest([1, 2])]`, payload); kind != "" {
		t.Errorf("small operands: %s %q", kind, msg)
	}
}

// TestOutputStopsAtTheBound: a result far larger than MaxOutputBytes (a
// list of many references to one large string, which costs one unit an
// element) is refused as soon as its writing passes the bound, not after
// it was written whole (1 GB here, before).
func TestOutputStopsAtTheBound(t *testing.T) {
	kind, msg, alloc := applyKind(t, `data.l.map(x, data.s)`, boundsEvent(100_000, 10_000))
	if kind != KindOutput {
		t.Errorf("%s %q; want KindOutput", kind, msg)
	}
	if alloc > 16<<20 {
		t.Errorf("allocated %d bytes; want under 16 MiB", alloc)
	}
}

// TestMatchesCheckedBeforeRunning: matches refuses, before it runs, a
// regular expression longer than MaxPatternBytes and a match whose cost
// (a unit per ten bytes of the string times a quarter of the pattern's
// bytes) is over the cost limit: a 4 KB pattern on a 1 MiB string ran 14 s
// in one call, which cel-go charged once it had ended. A pattern read from
// the event pays for its compilation, a unit a byte: a loop of them
// compiled it each time for a unit or so.
func TestMatchesCheckedBeforeRunning(t *testing.T) {
	payload := `{"id":"1","data":{"s":"` + strings.Repeat("a", 200_000) + `","re":"` + strings.Repeat("(a|b)", 800) +
		`","long":"` + strings.Repeat("a", MaxPatternBytes+1) + `","l":[` + strings.Repeat("1,", 9_999) + `1]}}`
	for _, tc := range []struct{ src, want string }{
		{`data.s.matches("` + strings.Repeat("(a|b)", 80) + `c")`, "would cost 2005412, more than the cost limit 1000000"},
		{`matches(data.s, "` + strings.Repeat("(a|b)", 80) + `c")`, "would cost 2005412, more than the cost limit 1000000"},
		{`"x".matches(data.long)`, "the regular expression is 4097 bytes, more than 4096"},
	} {
		if kind, msg, _ := applyKind(t, tc.src, payload); kind != KindEval || !strings.Contains(msg, tc.want) {
			t.Errorf("%.40s: %s %q; want KindEval with %q", tc.src, kind, msg, tc.want)
		}
	}
	if kind, msg, _ := applyKind(t, `data.l.map(x, "x".matches(data.re))`, payload); kind != KindCost {
		t.Errorf("a loop compiling a 4 KB pattern: %s %q; want KindCost", kind, msg)
	}
	if kind, msg, _ := applyKind(t, `[data.s.matches("^a+$"), "ab".matches("b"), matches("ab", "^a")]`, payload); kind != "" {
		t.Errorf("matches under the bounds: %s %q", kind, msg)
	}
}

// countedList is a list of n ones that counts the elements read.
type countedList struct {
	traits.Lister
	n    int64
	read *int
}

func (l countedList) Size() ref.Val { return types.Int(l.n) }

func (l countedList) Get(i ref.Val) ref.Val { *l.read++; return types.Int(1) }

// TestEqualityWeighsTheLighter: == charges what comparing may read, the
// lighter operand's weight, and weighing costs about that too: it reads
// about as much of the heavier operand as the lighter weighs (it read
// the heavier whole, up to its limit of millions of elements, so that
// 1 == data.l in a loop read the list each time for a unit).
func TestEqualityWeighsTheLighter(t *testing.T) {
	read := 0
	heavy := countedList{types.NewDynamicList(types.DefaultTypeAdapter, []int{}), 100_000_000, &read}
	for _, light := range []ref.Val{types.Int(1), types.String("abc"), types.NewDynamicList(types.DefaultTypeAdapter, []int{1, 2})} {
		read = 0
		if c := *(sizeCost{}).CallCost("_==_", "", []ref.Val{heavy, light}, types.False); c > 10 {
			t.Errorf("%v == a long list costs %d; want a few units", light, c)
		}
		if read > 1<<10 {
			t.Errorf("%v == a long list read %d of its elements; want at most 1,024", light, read)
		}
	}
}

// TestStringsReadWithoutSearch: reading a string of the event does not
// search it for an escape (the scan noted which strings hold one): a
// transform reading a 500 KB string in a loop searched it each time, for
// a unit (2 µs a unit for data.?s.hasValue()). The test sees it by
// writing a backslash into the payload after the scan, which a search
// would have found.
func TestStringsReadWithoutSearch(t *testing.T) {
	payload := []byte(`{"data":{"plain":"abcdef","escaped":"a\"b"}}`)
	d, ok := indexJSON(payload)
	if !ok {
		t.Fatal("not indexed")
	}
	data := d.val(d.kids[d.member(0, "data")]).(object)
	plain, _ := data.find("plain")
	escaped, _ := data.find("escaped")
	if plain != types.String("abcdef") || escaped != types.String(`a"b`) {
		t.Fatalf("read %q and %q", plain, escaped)
	}
	payload[bytes.Index(payload, []byte("cd"))] = '\\'
	if plain, _ := data.find("plain"); plain != types.String(`ab\def`) {
		t.Errorf("read %q after the payload changed: the string was searched again", plain)
	}
}
