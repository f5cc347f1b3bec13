package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

func attempts(t *testing.T, b *bundle, id string) []delivery.Attempt {
	t.Helper()
	as, next, err := b.s.ListAttempts(b.ctx, id, store.Page{Limit: 1000})
	if err != nil || next != "" {
		t.Fatalf("ListAttempts(%s) = next %q, %v", id, next, err)
	}
	return as
}

func testRecordSuccess(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, seq := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	o := succeeded(id, 1, b.at(time.Second))
	b.record(o)

	want := pendingDelivery(ev, 0, seq)
	want.Status = delivery.StatusDelivered
	want.Attempts, want.RoundAttempts = 1, 1
	want.LastAttemptAt = b.at(time.Second)
	want.LastStatusCode, want.LastOutcome = 200, "http_200"
	want.DeliveredAt = b.at(time.Second + 1234*time.Millisecond)
	want.NextAttemptAt = time.Time{}
	got := b.get(id)
	want.NextAttemptAt = got.NextAttemptAt // not meaningful once finished
	equal(t, "delivery", got, want)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{o.Attempt})
	if _, ok, _ := b.s.NextDue(b.ctx, a.EndpointID); ok {
		t.Fatal("a delivered delivery is still due")
	}
}

func testRecordRetry(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, seq := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	o1 := failed(id, 1, b.at(time.Second), b.at(3*time.Second), b.at(time.Minute))
	b.record(o1)

	want := pendingDelivery(ev, 0, seq)
	want.Attempts, want.RoundAttempts = 1, 1
	want.FirstFailure = b.at(3 * time.Second)
	want.NextAttemptAt = b.at(time.Minute)
	want.LastAttemptAt = b.at(time.Second)
	want.LastStatusCode, want.LastOutcome = 503, "http_503"
	equal(t, "after attempt 1", b.get(id), want)
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != 0 || retry != 1 {
		t.Fatalf("CountPending = %d, %d, %v; want 0, 1", fresh, retry, err)
	}
	// The lease is gone: due again at the retry time, not before.
	if got := b.claim(a.EndpointID, b.at(time.Minute-time.Millisecond), 10); len(got) != 0 {
		t.Fatalf("claimed before the retry time: %v", claimedIDs(got))
	}
	equal(t, "claimed at retry time", claimedIDs(b.claim(a.EndpointID, b.at(time.Minute), 10)), []string{id})

	o2 := failed(id, 2, b.at(time.Minute), b.at(3*time.Second), b.at(10*time.Minute))
	o2.Attempt.StatusCode, o2.Attempt.Outcome, o2.Attempt.Error, o2.Attempt.ResponseBody = 0, "timeout", "context deadline exceeded", nil
	o2.LastStatusCode, o2.LastOutcome = 0, "timeout"
	b.record(o2)
	want.Attempts, want.RoundAttempts = 2, 2
	want.NextAttemptAt = b.at(10 * time.Minute)
	want.LastAttemptAt = b.at(time.Minute)
	want.LastStatusCode, want.LastOutcome = 0, "timeout"
	equal(t, "after attempt 2", b.get(id), want)

	got := attempts(t, b, id)
	if len(got) != 2 || len(got[1].ResponseBody) != 0 {
		t.Fatalf("attempt log %+v", got)
	}
	got[1].ResponseBody = nil
	equal(t, "attempt log", got, []delivery.Attempt{o1.Attempt, o2.Attempt})
}

func testRecordDeadLetter(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, seq := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	o := deadLettered(id, 1, b.at(time.Second), b.at(2*time.Second))
	b.record(o)
	want := pendingDelivery(ev, 0, seq)
	want.Status = delivery.StatusDeadLettered
	want.Attempts, want.RoundAttempts = 1, 1
	want.FirstFailure = b.at(2 * time.Second)
	want.LastAttemptAt = b.at(time.Second)
	want.LastStatusCode, want.LastOutcome = 400, "http_400"
	want.DeadLetterReason = "NonRetriableStatus"
	got := b.get(id)
	want.NextAttemptAt = got.NextAttemptAt
	equal(t, "delivery", got, want)

	dls, next, err := b.s.ListDeadLetters(b.ctx, store.DeadLetterFilter{SubscriptionID: a.ID})
	if err != nil || next != "" {
		t.Fatalf("ListDeadLetters: next %q, %v", next, err)
	}
	equal(t, "dead letters", dls, []store.DeadLetter{{Delivery: want, Event: store.StoredEvent{
		Seq: seq, AccountID: account.DefaultID, ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject,
		Payload: ev.Payload, PublishedAt: ev.PublishedAt,
	}}})
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh+retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want 0, 0", fresh, retry, err)
	}
}

