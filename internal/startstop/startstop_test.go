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
	l.TestSignals.Slept.Init()
	l.TestSignals.Woke.Init()
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
