package filter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// operands are, for every operator, an operand whose test never hits the
// elements of arrayEvent, so that a filter reads every element ("": the
// operator takes none, and tests no element).
var operands = map[string]string{
	"NumberIn":                  `"values": [-1, -2]`,
	"NumberNotIn":               `"values": [-1]`,
	"NumberLessThan":            `"value": -1`,
	"NumberGreaterThan":         `"value": 1e9`,
	"NumberLessThanOrEquals":    `"value": -1`,
	"NumberGreaterThanOrEquals": `"value": 1e9`,
	"NumberInRange":             `"values": [[-5, -1], [1e9, 2e9]]`,
	"NumberNotInRange":          `"values": [[-5, -1]]`,
	"BoolEquals":                `"value": true`,
	"StringContains":            `"values": ["x", "y"]`,
	"StringNotContains":         `"values": ["x"]`,
	"StringBeginsWith":          `"values": ["x"]`,
	"StringNotBeginsWith":       `"values": ["x"]`,
	"StringEndsWith":            `"values": ["x"]`,
	"StringNotEndsWith":         `"values": ["x"]`,
	"StringIn":                  `"values": ["x", "y"]`,
	"StringNotIn":               `"values": ["x"]`,
	"IsNullOrUndefined":         ``,
	"IsNotNull":                 ``,
}

// arrayEvent is an event whose data.a is an array of n elements: numbers,
// short strings and false in turn.
func arrayEvent(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"specversion":"1.0","id":"e","source":"/s","type":"t","data":{"a":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "%d", i)
		case 1:
			b.WriteString(`"abc"`)
		default:
			b.WriteString(`false`)
		}
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// filterOn is a filter of operator op on data.a, with operands[op].
func filterOn(op string) string {
	operand := operands[op]
	if operand != "" {
		operand = ", " + operand
	}
	return `[{"operator_type": "` + op + `", "key": "data.a"` + operand + `}]`
}

// TestEveryOperatorStopsAtItsBudget: whatever the operator, matching an
// event stops at the test that passes its pacer's budget, far before the
// array's end, with a *WorkError naming the budget; the index's lookups
// of an array (StringIn's) stop likewise. IsNullOrUndefined and IsNotNull
// test no element: their cost does not grow with the event.
func TestEveryOperatorStopsAtItsBudget(t *testing.T) {
	const n, budget = 30_000, 1000
	payload := arrayEvent(n)
	ev := NewEvent(payload) // parsed once; each pacer counts from PaceBy
	for op := range operands {
		if operands[op] == "" {
			continue // tests no element
		}
		m := mustCompile(t, filterOn(op))
		p := NewPacer(context.Background(), budget, nil)
		ev.PaceBy(p)
		m.Match(ev)
		var we *WorkError
		if !errors.As(ev.Err(), &we) || we.Limit != budget || !errors.Is(ev.Err(), ErrWork) {
			t.Errorf("%s: stopped with %v; want a *WorkError of %d", op, ev.Err(), budget)
			continue
		}
		// The last spend (an element, one test per value: at most 2 here)
		// is the one that passes the budget.
		if got := p.Tested(); got <= budget || got > budget+2 {
			t.Errorf("%s: %d tests spent; want just over %d", op, got, budget)
		}
	}

	ix := NewIndex([]int{0}, func(int) *Matcher { return mustCompile(t, filterOn("StringIn")) })
	p := NewPacer(context.Background(), budget, nil)
	ev.PaceBy(p)
	for range ix.Candidates(ev) {
		t.Fatal("the index yielded a candidate past its budget")
	}
	if !errors.Is(ev.Err(), ErrWork) || p.Tested() != budget+1 {
		t.Fatalf("index: stopped with %v after %d tests; want ErrWork after %d", ev.Err(), p.Tested(), budget+1)
	}
}

