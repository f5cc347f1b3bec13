package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

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
	if err := b.s.Release(b.ctx, []string{d2, "dlv_unknown"}, b.lease.Owner); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if at, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || !ok || !at.Equal(b.at(time.Second)) {
		t.Fatalf("NextDue after release = %v, %v, %v; want +1s", at, ok, err)
	}
	equal(t, "claimed after release", claimedIDs(b.claim(a.EndpointID, b.at(time.Second), 10)), []string{d2})
	if err := b.s.Release(b.ctx, nil, b.lease.Owner); err != nil {
		t.Fatalf("Release(nil): %v", err)
	}
	// Releasing a delivery that holds no lease changes nothing.
	d3 := b.deliver(a, b.at(time.Minute))
	if err := b.s.Release(b.ctx, []string{d3}, b.lease.Owner); err != nil {
		t.Fatal(err)
	}
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, b.at(time.Minute), 10)), []string{d3})
}

// testReleaseOtherOwner: Release by an owner that does not hold the lease
// (it was taken over) leaves the holder's lease alone.
func testReleaseOtherOwner(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	d := b.deliver(a, b.now)
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, b.now, 10)), []string{d})
	if err := b.s.Release(b.ctx, []string{d}, "node-b"); err != nil {
		t.Fatalf("Release by another owner: %v", err)
	}
	if _, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || ok {
		t.Fatalf("NextDue after another owner's Release = ok %v, err %v; want still leased", ok, err)
	}
	other := store.Lease{Owner: "node-b", Until: b.lease.Until}
	if got, err := b.s.ClaimDue(b.ctx, a.EndpointID, b.at(time.Minute), 10, other); err != nil || len(got) != 0 {
		t.Fatalf("claimed %v (err %v) after another owner's Release; want still leased", claimedIDs(got), err)
	}
	// The holder's own outcome still applies: it holds the lease.
	if kept, err := b.s.ExtendLeases(b.ctx, []string{d}, b.lease); err != nil || len(kept) != 1 {
		t.Fatalf("ExtendLeases by the holder = %v, %v; want it still held", kept, err)
	}
	// The holder's Release frees it.
	if err := b.s.Release(b.ctx, []string{d}, b.lease.Owner); err != nil {
		t.Fatal(err)
	}
	equal(t, "claimed after the holder's release", claimedIDs(b.claim(a.EndpointID, b.now, 10)), []string{d})
}

// testExtendLeases: ExtendLeases reports (and extends) only the deliveries
// still pending and leased to its owner.
func testExtendLeases(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	mine1 := b.deliver(a, b.now)
	mine2 := b.deliver(a, b.now)
	released := b.deliver(a, b.now)
	delivered := b.deliver(a, b.now)
	unleased := b.deliver(a, b.at(time.Hour)) // not due: never claimed
	equal(t, "claimed", sortedCopy(claimedIDs(b.claim(a.EndpointID, b.now, 10))),
		sortedCopy([]string{mine1, mine2, released, delivered}))
	if err := b.s.Release(b.ctx, []string{released}, b.lease.Owner); err != nil {
		t.Fatal(err)
	}
	b.record(succeeded(delivered, 1, b.now))
	// Leased to another owner from the start.
	ev := b.event(b.now, a)
	ev.Deliveries[0].Claimed = true
	if _, err := b.s.Publish(b.ctx, []store.NewEvent{ev}, store.PublishOptions{Lease: store.Lease{Owner: "node-b", Until: b.lease.Until}}); err != nil {
		t.Fatal(err)
	}
	others := ev.Deliveries[0].ID

	longer := store.Lease{Owner: b.lease.Owner, Until: b.lease.Until.Add(time.Hour)}
	kept, err := b.s.ExtendLeases(b.ctx, []string{mine1, released, delivered, others, unleased, "dlv_unknown", mine2}, longer)
	if err != nil {
		t.Fatalf("ExtendLeases: %v", err)
	}
	equal(t, "kept", sortedCopy(kept), sortedCopy([]string{mine1, mine2}))
	// Nothing changed hands: the kept ones are still leased (nobody claims
	// them), the released one is due, the other owner's is still its.
	equal(t, "claim after extend", claimedIDs(b.claim(a.EndpointID, b.now, 10)), []string{released})
	if kept, err := b.s.ExtendLeases(b.ctx, []string{others}, store.Lease{Owner: "node-b", Until: b.lease.Until}); err != nil || len(kept) != 1 || kept[0] != others {
		t.Fatalf("ExtendLeases by node-b = %v, %v; want [%s]", kept, err, others)
	}
	if d := b.get(delivered); d.Status != delivery.StatusDelivered {
		t.Fatalf("ExtendLeases changed a delivered delivery: %+v", d)
	}
	if kept, err := b.s.ExtendLeases(b.ctx, nil, longer); err != nil || len(kept) != 0 {
		t.Fatalf("ExtendLeases(nil) = %v, %v; want nothing", kept, err)
	}
}

// testExtendLeasesMoves: an extended lease holds until its new Until. A
// claim made after the old Until (but before the new one) gets nothing,
// whether the store's leases expire by time or not.
func testExtendLeasesMoves(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	d := b.deliver(a, b.now)
	short := store.Lease{Owner: b.lease.Owner, Until: b.at(time.Minute)}
	if got, err := b.s.ClaimDue(b.ctx, a.EndpointID, b.now, 10, short); err != nil || len(got) != 1 {
		t.Fatalf("claim = %v, %v", claimedIDs(got), err)
	}
	if kept, err := b.s.ExtendLeases(b.ctx, []string{d}, b.lease); err != nil || len(kept) != 1 || kept[0] != d {
		t.Fatalf("ExtendLeases = %v, %v; want [%s]", kept, err, d)
	}
	other := store.Lease{Owner: "node-b", Until: b.lease.Until}
	if got, err := b.s.ClaimDue(b.ctx, a.EndpointID, b.at(time.Hour), 10, other); err != nil || len(got) != 0 {
		t.Fatalf("claimed %v (err %v) past the old lease; want the extended lease to hold", claimedIDs(got), err)
	}
}
