package storetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

var claimTests = []test{
	{"FreshBeforeRetry", testClaimFreshBeforeRetry},
	{"EachLaneInDueOrder", testClaimLaneOrder},
	{"NotBeforeDue", testClaimNotBeforeDue},
	{"Limit", testClaimLimit},
	{"NeverLeasedOrOtherEndpoints", testClaimNeverLeased},
	{"CarriesEvent", testClaimCarriesEvent},
	{"DueEndpointsAndNextDue", testDueEndpoints},
	{"Release", testRelease},
	{"CountPendingByLane", testCountPending},
}

// retrying makes a delivery to sub, published at `published`, whose first
// attempt failed; it is due again at next (in the retry lane).
func (b *bundle) retrying(sub store.Subscription, published, next time.Time) string {
	b.t.Helper()
	ev := b.event(published, sub)
	ev.Deliveries[0].Claimed = true
	b.publish(ev)
	id := ev.Deliveries[0].ID
	b.record(failed(id, 1, published, published.Add(2*time.Second), next))
	return id
}

func testClaimFreshBeforeRetry(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	retry := b.retrying(a, b.now, b.at(time.Minute))      // due at +1m
	fresh := b.deliver(a, b.at(2*time.Minute))            // due at +2m
	got := b.claim(a.EndpointID, b.at(3*time.Minute), 10) // both due
	equal(t, "claim order", claimedIDs(got), []string{fresh, retry})
	if got[0].Attempts != 0 || got[1].Attempts != 1 {
		t.Fatalf("attempts %d, %d; want 0, 1", got[0].Attempts, got[1].Attempts)
	}
}

func testClaimLaneOrder(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	f3 := b.deliver(a, b.at(3*time.Second))
	f1 := b.deliver(a, b.at(1*time.Second))
	f2 := b.deliver(a, b.at(2*time.Second))
	r2 := b.retrying(a, b.now, b.at(20*time.Second))
	r1 := b.retrying(a, b.now, b.at(10*time.Second))
	r3 := b.retrying(a, b.now, b.at(30*time.Second))
	got := b.claim(a.EndpointID, b.at(time.Hour), 100)
	equal(t, "claim order", claimedIDs(got), []string{f1, f2, f3, r1, r2, r3})
}

func testClaimNotBeforeDue(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	fresh := b.deliver(a, b.at(10*time.Second))
	retry := b.retrying(a, b.now, b.at(20*time.Second))
	if got := b.claim(a.EndpointID, b.at(10*time.Second-time.Millisecond), 10); len(got) != 0 {
		t.Fatalf("claimed %v before they were due", claimedIDs(got))
	}
	equal(t, "claimed at fresh due time", claimedIDs(b.claim(a.EndpointID, b.at(10*time.Second), 10)), []string{fresh})
	if got := b.claim(a.EndpointID, b.at(20*time.Second-time.Millisecond), 10); len(got) != 0 {
		t.Fatalf("claimed %v before they were due", claimedIDs(got))
	}
	equal(t, "claimed at retry due time", claimedIDs(b.claim(a.EndpointID, b.at(20*time.Second), 10)), []string{retry})
}

func testClaimLimit(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	f1 := b.deliver(a, b.at(1*time.Second))
	f2 := b.deliver(a, b.at(2*time.Second))
	r1 := b.retrying(a, b.now, b.at(3*time.Second))
	r2 := b.retrying(a, b.now, b.at(4*time.Second))
	r3 := b.retrying(a, b.now, b.at(5*time.Second))
	now := b.at(time.Minute)
	equal(t, "first claim", claimedIDs(b.claim(a.EndpointID, now, 3)), []string{f1, f2, r1})
	equal(t, "second claim", claimedIDs(b.claim(a.EndpointID, now, 1)), []string{r2})
	if got := b.claim(a.EndpointID, now, 0); len(got) != 0 {
		t.Fatalf("limit 0 claimed %v", claimedIDs(got))
	}
	equal(t, "third claim", claimedIDs(b.claim(a.EndpointID, now, 3)), []string{r3})
	if got := b.claim(a.EndpointID, now, 3); len(got) != 0 {
		t.Fatalf("claimed %v twice", claimedIDs(got))
	}
}

