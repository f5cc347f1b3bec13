package postgres

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
)

// TestRedeliverTellsOtherNodes: a redelivery that queues a delivery tells
// this node's OnQueued before the call returns, and another node's through
// NOTIFY (the engine's NotifyQueued).
func TestRedeliverTellsOtherNodes(t *testing.T) {
	dbURL := freshSchema(t)
	logA, logB := newQueuedLog(), newQueuedLog()
	a := openAt(t, dbURL, Options{OnQueued: logA.onQueued})
	b := openAt(t, dbURL, Options{OnQueued: logB.onQueued})
	select {
	case <-b.SubscriptionsChanged(): // B's listener is listening
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not connect")
	}
	f := newFixture(t, a)
	pull := pullFixture(t, f, a, "pull")
	id := enqueue(t, f, a, pull, 1)[0]
	logB.await(t, "publish", pull.ID)
	time.Sleep(200 * time.Millisecond) // a stray notification of the publish arrives
	logA.heard()
	for len(logB.ch) > 0 {
		<-logB.ch
	}
	if d, err := a.Redeliver(f.ctx, id, t0.Add(time.Second)); err != nil || d.Status != delivery.StatusQueued {
		t.Fatalf("Redeliver = %+v, %v; want queued", d, err)
	}
	logA.heardAlready(t, "A's redelivery", pull.ID, pull.ID)
	logB.await(t, "redelivery", pull.ID)
}
