package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

var cleanupTests = []test{
	{"OnlyOldFinishedEvents", testCleanup},
}

func testCleanup(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	type ev struct {
		seq        int64
		deliveries []string
	}
	publish := func(at time.Time, n int) ev {
		subs := make([]subscription.Subscription, n)
		for i := range subs {
			subs[i] = a
		}
		e := b.event(at, subs...)
		for i := range e.Deliveries {
			e.Deliveries[i].Claimed = true
		}
		var out ev
		out.seq = b.publish(e)[0].Seq
		for _, d := range e.Deliveries {
			out.deliveries = append(out.deliveries, d.ID)
		}
		return out
	}
	// Oldest first: delivered; one still pending; dead-lettered and dropped;
	// no deliveries; one queued; then a finished event that is too new.
	delivered := publish(b.now, 2)
	b.record(succeeded(delivered.deliveries[0], 1, b.now), succeeded(delivered.deliveries[1], 1, b.now))
	unfinished := publish(b.at(time.Second), 2)
	b.record(succeeded(unfinished.deliveries[0], 1, b.now))
	b.record(failed(unfinished.deliveries[1], 1, b.now, b.now, b.at(time.Hour)))
	ended := publish(b.at(2*time.Second), 2)
	b.record(deadLettered(ended.deliveries[0], 1, b.now, b.now))
	dropped := failed(ended.deliveries[1], 1, b.now, b.now, time.Time{})
	dropped.Status, dropped.DeadLetterReason = delivery.StatusDropped, "TimeToLiveExceeded"
	b.record(dropped)
	empty := publish(b.at(3*time.Second), 0)
	queued := publish(b.at(4*time.Second), 1)
	q := failed(queued.deliveries[0], 1, b.now, b.now, time.Time{})
	q.Status = delivery.StatusQueued
	b.record(q)
	recent := publish(b.at(time.Hour), 1)
	b.record(succeeded(recent.deliveries[0], 1, b.at(time.Hour)))

	before := b.at(time.Minute)
	gone := func(e ev) {
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
	kept := func(e ev) {
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

	n, err := b.s.Cleanup(b.ctx, before, 2)
	if err != nil || n != 2 {
		t.Fatalf("Cleanup(limit 2) = %d, %v; want 2", n, err)
	}
	gone(delivered)
	gone(ended)
	kept(empty)
	n, err = b.s.Cleanup(b.ctx, before, 100)
	if err != nil || n != 1 {
		t.Fatalf("Cleanup = %d, %v; want 1", n, err)
	}
	gone(empty)
	kept(unfinished)
	kept(queued)
	kept(recent)
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
	gone(recent)
	// New events never reuse a deleted event's sequence.
	if seq := b.publish(b.event(b.now))[0].Seq; seq <= recent.seq {
		t.Fatalf("new event got seq %d, not above deleted %d", seq, recent.seq)
	}
}
