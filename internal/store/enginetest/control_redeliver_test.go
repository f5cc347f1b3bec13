package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

func testRedeliverDeadLettered(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	id := b.deadAfterTwo(a, b.now)
	before := b.get(id)
	now := b.at(time.Hour)
	got, err := b.s.Redeliver(b.ctx, id, now)
	if err != nil {
		t.Fatal(err)
	}
	want := before
	want.Status = delivery.StatusPending
	want.RoundAttempts = 0
	want.RoundStart = now
	want.FirstFailure = time.Time{}
	want.NextAttemptAt = now
	want.DeadLetterReason = ""
	equal(t, "redelivered", got, want)
	equal(t, "stored", b.get(id), want)
	if got.Attempts != 2 || got.LastStatusCode != 400 {
		t.Fatalf("lifetime attempts and last outcome must stay: %+v", got)
	}
	if c := b.claim(a.EndpointID, now.Add(-time.Millisecond), 10); len(c) != 0 {
		t.Fatalf("due before now: %v", claimedIDs(c))
	}
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, now, 10)), []string{id})
}

func testRedeliverDelivered(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	b.record(succeeded(id, 1, b.at(time.Second)))
	now := b.at(time.Hour)
	got, err := b.s.Redeliver(b.ctx, id, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusPending || !got.NextAttemptAt.Equal(now) || !got.RoundStart.Equal(now) ||
		got.RoundAttempts != 0 || got.Attempts != 1 || !got.DeliveredAt.IsZero() {
		t.Fatalf("redelivered %+v", got)
	}
	// A pending, unleased delivery may be redelivered too: a new budget.
	later := b.at(2 * time.Hour)
	got, err = b.s.Redeliver(b.ctx, id, later)
	if err != nil || !got.RoundStart.Equal(later) || !got.NextAttemptAt.Equal(later) {
		t.Fatalf("redeliver pending = %+v, %v", got, err)
	}
}

func testRedeliverConflict(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	before := b.get(id)
	if _, err := b.s.Redeliver(b.ctx, id, b.at(time.Hour)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Redeliver(leased) = %v, want ErrConflict", err)
	}
	equal(t, "unchanged", b.get(id), before)
	// Once the attempt is recorded it may be redelivered.
	b.record(failed(id, 1, b.now, b.at(time.Second), b.at(time.Minute)))
	if _, err := b.s.Redeliver(b.ctx, id, b.at(time.Hour)); err != nil {
		t.Fatalf("Redeliver after Record: %v", err)
	}
}

func testRedeliverNotFound(t *testing.T, b *bundle) {
	if _, err := b.s.Redeliver(b.ctx, "dlv_unknown", b.now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Redeliver(unknown) = %v, want ErrNotFound", err)
	}
}

func testRedriveAll(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	d1 := b.deadAfterTwo(a, b.now)
	d2 := b.deadAfterTwo(a, b.at(time.Second))
	d3 := b.deadAfterTwo(a, b.at(2*time.Second))
	other := b.deadAfterTwo(c, b.now)
	ok, _ := b.claimOne(a, b.now)
	delivered := ok.Deliveries[0].ID
	b.record(succeeded(delivered, 1, b.now))
	pending := b.deliver(a, b.now)

	now := b.at(time.Hour)
	res, err := b.s.Redrive(b.ctx, a.ID, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "redrive result", res, store.RedriveResult{Count: 3, Endpoints: []string{a.EndpointID}})
	for _, id := range []string{d1, d2, d3} {
		d := b.get(id)
		if d.Status != delivery.StatusPending || !d.NextAttemptAt.Equal(now) || !d.RoundStart.Equal(now) ||
			d.RoundAttempts != 0 || !d.FirstFailure.IsZero() || d.Attempts != 2 || d.DeadLetterReason != "" {
			t.Fatalf("redriven %+v", d)
		}
	}
	if d := b.get(other); d.Status != delivery.StatusDeadLettered {
		t.Fatalf("other subscription's dead letter moved: %+v", d)
	}
	if d := b.get(delivered); d.Status != delivery.StatusDelivered {
		t.Fatalf("delivered moved: %+v", d)
	}
	if d := b.get(pending); !d.NextAttemptAt.Equal(b.now) {
		t.Fatalf("pending moved: %+v", d)
	}
	got := b.claim(a.EndpointID, now, 10)
	equal(t, "claimed", sortedCopy(claimedIDs(got)), sortedCopy([]string{pending, d1, d2, d3}))
	res, err = b.s.Redrive(b.ctx, a.ID, nil, now)
	if err != nil || res.Count != 0 || len(res.Endpoints) != 0 {
		t.Fatalf("second redrive = %+v, %v; want nothing moved", res, err)
	}
}

func testRedriveIDs(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	d1 := b.deadAfterTwo(a, b.now)
	d2 := b.deadAfterTwo(a, b.now)
	other := b.deadAfterTwo(c, b.now)
	pending := b.deliver(a, b.now)
	now := b.at(time.Hour)
	res, err := b.s.Redrive(b.ctx, a.ID, []string{d2, other, pending, "dlv_unknown"}, now)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "redrive result", res, store.RedriveResult{Count: 1, Endpoints: []string{a.EndpointID}})
	if d := b.get(d2); d.Status != delivery.StatusPending || !d.NextAttemptAt.Equal(now) {
		t.Fatalf("redriven %+v", d)
	}
	for _, id := range []string{d1, other} {
		if d := b.get(id); d.Status != delivery.StatusDeadLettered {
			t.Fatalf("%s moved: %+v", id, d)
		}
	}
	if d := b.get(pending); !d.RoundStart.Equal(b.now) {
		t.Fatalf("pending moved: %+v", d)
	}
}

