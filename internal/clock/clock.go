// Package clock gives Herald's scheduling code its notion of time.
//
// Every component that decides when something happens (the retry schedule,
// the due-window loader, endpoint health) reads time from a Clock passed in at
// construction, never from the time package directly. Production uses Real;
// tests use Fake and move time forward explicitly, so a 48-hour retry policy
// runs in milliseconds.
//
// Network timeouts (an HTTP attempt's deadline) are not scheduling and use real
// time through context deadlines.
package clock

import "time"

// Clock tells the time and makes timers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer; its channel receives the clock's time when it fires.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped it.
	Stop() bool
	// When is the clock's time at which the timer fires (or fired).
	When() time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer {
	return realTimer{t: time.NewTimer(d), at: time.Now().Add(d)}
}

type realTimer struct {
	t  *time.Timer
	at time.Time
}

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
func (r realTimer) When() time.Time     { return r.at }
