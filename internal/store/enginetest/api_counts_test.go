package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// testCountQueued: every subscription's queued deliveries, locked or not.
func testCountQueued(t *testing.T, b *bundle) {
	countQueued(b, 0)
	p, q, a := b.pullSub(true), b.pullSub(true), b.sub("https://a.example/hook")
	for range 3 {
		b.queue(p, b.now)
	}
	b.queue(q, b.now)
	b.queue(a, b.now) // a push subscription's (deactivated)
	b.deliver(a, b.now)
	countQueued(b, 5)
	res := receive(b, p, b.now, 3)
	countQueued(b, 5)
	settled(t, "acknowledge", settle(b, p, store.Acknowledge, b.now, res.Received[0].LockToken), nil)
	settled(t, "reject", settle(b, p, store.Reject, b.now, res.Received[1].LockToken), nil)
	settled(t, "release", settle(b, p, store.Release, b.now, res.Received[2].LockToken), nil)
	countQueued(b, 3)
}

func testPing(t *testing.T, b *bundle) {
	if err := b.s.Ping(b.ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testCountPending(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	count := func(wantFresh, wantRetry int64) {
		t.Helper()
		fresh, retry, err := b.s.CountPending(b.ctx)
		if err != nil || fresh != wantFresh || retry != wantRetry {
			t.Fatalf("CountPending = %d, %d, %v; want %d, %d", fresh, retry, err, wantFresh, wantRetry)
		}
	}
	count(0, 0)
	b.deliver(a, b.now)                           // fresh
	b.deliver(a, b.at(time.Hour))                 // fresh, not yet due
	r1 := b.retrying(a, b.now, b.at(time.Minute)) // retry
	b.retrying(a, b.now, b.at(2*time.Hour))       // retry
	count(2, 2)
	// Leased deliveries are still pending.
	b.claim(a.EndpointID, b.at(time.Minute), 10) // the first fresh one and r1
	count(2, 2)
	// Finished and queued ones are not.
	b.record(succeeded(r1, 2, b.at(time.Minute)))
	q := b.deliver(a, b.now)
	b.claim(a.EndpointID, b.now, 1)
	queued := failed(q, 1, b.now, b.now, time.Time{})
	queued.Status = delivery.StatusQueued
	b.record(queued)
	count(2, 1)
}

// testCountBacklog: CountBacklog counts what CountPending and CountQueued
// count (leased deliveries too), each count exact up to its limit and the
// limit itself above it; a limit below 1 counts nothing.
func testCountBacklog(t *testing.T, b *bundle) {
	count := func(limit int64, want store.Backlog) {
		t.Helper()
		if got, err := b.s.CountBacklog(b.ctx, limit); err != nil || got != want {
			t.Fatalf("CountBacklog(%d) = %+v, %v; want %+v", limit, got, err, want)
		}
	}
	count(10, store.Backlog{})
	a, p := b.sub("https://a.example/hook"), b.pullSub(true)
	for range 3 {
		b.deliver(a, b.now) // fresh
	}
	b.retrying(a, b.now, b.at(time.Minute))
	b.retrying(a, b.now, b.at(time.Hour))
	for range 4 {
		b.queue(p, b.now)
	}
	b.claim(a.EndpointID, b.now, 2) // two of the fresh ones, leased
	fresh, retry, err := b.s.CountPending(b.ctx)
	queued, qerr := b.s.CountQueued(b.ctx)
	if err != nil || qerr != nil || fresh != 3 || retry != 2 || queued != 4 {
		t.Fatalf("CountPending, CountQueued = %d, %d, %d, %v, %v; want 3, 2, 4", fresh, retry, queued, err, qerr)
	}
	count(10, store.Backlog{Fresh: 3, Retry: 2, Queued: 4})
	count(4, store.Backlog{Fresh: 3, Retry: 2, Queued: 4})
	count(3, store.Backlog{Fresh: 3, Retry: 2, Queued: 3})
	count(2, store.Backlog{Fresh: 2, Retry: 2, Queued: 2})
	count(1, store.Backlog{Fresh: 1, Retry: 1, Queued: 1})
	count(0, store.Backlog{})
	count(-1, store.Backlog{})
}

// testCountPendingOf: CountPendingOf counts the pending deliveries of the
// endpoints named together (both lanes, leased ones too, due or not; not
// queued or finished ones, not another endpoint's), exact up to its limit
// and the limit itself above it; an ID named twice counts once; no
// endpoint, an unknown one, or a limit below 1 counts nothing.
func testCountPendingOf(t *testing.T, b *bundle) {
	a, c, other := b.sub("https://a.example/hook"), b.sub("https://c.example/hook"), b.sub("https://other.example/hook")
	count := func(ids []string, limit, want int64) {
		t.Helper()
		if got, err := b.s.CountPendingOf(b.ctx, ids, limit); err != nil || got != want {
			t.Fatalf("CountPendingOf(%v, %d) = %d, %v; want %d", ids, limit, got, err, want)
		}
	}
	count([]string{a.EndpointID}, 10, 0)
	for range 3 {
		b.deliver(a, b.now) // fresh
	}
	b.retrying(a, b.now, b.at(time.Minute))
	b.claim(a.EndpointID, b.now, 2) // two of the fresh ones, leased
	q, done := b.deliver(c, b.now), b.deliver(c, b.now)
	b.deliver(c, b.at(time.Hour)) // fresh, not yet due
	b.retrying(c, b.now, b.at(time.Hour))
	b.claim(c.EndpointID, b.now, 2) // q and done
	queued := failed(q, 1, b.now, b.now, time.Time{})
	queued.Status = delivery.StatusQueued
	b.record(queued)
	b.record(succeeded(done, 1, b.now))
	for range 4 {
		b.deliver(other, b.now)
	}
	ac := []string{a.EndpointID, c.EndpointID}
	count([]string{a.EndpointID}, 10, 4)
	count([]string{c.EndpointID}, 10, 2)
	count([]string{other.EndpointID}, 10, 4)
	count(ac, 10, 6)
	count([]string{c.EndpointID, a.EndpointID, a.EndpointID}, 10, 6)
	count(ac, 6, 6)
	count(ac, 5, 5)
	count([]string{a.EndpointID}, 3, 3)
	count(ac, 1, 1)
	count(ac, 0, 0)
	count(ac, -1, 0)
	count(nil, 10, 0)
	count([]string{"ep_none"}, 10, 0)
}
