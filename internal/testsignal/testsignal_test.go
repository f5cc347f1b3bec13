package testsignal_test

import (
	"testing"

	"github.com/herald-events/herald/internal/testsignal"
)

func TestSignal(t *testing.T) {
	var off testsignal.Signal[int]
	off.Signal(1) // off: nothing happens
	if off.C() != nil {
		t.Fatal("an uninitialized signal has a channel")
	}
	var s testsignal.Signal[int]
	s.Init()
	s.Signal(1)
	s.Signal(2)
	if a, b := s.WaitOrTimeout(), s.WaitOrTimeout(); a != 1 || b != 2 {
		t.Fatalf("got %d, %d; want 1, 2", a, b)
	}
	for i := 0; i < testsignal.Capacity; i++ {
		s.Signal(i)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an overflowing signal did not panic")
		}
	}()
	s.Signal(0)
}