// TestBudgetIsExact: a budget of exactly the tests a request's events
// cost lets them all be matched, with the results an unpaced match gives;
// one less stops the last event's matching. The events of one pacer add
// up.
func TestBudgetIsExact(t *testing.T) {
	m := mustCompile(t, `[{"operator_type": "StringNotContains", "key": "data.a", "values": ["x", "y", "z"]},
		{"operator_type": "NumberInRange", "key": "data.a", "values": [[-5, -1]]}]`)
	payload := arrayEvent(3000)
	free := NewEvent(payload)
	want := m.Match(free)
	per := free.Tested()
	if per < 3000 {
		t.Fatalf("an event cost %d tests: the test needs every element tested", per)
	}
	for _, tc := range []struct {
		budget int
		ok     bool
	}{{2 * per, true}, {2*per - 1, false}, {0, true}} {
		p := NewPacer(context.Background(), tc.budget, nil)
		var got []bool
		for range 2 {
			ev := NewEvent(payload)
			ev.PaceBy(p)
			got = append(got, m.Match(ev))
		}
		if ok := p.Err() == nil; ok != tc.ok || ok && (got[0] != want || got[1] != want) {
			t.Errorf("budget %d for two events of %d tests: matched %v, stopped with %v; want stopped %v", tc.budget, per, got, p.Err(), !tc.ok)
		}
		if tc.ok && p.Tested() != 2*per {
			t.Errorf("budget %d: %d tests counted; want %d", tc.budget, p.Tested(), 2*per)
		}
	}
}

// TestLongStringsCostTheirLength: a string counts 1 test plus 1 per 32
// bytes for each value it is compared with, so one long string is not a
// cheap way to make every filter scan a megabyte.
func TestLongStringsCostTheirLength(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	m := mustCompile(t, `[{"operator_type": "StringNotContains", "key": "subject", "values": ["x", "y", "z"]}]`)
	ev := NewEvent([]byte(`{"specversion":"1.0","id":"e","source":"/s","type":"t","subject":"` + long + `"}`))
	if !m.Match(ev) {
		t.Fatal("the subject contains none of x, y, z: want a match")
	}
	if want := 3 * (1 + len(long)/32); ev.Tested() != want {
		t.Fatalf("a %d-byte subject compared with 3 values cost %d tests; want %d", len(long), ev.Tested(), want)
	}
}

// TestMatchingStopsWhenItsContextEnds: the pacer looks at its context
// every CheckEvery tests, for every operator, and stops the matching at
// its first look once the context has ended, with its error (the client
// gone, or the deadline past). (catalog's TestMatchStopsWithinTestsOfItsContextsEnd
// ends the context while the matching runs.)
func TestMatchingStopsWhenItsContextEnds(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	ev := NewEvent(arrayEvent(20_000)) // parsed once; each pacer counts from PaceBy
	for op := range operands {
		if operands[op] == "" {
			continue // tests no element
		}
		for _, ctx := range []context.Context{cancelled, past} {
			m := mustCompile(t, filterOn(op))
			p := NewPacer(ctx, 0, nil)
			ev.PaceBy(p)
			m.Match(ev)
			if !errors.Is(ev.Err(), ctx.Err()) {
				t.Errorf("%s, %v: stopped with %v", op, ctx.Err(), ev.Err())
				continue
			}
			if p.Tested() > CheckEvery+2 {
				t.Errorf("%s, %v: %d tests spent; want at most %d", op, ctx.Err(), p.Tested(), CheckEvery+2)
			}
		}
	}
}

// heavyFilters are 8 filters that each test every element of data.a.
const heavyFilters = `[{"operator_type": "StringNotContains", "key": "data.a", "values": ["x1"]},
	{"operator_type": "StringNotContains", "key": "data.a", "values": ["x2"]},
	{"operator_type": "StringNotContains", "key": "data.a", "values": ["x3"]},
	{"operator_type": "StringNotContains", "key": "data.a", "values": ["x4"]},
	{"operator_type": "StringNotContains", "key": "data.a", "values": ["x5"]},
	{"operator_type": "StringNotContains", "key": "data.a", "values": ["x6"]},
	{"operator_type": "StringNotContains", "key": "data.a", "values": ["x7"]},
	{"operator_type": "StringNotContains", "key": "data.a", "values": ["x8"]}]`

// heavyMatch matches payload with m, paced on gate, rounds times (0: until
// ctx ends), and sends the pacer's error to done.
func heavyMatch(ctx context.Context, m *Matcher, payload []byte, gate *Gate, rounds int, done chan<- error) {
	p := NewPacer(ctx, 0, gate)
	ev := NewEvent(payload) // parsed once, then read from its caches
	for i := 0; rounds == 0 || i < rounds; i++ {
		ev.PaceBy(p)
		if m.Match(ev); p.Err() != nil {
			break
		}
	}
	p.EndTurn()
	done <- p.Err()
}