func testRecordDropped(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	if err := b.s.DeleteSubscription(b.ctx, a.ID, b.at(time.Second)); err != nil {
		t.Fatal(err)
	}
	before := b.get(id)
	if before.Status != delivery.StatusDropped || before.DeadLetterReason != delivery.ReasonSubscriptionDeleted {
		t.Fatalf("after delete: %+v", before)
	}
	o := succeeded(id, 1, b.at(2*time.Second))
	b.record(o)
	equal(t, "dropped delivery after Record", b.get(id), before)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{o.Attempt})
}

func testRecordReplace(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	first := failed(id, 1, b.at(time.Second), b.at(2*time.Second), b.at(time.Minute))
	b.record(first)
	b.claim(a.EndpointID, b.at(time.Minute), 1)
	again := succeeded(id, 1, b.at(time.Minute))
	b.record(again)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{again.Attempt})
	if d := b.get(id); d.Status != delivery.StatusDelivered || d.Attempts != 1 {
		t.Fatalf("delivery %+v", d)
	}
}

func testRecordMany(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	var ids []string
	for i := 0; i < 3; i++ {
		ev, _ := b.claimOne(a, b.now)
		ids = append(ids, ev.Deliveries[0].ID)
	}
	b.record(
		succeeded(ids[0], 1, b.at(time.Second)),
		failed(ids[1], 1, b.at(time.Second), b.at(2*time.Second), b.at(time.Minute)),
		deadLettered(ids[2], 1, b.at(time.Second), b.at(2*time.Second)),
	)
	for i, want := range []delivery.Status{delivery.StatusDelivered, delivery.StatusPending, delivery.StatusDeadLettered} {
		if got := b.get(ids[i]).Status; got != want {
			t.Fatalf("delivery %d: status %s, want %s", i, got, want)
		}
		if n := len(attempts(t, b, ids[i])); n != 1 {
			t.Fatalf("delivery %d: %d attempts logged, want 1", i, n)
		}
	}
	if _, err := b.s.Record(b.ctx, nil); err != nil {
		t.Fatalf("Record(nil): %v", err)
	}
	if _, _, err := b.s.ListAttempts(b.ctx, "dlv_unknown", store.Page{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ListAttempts(unknown) = %v, want ErrNotFound", err)
	}
}

// testRecordStaleOwner: an outcome whose LeaseOwner no longer holds the
// delivery's lease logs its attempt and leaves the state alone; the owner's
// own outcome is applied, and an empty LeaseOwner applies to any pending
// delivery.
func testRecordStaleOwner(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, seq := b.claimOne(a, b.now) // leased to node-a by Publish
	id := ev.Deliveries[0].ID
	before := b.get(id)

	stale := succeeded(id, 1, b.at(time.Second))
	stale.LeaseOwner = "node-b"
	equal(t, "a stale owner's outcome applied", b.record(stale), []bool{false})
	equal(t, "delivery after a stale owner's Record", b.get(id), before)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{stale.Attempt})
	// Still leased: no claimer gets it.
	if got := b.claim(a.EndpointID, b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("a stale owner's Record released the lease: claimed %v", claimedIDs(got))
	}

	own := failed(id, 2, b.at(time.Minute), b.at(time.Minute+time.Second), b.at(2*time.Minute))
	own.LeaseOwner = b.lease.Owner
	equal(t, "the owner's outcome applied", b.record(own), []bool{true})
	want := pendingDelivery(ev, 0, seq)
	want.Attempts, want.RoundAttempts = 2, 2
	want.FirstFailure = b.at(time.Minute + time.Second)
	want.NextAttemptAt = b.at(2 * time.Minute)
	want.LastAttemptAt = b.at(time.Minute)
	want.LastStatusCode, want.LastOutcome = 503, "http_503"
	equal(t, "delivery after the owner's Record", b.get(id), want)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{stale.Attempt, own.Attempt})

	// Claimed again by ClaimDue: the same guard holds for that lease.
	equal(t, "claimed", claimedIDs(b.claim(a.EndpointID, b.at(2*time.Minute), 10)), []string{id})
	stale = succeeded(id, 3, b.at(2*time.Minute))
	stale.LeaseOwner = "node-b"
	b.record(stale)
	if d := b.get(id); d.Status != delivery.StatusPending || d.Attempts != 2 {
		t.Fatalf("stale owner changed the state: %+v", d)
	}
	own = succeeded(id, 3, b.at(2*time.Minute))
	own.LeaseOwner = b.lease.Owner
	b.record(own)
	if d := b.get(id); d.Status != delivery.StatusDelivered || d.Attempts != 3 {
		t.Fatalf("owner's success not applied: %+v", d)
	}
	if n := len(attempts(t, b, id)); n != 3 {
		t.Fatalf("%d attempts logged, want 3 (the newest report of attempt 3 replaces the stale one)", n)
	}

	// Without LeaseOwner any pending delivery is updated, leased or not.
	ev2, _ := b.claimOne(a, b.now)
	id2 := ev2.Deliveries[0].ID
	b.record(succeeded(id2, 1, b.at(time.Second)))
	if d := b.get(id2); d.Status != delivery.StatusDelivered {
		t.Fatalf("Record without LeaseOwner not applied: %+v", d)
	}
}

