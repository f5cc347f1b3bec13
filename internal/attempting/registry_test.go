package attempting

import (
	"context"
	"testing"
)

// TestStopSubscriptionWaitsForTheAttemptsItCut: cancelSub cuts short (and
// cancels, once armed) every attempt of the subscription registered then,
// and its channel closes when the last of those is removed, whatever was
// registered after it or for another subscription.
func TestStopSubscriptionWaitsForTheAttemptsItCut(t *testing.T) {
	var s registry
	s.init()
	a, b := s.add("sub_1"), s.add("sub_1")
	other := s.add("sub_2")
	var aCancelled, bCancelled bool
	a.arm(func() { aCancelled = true })
	drained := s.cancelSub("sub_1")
	if drained == nil || !a.wasCut() || !b.wasCut() || other.wasCut() || !aCancelled {
		t.Fatalf("after cancelSub: drained %v, cut %v %v %v, a cancelled %v", drained, a.wasCut(), b.wasCut(), other.wasCut(), aCancelled)
	}
	b.arm(func() { bCancelled = true }) // armed after the cut: cancelled at once
	if again := s.cancelSub("sub_1"); again != drained {
		t.Fatal("a second cancelSub must wait on the same attempts")
	}
	later := s.add("sub_1") // finds the subscription gone; not waited for
	s.remove("sub_1", a)
	select {
	case <-drained:
		t.Fatal("drained with one cut attempt still registered")
	default:
	}
	s.remove("sub_1", b)
	<-drained // the test hangs here if it is not closed
	if !bCancelled {
		t.Error("an attempt armed after it was cut was not cancelled")
	}
	s.remove("sub_1", later)
	s.remove("sub_2", other)
	if len(s.bySub) != 0 || s.cancelSub("sub_1") != nil {
		t.Errorf("after every remove: %d lists left", len(s.bySub))
	}
}

// TestStopSubscriptionWithNothingRunning returns at once.
func TestStopSubscriptionWithNothingRunning(t *testing.T) {
	e := newSendEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.StopSubscription(ctx, "sub_none"); err != nil {
		t.Fatalf("StopSubscription of a subscription with no attempt: %v", err)
	}
}