// TestHeavyMatchingTakesTurns: on a gate of one turn, a heavy request
// that would go on until cancelled takes turns of Slice tests with a
// second one: the second gets turns and finishes while the first goes on
// (it would wait for ever if the first kept its turn); every test of the
// second past HeavyAfter is spent under the gate.
func TestHeavyMatchingTakesTurns(t *testing.T) {
	m := mustCompile(t, heavyFilters)
	payload := arrayEvent(Slice) // 8 filters × Slice tests a round
	gate := NewGate(1)
	gate.TestSignals.Took.Init(t)
	ctx, cancel := context.WithCancel(context.Background())
	endless, finite := make(chan error, 1), make(chan error, 1)
	go heavyMatch(ctx, m, payload, gate, 0, endless)
	gate.TestSignals.Took.WaitOrTimeout()
	before := gate.Work()
	go heavyMatch(context.Background(), m, payload, gate, 2, finite)
	gate.TestSignals.Took.WaitOrTimeout()
	if err := <-finite; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-endless:
		t.Fatalf("the endless request ended (%v)", err)
	default:
	}
	if work := gate.Work() - before; work < 16*Slice-HeavyAfter {
		t.Fatalf("%d tests under the gate while the second ran; want at least its own %d", work, 16*Slice-HeavyAfter)
	}
	cancelHeavy(t, gate, cancel, endless)
}

// cancelHeavy cancels a heavy request that goes on until cancelled, reads
// the gate's Rested signals until it has ended (with context.Canceled),
// and checks that it holds no turn.
func cancelHeavy(t *testing.T, gate *Gate, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	for {
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("the request ended with %v; want context.Canceled", err)
			}
			if gate.Running() != 0 {
				t.Fatalf("%d turns still taken", gate.Running())
			}
			return
		case <-gate.TestSignals.Rested.C(): // nil (never ready) when off
		}
	}
}

// TestLightMatchingNeverWaits: a request that stays under HeavyAfter tests
// is matched while every turn of its gate is taken; a heavy one waits,
// and stops waiting when its context ends.
func TestLightMatchingNeverWaits(t *testing.T) {
	m := mustCompile(t, heavyFilters)
	gate := NewGate(1)
	gate.turns <- struct{}{} // the one turn is taken

	light := make(chan error, 1)
	heavyMatch(context.Background(), m, arrayEvent(1000), gate, 1, light) // 8,000 tests
	if err := <-light; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	heavy := make(chan error, 1)
	go heavyMatch(ctx, m, arrayEvent(Slice), gate, 1, heavy)
	for gate.Waiting() == 0 {
		select {
		case err := <-heavy:
			t.Fatalf("a heavy request ran while the gate's one turn was taken (%v)", err)
		default:
			runtime.Gosched()
		}
	}
	cancel()
	if err := <-heavy; !errors.Is(err, context.Canceled) {
		t.Fatalf("the heavy request ended with %v; want context.Canceled", err)
	}
	if gate.Running() != 1 {
		t.Fatalf("%d turns taken; want the one the test holds", gate.Running())
	}
}

// TestHeavyTurnsGiveWayToOtherWork: while another goroutine wants the CPU
// (one that spins: always running, or runnable), every turn of a heavy
// request ends at its first look, within CheckEvery tests, and the request
// still moves (its turns go on); once nothing else runs, its turns are
// whole slices again.
func TestHeavyTurnsGiveWayToOtherWork(t *testing.T) {
	m := mustCompile(t, heavyFilters)
	gate := NewGate(1)
	gate.TestSignals.Took.Init(t)
	gate.TestSignals.Rested.Init(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go heavyMatch(ctx, m, arrayEvent(Slice), gate, 0, done)
	gate.TestSignals.Took.WaitOrTimeout()
	turn := func() int { return gate.TestSignals.Rested.WaitOrTimeout() }

	var stop atomic.Bool
	spinning := make(chan struct{})
	go func() {
		close(spinning)
		for !stop.Load() {
		}
	}()
	<-spinning
	// The turns that ended before (their signals still unread) and the one
	// under way when the spinner began may be whole; every one after ends
	// at its first look.
	for i := 0; turn() > CheckEvery+1; i++ {
		if i == 100 {
			t.Fatalf("100 heavy turns after another goroutine began to spin, none short")
		}
	}
	for range 5 {
		if n := turn(); n > CheckEvery+1 {
			t.Fatalf("a heavy turn spent %d tests while another goroutine spun; want at most %d", n, CheckEvery+1)
		}
	}
	stop.Store(true)
	for i := 0; turn() < Slice; i++ {
		if i == 100 {
			t.Fatalf("100 heavy turns after the spinner stopped, none a whole slice")
		}
	}
	cancelHeavy(t, gate, cancel, done)
}
