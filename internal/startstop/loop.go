package startstop

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/testsignal"
)

// Loop is a service that runs a round, then sleeps on its clock for as long
// as the round asked, or until kicked, and again, until stopped: the shape
// of every periodic job in Herald (the due loader, the health sync, the
// lease keeper, the catalog reload, the retention clean-up, …). Kick is
// safe for concurrent use.
type Loop struct {
	Base
	// Name says whose loop this is (in test failures).
	Name  string
	clock clock.Clock
	round func(ctx context.Context) time.Duration
	kickc chan struct{} // capacity 1: kicks coalesce

	// TestSignals are emitted for tests (off unless initialized).
	TestSignals LoopSignals
}

// LoopSignals are what a Loop tells tests.
type LoopSignals struct {
	// Slept is emitted when the loop goes to sleep: it will run its next
	// round at Until (on its clock) unless kicked first. A loop whose last
	// Slept has an Until after the clock's now has done everything the
	// clock allowed so far.
	Slept testsignal.Signal[time.Time]
	// Woke is emitted when the loop wakes for a round (its timer fired or
	// it was kicked).
	Woke testsignal.Signal[struct{}]
}

// NewLoop returns a loop that has not started. round runs one round with
// the loop's context and returns how long to sleep before the next (zero or
// less: run again at once).
func NewLoop(name string, clk clock.Clock, round func(ctx context.Context) time.Duration) *Loop {
	return &Loop{Name: name, clock: clk, round: round, kickc: make(chan struct{}, 1)}
}

// Start runs the loop's first round, and the rest, on a goroutine of its own.
func (l *Loop) Start(ctx context.Context) error {
	ctx, shouldStart, started, stopped := l.StartInit(ctx)
	if !shouldStart {
		return nil
	}
	go func() {
		defer stopped()
		started()
		l.run(ctx)
	}()
	return nil
}

// Kick makes the loop run a round as soon as the current one ends.
func (l *Loop) Kick() {
	select {
	case l.kickc <- struct{}{}:
	default:
	}
}

func (l *Loop) run(ctx context.Context) {
	for ctx.Err() == nil {
		d := l.round(ctx)
		if d <= 0 {
			continue
		}
		t := l.clock.NewTimer(d)
		l.TestSignals.Slept.Signal(l.clock.Now().Add(d))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-l.kickc:
			t.Stop()
		}
		l.TestSignals.Woke.Signal(struct{}{})
	}
}
