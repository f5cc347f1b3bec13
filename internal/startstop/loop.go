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
	delay time.Duration // slept before the first round (NewPeriodic)
	kickc chan struct{} // capacity 1: kicks coalesce

	// TestSignals are emitted for tests (off unless initialized).
	TestSignals LoopSignals
}

// LoopSignals are what a Loop tells tests. They alternate: Slept, Woke,
// Slept, … (a round that ends with a kick already waiting runs the next
// at once, without either).
type LoopSignals struct {
	// Slept is emitted when the loop goes to sleep, with the time (on its
	// clock) at which its timer fires: it runs its next round then, unless
	// kicked first. A loop whose last signal is a Slept with a time after
	// the clock's now has done everything the clock allowed so far.
	Slept testsignal.Signal[time.Time]
	// Woke is emitted when the loop wakes for a round (its timer fired or
	// it was kicked).
	Woke testsignal.Signal[struct{}]
}

// NewLoop returns a loop that has not started. round runs one round with
// the loop's context and returns how long to sleep before the next (zero or
// less: run again at once). The first round runs at Start.
func NewLoop(name string, clk clock.Clock, round func(ctx context.Context) time.Duration) *Loop {
	return &Loop{Name: name, clock: clk, round: round, kickc: make(chan struct{}, 1)}
}

// NewPeriodic returns a loop that has not started and that runs job every
// period on its clock (or sooner when kicked), the first time one period
// after Start.
func NewPeriodic(name string, clk clock.Clock, period time.Duration, job func(ctx context.Context)) *Loop {
	l := NewLoop(name, clk, func(ctx context.Context) time.Duration {
		job(ctx)
		return period
	})
	l.delay = period
	return l
}

// Start runs the loop on a goroutine of its own.
func (l *Loop) Start(ctx context.Context) error {
	l.StartGo(ctx, l.run)
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
	d := l.delay
	for {
		if d > 0 && !l.sleep(ctx, d) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		d = l.round(ctx)
	}
}

// sleep waits d on the loop's clock, or until kicked; it reports false when
// ctx ended first. A kick already waiting ends it at once, unsignalled.
func (l *Loop) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-l.kickc:
		return true
	default:
	}
	t := l.clock.NewTimer(d)
	// The timer exists before the signal: a test that moves the clock past
	// it after reading the signal wakes the loop.
	l.TestSignals.Slept.Signal(t.When())
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-t.C():
	case <-l.kickc:
		t.Stop()
	}
	l.TestSignals.Woke.Signal(struct{}{})
	return true
}
