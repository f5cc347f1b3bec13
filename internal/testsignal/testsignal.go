// Package testsignal lets a service tell a test that it reached a point the
// test waits for (a round finished, a sleep begun), so tests wait on events
// the service emits instead of counting goroutines or sleeping. It has the
// shape of River's testsignal package: a test turns a signal on with
// Init(t), and what goes wrong is reported through t, failing that test
// rather than panicking the test binary.
//
// A Signal does nothing until a test calls Init on it, before the service
// starts; production code pays one nil check per emission.
package testsignal

import "time"

// Capacity is how many emitted values an initialized Signal holds unread.
// A test that initializes a signal must keep reading it: the emission that
// would overflow the buffer fails the test (TB.Errorf) and is dropped, so a
// forgotten reader fails the test instead of blocking the service.
const Capacity = 1024

// WaitTimeout is how long WaitOrTimeout waits.
const WaitTimeout = 10 * time.Second

// TB is what a Signal reports through: the methods of testing.TB it calls
// (a *testing.T or *testing.B is one). The package does not import testing,
// which the production code that emits signals would then link.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Signal is one kind of event a service emits to tests. The zero value is
// off. Init must happen before the emitting goroutine starts.
type Signal[T any] struct {
	ch chan T
	tb TB
}

// Init turns the signal on (tests only); tb is the test its failures are
// reported to.
func (s *Signal[T]) Init(tb TB) {
	s.ch = make(chan T, Capacity)
	s.tb = tb
}

// Signal emits v when the signal is on; it never blocks. When Capacity
// values are unread it fails the test (Errorf: it runs on the service's
// goroutine, which may not stop the test) and drops v.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
		s.tb.Errorf("testsignal: %d values unread: a test turned a signal on and does not read it", Capacity)
	}
}

// C is the channel of emitted values (nil when the signal is off).
func (s *Signal[T]) C() <-chan T { return s.ch }

// WaitOrTimeout returns the next emitted value; after WaitTimeout it fails
// the test with Fatalf, so it must be called from the test's goroutine. It
// panics on a signal that is off: there is no test to report to, and a
// test waiting for it would hang.
func (s *Signal[T]) WaitOrTimeout() T {
	if s.ch == nil {
		panic("testsignal: WaitOrTimeout on a signal that was not initialized")
	}
	s.tb.Helper()
	return s.waitFor(WaitTimeout)
}

// waitFor returns the next emitted value, failing the test after d.
func (s *Signal[T]) waitFor(d time.Duration) T {
	s.tb.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v := <-s.ch:
		return v
	case <-t.C:
		s.tb.Fatalf("testsignal: no value within %v", d)
		var zero T
		return zero // Fatalf does not return from a test's goroutine
	}
}
