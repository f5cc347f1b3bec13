package startstop_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/startstop"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestLoopLifecycle: a loop runs its first round at Start, sleeps as long
// as the round asked (Slept says until when), runs again when the clock
// reaches it or when kicked, and Stop ends it; Started and Stopped close at
// the right moments and a second Stop is harmless.
func TestLoopLifecycle(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var rounds atomic.Int64
	l := startstop.NewLoop("test", clk, func(ctx context.Context) time.Duration {
		rounds.Add(1)
		return time.Minute
	})
	l.TestSignals.Slept.Init(t)
	l.TestSignals.Woke.Init(t)
	if closed(l.Started()) || closed(l.Stopped()) {
		t.Fatal("Started or Stopped closed before Start")
	}
	l.Stop() // without Start: nothing to do
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(context.Background()); err != nil { // already running: nothing
		t.Fatal(err)
	}
	<-l.Started()
	start := clk.Now()
	if until := l.TestSignals.Slept.WaitOrTimeout(); !until.Equal(start.Add(time.Minute)) {
		t.Fatalf("first sleep until %v, want %v", until, start.Add(time.Minute))
	}
	clk.Advance(time.Minute)
	l.TestSignals.Woke.WaitOrTimeout()
	l.TestSignals.Slept.WaitOrTimeout()
	l.Kick()
	l.TestSignals.Woke.WaitOrTimeout()
	l.TestSignals.Slept.WaitOrTimeout()
	if n := rounds.Load(); n != 3 {
		t.Fatalf("%d rounds, want 3 (start, clock, kick)", n)
	}
	l.Stop()
	if !closed(l.Stopped()) {
		t.Fatal("Stopped not closed after Stop")
	}
	l.Stop()
	if clk.Timers() != 0 {
		t.Fatalf("%d timers left after Stop", clk.Timers())
	}
}

// TestStopByContext: cancelling Start's context stops the service as Stop does.
func TestStopByContext(t *testing.T) {
	clk := clock.NewFake(time.Now())
	l := startstop.NewLoop("test", clk, func(ctx context.Context) time.Duration { return time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-l.Stopped()
	// It can start again; Stopped is a new channel for the new run.
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-l.Started()
	if closed(l.Stopped()) {
		t.Fatal("Stopped closed while the second run goes on")
	}
	l.Stop()
	<-l.Stopped()
}

// TestPeriodic: a periodic loop sleeps a period before its first round,
// and a round that ends with a kick waiting runs the next at once, without
// sleeping (no Slept, no Woke).
func TestPeriodic(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	var rounds atomic.Int64
	var l *startstop.Loop
	l = startstop.NewPeriodic("test", clk, time.Minute, func(ctx context.Context) {
		if rounds.Add(1) == 1 {
			l.Kick() // while in the round
		}
	})
	l.TestSignals.Slept.Init(t)
	l.TestSignals.Woke.Init(t)
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if until := l.TestSignals.Slept.WaitOrTimeout(); !until.Equal(start.Add(time.Minute)) || rounds.Load() != 0 {
		t.Fatalf("first sleep until %v after %d rounds; want %v after none", until, rounds.Load(), start.Add(time.Minute))
	}
	clk.Advance(time.Minute)
	l.TestSignals.Woke.WaitOrTimeout()
	if until := l.TestSignals.Slept.WaitOrTimeout(); !until.Equal(start.Add(2*time.Minute)) || rounds.Load() != 2 {
		t.Fatalf("second sleep until %v after %d rounds; want %v after 2 (the kick's round unslept)", until, rounds.Load(), start.Add(2*time.Minute))
	}
	if len(l.TestSignals.Woke.C()) != 0 {
		t.Fatal("a Woke for the kick that was already waiting")
	}
}
