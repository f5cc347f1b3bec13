package testsignal

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSignal(t *testing.T) {
	var off Signal[int]
	off.Signal(1) // off: nothing happens
	if off.C() != nil {
		t.Fatal("an uninitialized signal has a channel")
	}
	var s Signal[int]
	s.Init(t)
	s.Signal(1)
	s.Signal(2)
	if a, b := s.WaitOrTimeout(), s.WaitOrTimeout(); a != 1 || b != 2 {
		t.Fatalf("got %d, %d; want 1, 2", a, b)
	}
}

// recorder is a TB that records what a Signal reports. Its Fatalf ends the
// calling goroutine, as testing.T's FailNow does.
type recorder struct {
	mu             sync.Mutex
	errors, fatals []string
	helpers        int
}

func (r *recorder) Helper() { r.mu.Lock(); r.helpers++; r.mu.Unlock() }

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

// TestOverflowFailsTheTest: the emission beyond Capacity unread values is
// reported to the test (Errorf) and dropped; it neither blocks the service
// nor panics.
func TestOverflowFailsTheTest(t *testing.T) {
	var rec recorder
	var s Signal[int]
	s.Init(&rec)
	for i := range Capacity {
		s.Signal(i)
	}
	if len(rec.errors) != 0 {
		t.Fatalf("reported before the buffer was full: %q", rec.errors)
	}
	s.Signal(-1)
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], fmt.Sprintf("%d values unread", Capacity)) {
		t.Fatalf("the overflow reported %q, want one error naming the %d values unread", rec.errors, Capacity)
	}
	if len(s.C()) != Capacity || <-s.C() != 0 {
		t.Fatalf("%d values buffered, want the first %d (the overflowing one dropped)", len(s.C()), Capacity)
	}
}

// TestWaitTimeoutFailsTheTest: a wait that gets no value fails the test
// with Fatalf, marked as a helper so the failure names the caller's line,
// and ends the waiting goroutine; a value that comes is returned.
func TestWaitTimeoutFailsTheTest(t *testing.T) {
	var rec recorder
	var s Signal[string]
	s.Init(&rec)
	returned := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		returned <- s.waitFor(10 * time.Millisecond)
	}()
	<-done
	if len(returned) != 0 || len(rec.fatals) != 1 || rec.fatals[0] != "testsignal: no value within 10ms" || rec.helpers == 0 {
		t.Fatalf("returned %d values, fatals %q, Helper called %d times; want no value, one Fatalf naming the wait, Helper called",
			len(returned), rec.fatals, rec.helpers)
	}
	s.Signal("x")
	if got := s.waitFor(time.Minute); got != "x" || len(rec.fatals) != 1 {
		t.Fatalf("got %q, fatals %q", got, rec.fatals)
	}
}