func testClaimNeverLeased(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	da := b.deliver(a, b.now)
	dc := b.deliver(c, b.now)
	equal(t, "claim a", claimedIDs(b.claim(a.EndpointID, b.now, 10)), []string{da})
	if got := b.claim(a.EndpointID, b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("leased deliveries claimed again: %v", claimedIDs(got))
	}
	// Another owner does not get them either.
	other := store.Lease{Owner: "node-b", Until: b.lease.Until}
	if got, err := b.s.ClaimDue(b.ctx, a.EndpointID, b.at(time.Hour), 10, other); err != nil || len(got) != 0 {
		t.Fatalf("another owner claimed %v (err %v)", claimedIDs(got), err)
	}
	equal(t, "claim c", claimedIDs(b.claim(c.EndpointID, b.now, 10)), []string{dc})
	if got := b.claim("ep_unknown", b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("unknown endpoint: claimed %v", claimedIDs(got))
	}
}

func testClaimCarriesEvent(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev := b.event(b.at(time.Second), a)
	seq := b.publish(ev)[0].Seq
	got := b.claim(a.EndpointID, b.at(time.Second), 1)
	equal(t, "claimed", got, []store.Claimed{{Delivery: pendingDelivery(ev, 0, seq), Payload: ev.Payload}})
	// A retry carries its current state.
	r := b.retrying(a, b.now, b.at(time.Minute))
	got = b.claim(a.EndpointID, b.at(time.Minute), 1)
	if len(got) != 1 {
		t.Fatalf("claimed %d, want the retry", len(got))
	}
	equal(t, "claimed retry", got[0].Delivery, b.get(r))
	if got[0].Attempts != 1 || got[0].RoundAttempts != 1 || !got[0].FirstFailure.Equal(b.at(2*time.Second)) {
		t.Fatalf("retry state not carried: %+v", got[0].Delivery)
	}
}

func testDueEndpoints(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	c := b.sub("https://c.example/hook")
	e := b.sub("https://e.example/hook")
	// a: fresh due at +5s, retry due at +1s: +1s.
	b.deliver(a, b.at(5*time.Second))
	b.retrying(a, b.now, b.at(1*time.Second))
	// c: a leased delivery due at 0 does not count; fresh at +7s.
	leased := b.event(b.now, c)
	leased.Deliveries[0].Claimed = true
	b.publish(leased)
	b.deliver(c, b.at(7*time.Second))
	// e: only leased deliveries.
	only := b.event(b.now, e)
	only.Deliveries[0].Claimed = true
	b.publish(only)

	got, err := b.s.DueEndpoints(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{a.EndpointID: b.at(time.Second), c.EndpointID: b.at(7 * time.Second)}
	if len(got) != len(want) {
		t.Fatalf("DueEndpoints = %+v, want %v", got, want)
	}
	for _, g := range got {
		if w, ok := want[g.EndpointID]; !ok || !g.NextDue.Equal(w) {
			t.Fatalf("DueEndpoints = %+v, want %v", got, want)
		}
	}
	for _, tc := range []struct {
		ep   string
		want time.Time
		ok   bool
	}{
		{a.EndpointID, b.at(time.Second), true},
		{c.EndpointID, b.at(7 * time.Second), true},
		{e.EndpointID, time.Time{}, false},
		{"ep_unknown", time.Time{}, false},
	} {
		at, ok, err := b.s.NextDue(b.ctx, tc.ep)
		if err != nil || ok != tc.ok || !at.Equal(tc.want) {
			t.Fatalf("NextDue(%s) = %v, %v, %v; want %v, %v", tc.ep, at, ok, err, tc.want, tc.ok)
		}
	}
	// Claiming a's retry leaves its fresh delivery as the next due.
	b.claim(a.EndpointID, b.at(2*time.Second), 10)
	if at, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || !ok || !at.Equal(b.at(5*time.Second)) {
		t.Fatalf("NextDue after claim = %v, %v, %v; want +5s", at, ok, err)
	}
}

func testRelease(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	d1 := b.deliver(a, b.now)
	d2 := b.deliver(a, b.at(time.Second))
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, b.at(time.Second), 10)), []string{d1, d2})
	if err := b.s.Release(b.ctx, []string{d2, "dlv_unknown"}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if at, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || !ok || !at.Equal(b.at(time.Second)) {
		t.Fatalf("NextDue after release = %v, %v, %v; want +1s", at, ok, err)
	}
	equal(t, "claimed after release", claimedIDs(b.claim(a.EndpointID, b.at(time.Second), 10)), []string{d2})
	if err := b.s.Release(b.ctx, nil); err != nil {
		t.Fatalf("Release(nil): %v", err)
	}
	// Releasing a delivery that holds no lease changes nothing.
	d3 := b.deliver(a, b.at(time.Minute))
	if err := b.s.Release(b.ctx, []string{d3}); err != nil {
		t.Fatal(err)
	}
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, b.at(time.Minute), 10)), []string{d3})
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
	queued.Status = store.StatusQueued
	b.record(queued)
	count(2, 1)
}