func testRedriveUnknown(t *testing.T, b *bundle) {
	if _, err := b.s.Redrive(b.ctx, "sub_unknown", nil, b.now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Redrive(unknown subscription) = %v, want ErrNotFound", err)
	}
}

// testRedriveMovedSubscription: Redrive names the endpoint of the
// deliveries it moved once. Dead letters made before their subscription
// moved to another URL keep their endpoint while dead, and go to the new
// URL's when redriven, as Redeliver sends them. An ID given twice counts
// once.
func testRedriveMovedSubscription(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	epA := a.EndpointID
	var onA, onB []string
	for range 5 {
		onA = append(onA, b.deadAfterTwo(a, b.now))
	}
	a.URL, a.EndpointID, a.UpdatedAt = "https://b.example/hook", b.s.EndpointID("", "https://b.example/hook"), b.at(time.Second)
	if err := b.s.UpdateSubscription(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	epB := a.EndpointID
	for range 5 {
		onB = append(onB, b.deadAfterTwo(a, b.now))
	}
	for _, id := range onA {
		if d := b.get(id); d.EndpointID != epA {
			t.Fatalf("dead letter %s moved to %s with its subscription; want it kept on %s", id, d.EndpointID, epA)
		}
	}
	now := b.at(time.Hour)
	redrive := func(ids []string) store.RedriveResult {
		t.Helper()
		res, err := b.s.Redrive(b.ctx, a.ID, ids, now)
		if err != nil {
			t.Fatalf("Redrive(%v): %v", ids, err)
		}
		return res
	}
	equal(t, "redrive A, B", redrive([]string{onA[0], "dlv_unknown", onB[0], onA[0], onA[1], onB[0]}),
		store.RedriveResult{Count: 3, Endpoints: []string{epB}})
	equal(t, "redrive all", redrive(nil), store.RedriveResult{Count: 7, Endpoints: []string{epB}})
	if res := redrive(append(onA, onB...)); res.Count != 0 || len(res.Endpoints) != 0 {
		t.Fatalf("redrive again = %+v; want nothing moved", res)
	}
	for _, id := range append(onA, onB...) {
		if d := b.get(id); d.Status != delivery.StatusPending || !d.NextAttemptAt.Equal(now) || d.EndpointID != epB {
			t.Fatalf("redriven %+v", d)
		}
	}
	if got := b.claim(epA, now, 10); len(got) != 0 {
		t.Fatalf("claimed %v on the old endpoint", claimedIDs(got))
	}
	equal(t, "claimed on "+epB, sortedCopy(claimedIDs(b.claim(epB, now, 20))), sortedCopy(append(onA, onB...)))
}

func testRedeliverDeletedSubscription(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	dead := b.deadAfterTwo(a, b.now)
	pending := b.deliver(a, b.now)
	if err := b.s.DeleteSubscription(b.ctx, a.ID, b.now); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{dead, pending} {
		before := b.get(id)
		if _, err := b.s.Redeliver(b.ctx, id, b.at(time.Minute)); !errors.Is(err, store.ErrSubscriptionDeleted) {
			t.Fatalf("Redeliver(%s) of a deleted subscription: %v; want ErrSubscriptionDeleted", id, err)
		}
		equal(t, "delivery after a refused Redeliver", b.get(id), before)
	}
	if _, err := b.s.Redrive(b.ctx, a.ID, nil, b.at(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Redrive of a deleted subscription: %v; want ErrNotFound", err)
	}
	if d := b.get(dead); d.Status != delivery.StatusDeadLettered {
		t.Fatalf("dead letter after a refused Redrive: %s", d.Status)
	}
}

// testRedriveIDsAlone: RedriveIDs moves the account's dead letters among
// the ids, of any of its subscriptions, each endpoint named once in the
// order of ids; it ignores another account's dead letters, deliveries
// that are not dead-lettered, unknown ids and the dead letters of a
// deleted subscription; an ID given twice counts once.
func testRedriveIDsAlone(t *testing.T, b *bundle) {
	acc := b.account("other")
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	x := b.subIn(acc.ID, "https://a.example/hook")
	gone := b.sub("https://gone.example/hook")
	onA, onC := b.deadAfterTwo(a, b.now), b.deadAfterTwo(c, b.now)
	leftOnA := b.deadAfterTwo(a, b.now)
	theirs := b.deadAfterTwo(x, b.now)
	ofGone := b.deadAfterTwo(gone, b.now)
	pending := b.deliver(a, b.now)
	if err := b.s.DeleteSubscription(b.ctx, gone.ID, b.now); err != nil {
		t.Fatal(err)
	}
	before := map[string]delivery.Delivery{}
	for _, id := range []string{leftOnA, theirs, ofGone, pending} {
		before[id] = b.get(id)
	}
	now := b.at(time.Hour)
	ids := []string{onC, theirs, onA, pending, ofGone, "dlv_unknown", onC}
	res, err := b.s.RedriveIDs(b.ctx, "", ids, now)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "redrive result", res, store.RedriveResult{Count: 2, Endpoints: []string{c.EndpointID, a.EndpointID}})
	for _, id := range []string{onA, onC} {
		if d := b.get(id); d.Status != delivery.StatusPending || !d.NextAttemptAt.Equal(now) || d.Attempts != 2 {
			t.Fatalf("redriven %+v", d)
		}
	}
	for id, d := range before {
		equal(t, "delivery "+id+" after RedriveIDs", b.get(id), d)
	}
	// In the other account, its own.
	res, err = b.s.RedriveIDs(b.ctx, acc.ID, []string{leftOnA, theirs}, now)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "the other account's redrive", res, store.RedriveResult{Count: 1, Endpoints: []string{x.EndpointID}})
	if d := b.get(leftOnA); d.Status != delivery.StatusDeadLettered {
		t.Fatalf("the default account's dead letter moved in another account's redrive: %+v", d)
	}
}
