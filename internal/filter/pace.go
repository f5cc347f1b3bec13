package filter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/herald-events/herald/internal/testsignal"
)

// Pacing: the work of matching one publish request's events is counted in
// filter tests (see the package comment, "Cost"), checked against a budget,
// stopped when the request's context ends, and, past HeavyAfter tests, run
// only in turns of a Gate, behind every other piece of work.
const (
	// CheckEvery is how many tests an event spends between two looks at
	// its Pacer (the budget, the context, the turn): matching stops within
	// CheckEvery tests of its context's end, and pays for those looks once
	// per CheckEvery tests, not per test.
	CheckEvery = 4096
	// HeavyAfter is how many tests a request's matching may spend before
	// it is heavy: from then on it runs only in turns of its Pacer's
	// Gate. Ordinary publishes spend far fewer (a few per subscription
	// and event: see docs/subscriptions.md#filters) and never wait for a
	// turn.
	HeavyAfter = 1 << 16
	// Slice is how many tests a heavy request spends in one turn at most.
	Slice = 1 << 14
	// maxRest is how many times as long as its turn ran a turn's rest
	// lasts at most while other work wants the CPU (see Gate).
	maxRest = 9
)

// ErrWork: matching a publish request's events would cost more filter
// tests than its budget. A *WorkError says the budget.
var ErrWork = errors.New("matching the events would cost too many filter tests")

// WorkError is the ErrWork a Pacer stops with, with the budget it applied.
type WorkError struct{ Limit int }

func (e *WorkError) Error() string {
	return fmt.Sprintf("%v: more than %d", ErrWork, e.Limit)
}

// Is makes errors.Is(err, ErrWork) true.
func (e *WorkError) Is(target error) bool { return target == ErrWork }

// Pacer paces the matching of one publish request's events: it counts the
// tests they spend (every event paced by it, one after the other, and
// matched again as often as the request is), and at every CheckEvery tests
// stops them with a *WorkError once they pass the budget, or with its
// context's error once that ends (the client went, or the request's
// deadline passed). With a Gate, the request is light until it passes
// HeavyAfter tests, and heavy after: it then matches only in the gate's
// turns. A Pacer is for one goroutine; EndTurn ends its turn.
type Pacer struct {
	ctx    context.Context
	budget int   // 0: none
	gate   *Gate // nil: never waits
	// spent counts the tests of the paced events up to the current one's
	// last look (Event.checked).
	spent int
	cur   *Event
	err   error // why it stopped; nil while matching may go on
	// heavy: it asked for a turn; held: it holds one, begun at
	// turnStart, until spent reaches turnEnd; gated is spent when gate
	// last heard of its work; sched reads the Go scheduler (Gate.busy),
	// made when the request becomes heavy.
	heavy, held    bool
	turnEnd, gated int
	turnStart      time.Time
	sched          *[2]metrics.Sample
}

// NewPacer returns the pacer of one request's matching: at most budget
// tests (0: no budget), stopped when ctx ends, taking turns on gate once
// heavy (nil: no gate, never waits).
func NewPacer(ctx context.Context, budget int, gate *Gate) *Pacer {
	return &Pacer{ctx: ctx, budget: budget, gate: gate}
}

// PaceBy makes p pace e: from now on e's tests count against p's budget
// (those it spent before are not counted). The events of one pacer must
// be matched one after the other: pacing the next one ends the last one's
// part.
func (e *Event) PaceBy(p *Pacer) {
	if c := p.cur; c != nil {
		p.spent += c.tests - c.checked
		c.checked = c.tests
	}
	p.cur = e
	e.pacer, e.checked = p, e.tests
	if p.err != nil {
		e.next = e.tests // every spend asks p, which says stop
		return
	}
	e.next = e.tests + p.room()
}

// Paced reports whether e has a pacer (PaceBy).
func (e *Event) Paced() bool { return e != nil && e.pacer != nil }

