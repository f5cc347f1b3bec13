package clock

import (
	"testing"
	"time"
)

func TestFakeFiresDueTimersOnly(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	a := f.NewTimer(time.Second)
	b := f.NewTimer(time.Hour)
	c := f.NewTimer(time.Minute)
	if !c.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	f.Advance(2 * time.Second)
	select {
	case at := <-a.C():
		if !at.Equal(start.Add(2 * time.Second)) {
			t.Fatalf("fired with %s", at)
		}
	default:
		t.Fatal("a due timer did not fire")
	}
	select {
	case <-b.C():
		t.Fatal("a timer fired early")
	default:
	}
	if f.Timers() != 1 {
		t.Fatalf("%d timers pending, want 1", f.Timers())
	}
	if next, ok := f.NextTimer(); !ok || !next.Equal(start.Add(time.Hour)) {
		t.Fatalf("NextTimer %s %v", next, ok)
	}
	f.Set(start) // never backwards
	if !f.Now().Equal(start.Add(2 * time.Second)) {
		t.Fatal("Set moved the clock backwards")
	}
	if a.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
	if z := f.NewTimer(0); len(z.C()) != 1 || !z.When().Equal(f.Now()) {
		t.Fatal("a zero timer must fire at once")
	}
	if !b.When().Equal(start.Add(time.Hour)) {
		t.Fatalf("When %v, want %v", b.When(), start.Add(time.Hour))
	}
}