// testRecordOwnerReleased: once the lease is released the former owner no
// longer holds it, so its outcome only logs the attempt.
func testRecordOwnerReleased(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	if err := b.s.Release(b.ctx, []string{id}, b.lease.Owner); err != nil {
		t.Fatal(err)
	}
	before := b.get(id)
	o := succeeded(id, 1, b.at(time.Second))
	o.LeaseOwner = b.lease.Owner
	b.record(o)
	equal(t, "released delivery after Record", b.get(id), before)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{o.Attempt})
	equal(t, "still due", claimedIDs(b.claim(a.EndpointID, b.now, 10)), []string{id})
}

// testRecordSameDeliveryTwice: outcomes for one delivery in one call are
// applied in order, as if recorded one call each: a later outcome sees the
// state (and the cleared lease) an earlier one left. An outcome for a
// delivery that does not exist is skipped. Record reports which applied.
func testRecordSameDeliveryTwice(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, seq := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	other, _ := b.claimOne(a, b.now)
	oid := other.Deliveries[0].ID
	guarded, _ := b.claimOne(a, b.now)
	gid := guarded.Deliveries[0].ID

	fail := failed(id, 1, b.now, b.at(time.Second), b.at(time.Minute))
	ok := succeeded(id, 2, b.at(time.Minute))
	ok.FirstFailure = b.at(time.Second)
	late := failed(id, 3, b.at(2*time.Minute), b.at(time.Second), b.at(3*time.Minute)) // delivered by then: only logged
	// The owner's first outcome clears its lease, so its second one, guarded
	// by that lease, no longer applies.
	gFail := failed(gid, 1, b.now, b.at(time.Second), b.at(time.Minute))
	gFail.LeaseOwner = b.lease.Owner
	gOK := succeeded(gid, 2, b.at(time.Minute))
	gOK.LeaseOwner = b.lease.Owner
	applied := b.record(fail, gFail, succeeded(oid, 1, b.now), ok, succeeded("dlv_gone", 1, b.now), gOK, late)
	equal(t, "applied", applied, []bool{true, true, true, true, false, false, false})

	want := pendingDelivery(ev, 0, seq)
	want.Status = delivery.StatusDelivered
	want.Attempts, want.RoundAttempts = 2, 2
	want.FirstFailure = b.at(time.Second)
	want.LastAttemptAt = b.at(time.Minute)
	want.LastStatusCode, want.LastOutcome = 200, "http_200"
	want.DeliveredAt = ok.DeliveredAt
	got := b.get(id)
	want.NextAttemptAt = got.NextAttemptAt // not meaningful once finished
	equal(t, "delivery", got, want)
	equal(t, "attempt log", attempts(t, b, id), []delivery.Attempt{fail.Attempt, ok.Attempt, late.Attempt})

	if d := b.get(oid); d.Status != delivery.StatusDelivered {
		t.Fatalf("the other delivery: %+v", d)
	}
	if d := b.get(gid); d.Status != delivery.StatusPending || d.Attempts != 1 || !d.NextAttemptAt.Equal(b.at(time.Minute)) {
		t.Fatalf("guarded delivery %+v; want its first outcome only (the second's lease was gone)", d)
	}
	equal(t, "guarded attempt log", attempts(t, b, gid), []delivery.Attempt{gFail.Attempt, gOK.Attempt})
	if _, _, err := b.s.ListAttempts(b.ctx, "dlv_gone", store.Page{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ListAttempts(dlv_gone) = %v, want ErrNotFound", err)
	}
}

// testRecordManyMixed: a call of more outcomes than one statement takes
// (the SQLite store writes the plain ones up to 32 a statement), with
// among them outcomes whose state change does not apply (a stale lease
// owner, a delivery already finished), one for a delivery that does not
// exist and a queued one: each is applied or logged as it would be on its
// own, and Record reports which applied.
func testRecordManyMixed(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	const n = 70
	var evs []store.NewEvent
	var seqs []int64
	for range n {
		ev, seq := b.claimOne(a, b.now)
		evs, seqs = append(evs, ev), append(seqs, seq)
	}
	id := func(i int) string { return evs[i].Deliveries[0].ID }
	const stale, retried, finished, queued = 5, 20, 30, 45
	b.record(succeeded(id(finished), 1, b.now)) // finished before the call
	var outs []store.Outcome
	var wantApplied []bool
	for i := range n {
		o := succeeded(id(i), 2, b.at(time.Second))
		o.LeaseOwner = b.lease.Owner
		switch i {
		case stale:
			o.LeaseOwner = "node-b"
		case retried:
			o = failed(id(i), 1, b.at(time.Second), b.at(2*time.Second), b.at(time.Minute))
			o.LeaseOwner = b.lease.Owner
		case queued:
			o = failed(id(i), 1, b.at(time.Second), b.at(2*time.Second), b.at(time.Minute))
			o.Status = delivery.StatusQueued
		}
		if i == 10 {
			outs = append(outs, succeeded("dlv_gone", 1, b.now))
			wantApplied = append(wantApplied, false)
		}
		outs = append(outs, o)
		wantApplied = append(wantApplied, i != stale && i != finished)
	}
	equal(t, "applied", b.record(outs...), wantApplied)

	for i := range n {
		d := b.get(id(i))
		var want delivery.Status
		switch i {
		case stale:
			want = delivery.StatusPending
			equal(t, "the stale owner's delivery", d, pendingDelivery(evs[i], 0, seqs[i]))
		case retried:
			want = delivery.StatusPending
			if d.Attempts != 1 || !d.NextAttemptAt.Equal(b.at(time.Minute)) || d.LastStatusCode != 503 {
				t.Errorf("the retried delivery: %+v", d)
			}
		case queued:
			want = delivery.StatusQueued
		case finished:
			want = delivery.StatusDelivered
			if d.Attempts != 1 {
				t.Errorf("the delivery finished before the call was changed by it: %+v", d)
			}
		default:
			want = delivery.StatusDelivered
			if d.Attempts != 2 || d.LastStatusCode != 200 {
				t.Errorf("delivery %d: %+v", i, d)
			}
		}
		if d.Status != want {
			t.Errorf("delivery %d: status %s, want %s", i, d.Status, want)
		}
		logged := 1
		if i == finished {
			logged = 2
		}
		if got := len(attempts(t, b, id(i))); got != logged {
			t.Errorf("delivery %d: %d attempts logged, want %d", i, got, logged)
		}
	}
	if _, _, err := b.s.ListAttempts(b.ctx, "dlv_gone", store.Page{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ListAttempts(dlv_gone) = %v, want ErrNotFound", err)
	}
}

// testRecordInvalid: a call with an outcome that has no delivery ID or an
// invalid status fails, and writes nothing, not even its valid outcomes.
func testRecordInvalid(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	before := b.get(id)
	valid := succeeded(id, 1, b.now)
	noID := succeeded("", 1, b.now)
	bogus := succeeded(id, 2, b.now)
	bogus.Status = "bogus"
	empty := failed(id, 2, b.now, b.now, b.at(time.Minute))
	empty.Status = ""
	for name, bad := range map[string]store.Outcome{"no delivery ID": noID, "invalid status": bogus, "empty status": empty} {
		for _, outs := range [][]store.Outcome{{valid, bad}, {bad, valid}, {bad}} {
			if _, err := b.s.Record(b.ctx, outs); err == nil {
				t.Fatalf("Record with an outcome with %s (%d outcomes) succeeded", name, len(outs))
			}
			equal(t, "delivery after a refused Record", b.get(id), before)
			if as := attempts(t, b, id); len(as) != 0 {
				t.Fatalf("a refused Record (%s) logged %+v", name, as)
			}
		}
	}
	// Still leased, and a valid call applies.
	if got := b.claim(a.EndpointID, b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("a refused Record released the lease: claimed %v", claimedIDs(got))
	}
	b.record(valid)
	if d := b.get(id); d.Status != delivery.StatusDelivered {
		t.Fatalf("after a valid Record: %+v", d)
	}
}