// room is how many tests the current event may spend before its next
// look: CheckEvery, or less when the budget ends sooner (so that the test
// that passes it is the one that stops).
func (p *Pacer) room() int {
	n := CheckEvery
	if p.budget > 0 {
		n = min(n, p.budget-p.spent+1)
	}
	return max(n, 1)
}

// Tested returns the tests spent by every event p paced so far.
func (p *Pacer) Tested() int {
	if c := p.cur; c != nil {
		return p.spent + c.tests - c.checked
	}
	return p.spent
}

// Err returns why p stopped the matching: a *WorkError or its context's
// error; nil while matching may go on.
func (p *Pacer) Err() error { return p.err }

// EndTurn ends p's turn on its Gate, if it holds one: call it when a pass
// of the request's matching ends (matching again, later, takes a new
// turn).
func (p *Pacer) EndTurn() {
	if p.held {
		p.gate.active.Add(-1)
		p.account()
		p.held = false
		p.gate.release()
	}
}

// spend counts n tests on e and reports whether matching may go on: it
// looks at e's pacer once every CheckEvery tests (see checkpoint). An
// Event with no pacer spends without limit. Spending comes before the
// work it counts, so a stopped event does none of it.
func (e *Event) spend(n int) bool {
	e.tests += n
	return e.tests < e.next || e.checkpoint()
}

// checkpoint asks e's pacer whether matching may go on, and sets e.next,
// the count of e's next look.
func (e *Event) checkpoint() bool {
	p := e.pacer
	if p == nil {
		e.next = math.MaxInt
		return true
	}
	if p.err != nil {
		return false
	}
	p.spent += e.tests - e.checked
	e.checked = e.tests
	if !p.look() {
		return false
	}
	e.next = e.tests + p.room()
	return true
}

// Charge counts n tests of work done for e outside its filters (one per
// candidate subscription checked: catalog.Snapshot.Match) and reports
// whether matching may go on; when it may not, Err says why.
func (e *Event) Charge(n int) bool {
	if e == nil {
		return true
	}
	return e.spend(n)
}

// Err returns why e's pacer stopped the matching (a *WorkError, or the
// context's error); nil while it may go on, or when e has no pacer. A
// Matcher's result for an event that stopped means nothing.
func (e *Event) Err() error {
	if e == nil || e.pacer == nil {
		return nil
	}
	return e.pacer.err
}

// look checks the budget, the context and, past HeavyAfter, the turn; it
// reports whether matching may go on.
func (p *Pacer) look() bool {
	if p.budget > 0 && p.spent > p.budget {
		return p.stop(&WorkError{Limit: p.budget})
	}
	if err := p.ctx.Err(); err != nil {
		return p.stop(err)
	}
	if p.gate == nil || p.spent < HeavyAfter {
		return true
	}
	if !p.held {
		return p.take()
	}
	p.account()
	if p.spent < p.turnEnd && !p.gate.busy(p.sched) {
		return true
	}
	// The turn is over (its slice spent, or other work wants the CPU): a
	// rest holding the turn, then the next waiting request's turn, then
	// this one's again.
	p.gate.active.Add(-1)
	p.gate.rest(time.Since(p.turnStart), p.sched)
	p.gate.TestSignals.Rested.Signal(p.spent - (p.turnEnd - Slice))
	p.held = false
	p.gate.release()
	return p.take()
}

// take waits for a turn on the gate (or for the context's end).
func (p *Pacer) take() bool {
	if !p.heavy {
		p.heavy, p.sched = true, new([2]metrics.Sample)
		p.gate.TestSignals.Took.Signal(struct{}{})
	}
	if !p.gate.acquire(p.ctx) {
		return p.stop(p.ctx.Err())
	}
	p.held, p.turnEnd, p.gated = true, p.spent+Slice, p.spent
	p.gate.active.Add(1)
	p.turnStart = time.Now()
	return true
}

// account tells the gate of the tests spent under it since it last did.
func (p *Pacer) account() {
	p.gate.work.Add(int64(p.spent - p.gated))
	p.gated = p.spent
}

func (p *Pacer) stop(err error) bool {
	p.err = err
	p.EndTurn()
	return false
}

