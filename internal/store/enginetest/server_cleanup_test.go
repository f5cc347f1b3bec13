package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// testCleanup: Cleanup deletes, oldest first and at most limit a call, the
// events published before `before` whose deliveries are all finished,
// with their deliveries and attempts; it keeps those with a delivery
// pending or queued, and those published at or after `before`; and a
// deleted event's sequence is never reused.
func testCleanup(t *testing.T, b *bundle) {
	e := publishCleanupEvents(b)
	before := b.at(time.Minute)
	n, err := b.s.Cleanup(b.ctx, before, 2)
	if err != nil || n != 2 {
		t.Fatalf("Cleanup(limit 2) = %d, %v; want 2", n, err)
	}
	cleanedUp(t, b, e.delivered)
	cleanedUp(t, b, e.ended)
	keptUp(t, b, e.empty)
	n, err = b.s.Cleanup(b.ctx, before, 100)
	if err != nil || n != 1 {
		t.Fatalf("Cleanup = %d, %v; want 1", n, err)
	}
	cleanedUp(t, b, e.empty)
	keptUp(t, b, e.unfinished)
	keptUp(t, b, e.queued)
	keptUp(t, b, e.recent)
	if n, err := b.s.Cleanup(b.ctx, before, 100); err != nil || n != 0 {
		t.Fatalf("Cleanup again = %d, %v; want 0", n, err)
	}
	// An event is old when published before `before`, not at it.
	if n, err := b.s.Cleanup(b.ctx, b.at(time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("Cleanup(before = publish time) = %d, %v; want 0", n, err)
	}
	if n, err := b.s.Cleanup(b.ctx, b.at(time.Hour+time.Millisecond), 100); err != nil || n != 1 {
		t.Fatalf("Cleanup(after publish time) = %d, %v; want 1", n, err)
	}
	cleanedUp(t, b, e.recent)
	// New events never reuse a deleted event's sequence.
	if seq := b.publish(b.event(b.now))[0].Seq; seq <= e.recent.seq {
		t.Fatalf("new event got seq %d, not above deleted %d", seq, e.recent.seq)
	}
}

// cleanupEvent is an event testCleanup published: its seq and its
// deliveries.
type cleanupEvent struct {
	seq        int64
	deliveries []string
}

// cleanupEvents are testCleanup's events, oldest first: delivered; one
// still pending; dead-lettered and dropped; no deliveries; one queued;
// then a finished event that is too new. Each delivery has one attempt.
type cleanupEvents struct {
	delivered, unfinished, ended, empty, queued, recent cleanupEvent
}

// publishCleanupEvents publishes testCleanup's events to one subscription
// and records their attempts.
func publishCleanupEvents(b *bundle) cleanupEvents {
	a := b.sub("https://a.example/hook")
	publish := func(at time.Time, n int) cleanupEvent {
		subs := make([]subscription.Subscription, n)
		for i := range subs {
			subs[i] = a
		}
		e := b.event(at, subs...)
		for i := range e.Deliveries {
			e.Deliveries[i].Claimed = true
		}
		out := cleanupEvent{seq: b.publish(e)[0].Seq}
		for _, d := range e.Deliveries {
			out.deliveries = append(out.deliveries, d.ID)
		}
		return out
	}
	var e cleanupEvents
	e.delivered = publish(b.now, 2)
	b.record(succeeded(e.delivered.deliveries[0], 1, b.now), succeeded(e.delivered.deliveries[1], 1, b.now))
	e.unfinished = publish(b.at(time.Second), 2)
	b.record(succeeded(e.unfinished.deliveries[0], 1, b.now))
	b.record(failed(e.unfinished.deliveries[1], 1, b.now, b.now, b.at(time.Hour)))
	e.ended = publish(b.at(2*time.Second), 2)
	b.record(deadLettered(e.ended.deliveries[0], 1, b.now, b.now))
	dropped := failed(e.ended.deliveries[1], 1, b.now, b.now, time.Time{})
	dropped.Status, dropped.DeadLetterReason = delivery.StatusDropped, "TimeToLiveExceeded"
	b.record(dropped)
	e.empty = publish(b.at(3*time.Second), 0)
	e.queued = publish(b.at(4*time.Second), 1)
	q := failed(e.queued.deliveries[0], 1, b.now, b.now, time.Time{})
	q.Status = delivery.StatusQueued
	b.record(q)
	e.recent = publish(b.at(time.Hour), 1)
	b.record(succeeded(e.recent.deliveries[0], 1, b.at(time.Hour)))
	return e
}

// cleanedUp fails the test unless e, its deliveries and their attempts
// are gone.
func cleanedUp(t *testing.T, b *bundle, e cleanupEvent) {
	t.Helper()
	if _, err := b.s.GetEvent(b.ctx, e.seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("event %d not deleted (err %v)", e.seq, err)
	}
	for _, id := range e.deliveries {
		if _, err := b.s.GetDelivery(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delivery %s not deleted (err %v)", id, err)
		}
		if _, _, err := b.s.ListAttempts(b.ctx, id, store.Page{}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("attempts of %s: %v, want ErrNotFound", id, err)
		}
	}
}

// keptUp fails the test unless e, its deliveries and their attempt are
// there.
func keptUp(t *testing.T, b *bundle, e cleanupEvent) {
	t.Helper()
	if _, err := b.s.GetEvent(b.ctx, e.seq); err != nil {
		t.Fatalf("event %d: %v", e.seq, err)
	}
	for _, id := range e.deliveries {
		b.get(id)
		if as, _, err := b.s.ListAttempts(b.ctx, id, store.Page{}); err != nil || len(as) != 1 {
			t.Fatalf("attempts of %s: %d, %v", id, len(as), err)
		}
	}
}
