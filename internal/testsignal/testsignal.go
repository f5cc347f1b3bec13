// Package testsignal lets a service tell a test that it reached a point the
// test waits for (a round finished, a sleep begun), so tests wait on events
// the service emits instead of counting goroutines or sleeping. It has the
// shape of River's testsignal package.
//
// A Signal does nothing until a test calls Init on it, before the service
// starts; production code pays one nil check per emission.
package testsignal

import (
	"fmt"
	"time"
)

// Capacity is how many emitted values an initialized Signal holds unread.
// A test that initializes a signal must keep reading it: the emission that
// would overflow the buffer panics, so a forgotten reader fails the test
// instead of blocking the service.
const Capacity = 1024

// WaitTimeout is how long WaitOrTimeout waits.
const WaitTimeout = 10 * time.Second

// Signal is one kind of event a service emits to tests. The zero value is
// off. Init must happen before the emitting goroutine starts.
type Signal[T any] struct {
	ch chan T
}

// Init turns the signal on (tests only).
func (s *Signal[T]) Init() { s.ch = make(chan T, Capacity) }

// Signal emits v when the signal is on; it never blocks (see Capacity).
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
		panic(fmt.Sprintf("testsignal: %d values unread: a test turned a signal on and does not read it", Capacity))
	}
}

// C is the channel of emitted values (nil when the signal is off).
func (s *Signal[T]) C() <-chan T { return s.ch }

// WaitOrTimeout returns the next emitted value; it panics after WaitTimeout
// or when the signal is off, since a test waiting for it would hang.
func (s *Signal[T]) WaitOrTimeout() T {
	if s.ch == nil {
		panic("testsignal: WaitOrTimeout on a signal that was not initialized")
	}
	t := time.NewTimer(WaitTimeout)
	defer t.Stop()
	select {
	case v := <-s.ch:
		return v
	case <-t.C:
		panic(fmt.Sprintf("testsignal: no value within %v", WaitTimeout))
	}
}