// Gate runs heavy matching (past HeavyAfter tests) in turns, behind every
// other piece of work of the process:
//
//   - At most Size requests' heavy matching runs at once, GOMAXPROCS-1 by
//     default (at least 1): it never holds every P of the Go scheduler, so
//     a light publish always finds one. Waiting requests take their turns
//     first come, first served.
//   - A turn is at most Slice tests, and ends at the first look (every
//     CheckEvery tests) that finds other work wanting the CPU: a goroutine
//     running besides the gate's turns, or runnable (runtime/metrics'
//     /sched/goroutines/running and runnable; reading them costs about a
//     microsecond a look, paid by heavy matching alone).
//   - A rest follows, holding the turn, as long as the turn ran, and while
//     other work still wants the CPU up to maxRest times as long: heavy
//     matching takes at most half of its cores' time, and a tenth while
//     the process is busy otherwise, never nothing (every heavy request
//     moves).
//   - The rest sleeps: the goroutine's P then polls the network and looks
//     at the other Ps' run queues, which runtime.Gosched would not do (the
//     goroutine would be taken back from the global run queue first). So
//     a light publish whose network event or goroutine waits behind a long
//     piece of work on another P (parsing a large body) runs within a
//     turn, not after the Go scheduler's 10 ms preemption.
//
// So a tenant's heavy publishes slow other tenants' light ones little, and
// slow down themselves instead. A Gate is safe for concurrent use.
type Gate struct {
	turns chan struct{}
	// active counts the turns running (not resting); waiting, the
	// requests waiting for a turn; work, the tests spent in turns (for
	// tests: heavy matching is running while it grows).
	active  atomic.Int32
	waiting atomic.Int32
	work    atomic.Int64
	// TestSignals are for tests: Took emits when a request's matching
	// becomes heavy (it asks for its first turn); Rested, when a turn ends
	// and its rest too, the tests the turn spent.
	TestSignals struct {
		Took   testsignal.Signal[struct{}]
		Rested testsignal.Signal[int]
	}
}

// NewGate returns a gate of n turns at once; n < 1 means GOMAXPROCS-1,
// at least 1.
func NewGate(n int) *Gate {
	if n < 1 {
		n = max(runtime.GOMAXPROCS(0)-1, 1)
	}
	return &Gate{turns: make(chan struct{}, n)}
}

// Size returns how many requests' heavy matching the gate runs at once.
func (g *Gate) Size() int { return cap(g.turns) }

// Running returns how many requests hold a turn now.
func (g *Gate) Running() int { return len(g.turns) }

// Waiting returns how many requests wait for a turn now.
func (g *Gate) Waiting() int { return int(g.waiting.Load()) }

// Work returns the tests spent in turns so far.
func (g *Gate) Work() int64 { return g.work.Load() }

// acquire waits for a turn; false when ctx ended first.
func (g *Gate) acquire(ctx context.Context) bool {
	select {
	case g.turns <- struct{}{}:
		return true
	default:
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.turns <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (g *Gate) release() { <-g.turns }

// rest sleeps after a turn that ran for ran: as long, and while other work
// wants the CPU (busy), in steps as long, up to maxRest times as long.
func (g *Gate) rest(ran time.Duration, s *[2]metrics.Sample) {
	ran = max(ran, time.Microsecond)
	for slept := time.Duration(0); ; slept += ran {
		time.Sleep(ran)
		if slept+ran >= maxRest*ran || !g.busy(s) {
			return
		}
	}
}

// busy reports whether other work wants the CPU: a goroutine running
// besides the gate's running turns, or one waiting for a P. s is the
// caller's to read the scheduler's counts into (concurrent reads must not
// share it).
func (g *Gate) busy(s *[2]metrics.Sample) bool {
	s[0].Name, s[1].Name = "/sched/goroutines/running:goroutines", "/sched/goroutines/runnable:goroutines"
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return false // a runtime without these counts: turns of whole slices
	}
	return s[0].Value.Uint64() > uint64(g.active.Load()) || s[1].Value.Uint64() > 0
}
