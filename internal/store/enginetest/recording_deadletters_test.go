package enginetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// dlSub creates a push subscription to url with the dead-letter URL dlURL,
// in account.DefaultID.
func dlSub(b *bundle, url, dlURL string) subscription.Subscription {
	b.t.Helper()
	return dlSubIn(b, account.DefaultID, url, dlURL)
}

// dlSubIn creates a push subscription to url with the dead-letter URL
// dlURL, in an account.
func dlSubIn(b *bundle, account, url, dlURL string) subscription.Subscription {
	b.t.Helper()
	return b.subWith(account, url, func(s *subscription.Subscription) { s.Delivery.DeadLetterURL = dlURL })
}

// dlEndpoint is the endpoint of sub's dead-letter URL, as it is now.
func dlEndpoint(b *bundle, sub subscription.Subscription) string {
	return b.s.EndpointID(sub.AccountID, sub.Delivery.DeadLetterURL)
}

// withCopy returns o (a dead-lettered outcome) under b's lease, with the
// delivery of its dead letter to sub's dead-letter URL, as the dispatcher
// makes it.
func withCopy(b *bundle, o store.Outcome, sub subscription.Subscription) store.Outcome {
	o.LeaseOwner = b.lease.Owner
	o.DeadLetterCopy = &store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: sub.ID, EndpointID: dlEndpoint(b, sub)}
	return o
}

// deadLetter publishes an event to sub at `at`, claims its delivery and
// dead-letters it at its first attempt, started at `at`, with the delivery
// of its dead letter. It returns the event, its seq, the outcome and the
// IDs of the dead-lettered delivery and of its dead letter's.
func deadLetter(b *bundle, sub subscription.Subscription, at time.Time) (store.NewEvent, int64, store.Outcome, string, string) {
	b.t.Helper()
	ev, seq := b.claimOne(sub, at)
	id := ev.Deliveries[0].ID
	o := withCopy(b, deadLettered(id, 1, at, at.Add(time.Second)), sub)
	b.record(o)
	return ev, seq, o, id, o.DeadLetterCopy.ID
}

// attemptDue is when what follows the attempt of o is due, to the
// millisecond: its start (sqlrow.AttemptDueMS: durations are wall-clock
// time, starts the dispatcher's clock).
func attemptDue(o store.Outcome) time.Time {
	return o.Attempt.StartedAt.Truncate(time.Millisecond)
}

// noDelivery fails the test unless delivery id does not exist.
func noDelivery(b *bundle, id string) {
	b.t.Helper()
	if d, err := b.s.GetDelivery(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
		b.t.Fatalf("GetDelivery(%s) = %+v, %v; want ErrNotFound", id, d, err)
	}
}

// testDeadLetterWritten: a dead-lettered outcome with a DeadLetterCopy,
// applied under its lease, writes the delivery of the dead letter: pending
// on the dead-letter URL's endpoint, due at the attempt's end (its round
// start too), with the dead-lettered delivery's subscription, account and
// event, created at the event's publish time, DeadLetterOf its ID. It is
// claimed on that endpoint only, with its event's payload and the
// dead-lettered delivery as it ended; it is not a dead letter itself.
func testDeadLetterWritten(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	dlEp := dlEndpoint(b, a)
	if dlEp != b.s.EndpointID("", "https://dl.example/hook") || dlEp == a.EndpointID {
		t.Fatalf("dead-letter endpoint %s", dlEp)
	}
	ev, seq := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	b.record(failed(id, 1, b.now, b.at(time.Second), b.at(time.Minute)))
	equal(t, "claimed again", claimedIDs(b.claim(a.EndpointID, b.at(time.Minute), 10)), []string{id})
	o := withCopy(b, deadLettered(id, 2, b.at(time.Minute), b.at(time.Second)), a)
	b.record(o)
	copyID, end := o.DeadLetterCopy.ID, attemptDue(o)

	dead := b.get(id)
	if dead.Status != delivery.StatusDeadLettered || dead.DeadLetterReason != "NonRetriableStatus" || dead.Attempts != 2 ||
		dead.LastOutcome != "http_400" || dead.LastStatusCode != 400 || !dead.LastAttemptAt.Equal(b.at(time.Minute)) ||
		dead.DeadLetterOf != "" || dead.EndpointID != a.EndpointID {
		t.Fatalf("dead-lettered delivery: %+v", dead)
	}
	want := pendingDelivery(ev, 0, seq)
	want.ID, want.EndpointID, want.DeadLetterOf = copyID, dlEp, id
	want.RoundStart, want.NextAttemptAt = end, end
	equal(t, "the dead letter's delivery", b.get(copyID), want)
	if want.CreatedAt != ev.PublishedAt || end.Equal(ev.PublishedAt) {
		t.Fatalf("test setup: created %v, due %v", want.CreatedAt, end)
	}

	// Due on the dead-letter endpoint, in the fresh lane.
	if at, ok, err := b.s.NextDue(b.ctx, dlEp); err != nil || !ok || !at.Equal(end) {
		t.Fatalf("NextDue(dead-letter endpoint) = %v, %v, %v; want %v", at, ok, err, end)
	}
	if _, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || ok {
		t.Fatalf("NextDue(the subscription's endpoint) = %v, %v; want nothing due", ok, err)
	}
	due, err := b.s.DueEndpoints(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "due endpoints", due, []store.EndpointDue{{EndpointID: dlEp, NextDue: end}})
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != 1 || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want 1 fresh", fresh, retry, err)
	}
	if got := b.claim(a.EndpointID, b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed on the subscription's endpoint: %v", claimedIDs(got))
	}
	if got := b.claim(dlEp, end.Add(-time.Millisecond), 10); len(got) != 0 {
		t.Fatalf("claimed before its due time: %v", claimedIDs(got))
	}
	got := b.claim(dlEp, end, 10)
	equal(t, "claimed", got, []store.Claimed{{Delivery: want, Payload: ev.Payload, DeadLetter: &dead}})

	// Lists: a delivery of the subscription (the newest), not a dead letter.
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{SubscriptionID: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "the subscription's deliveries", deliveryIDs(ds), []string{copyID, id})
	equal(t, "the dead letter's delivery listed", ds[0], want)
	dls, _, err := b.s.ListDeadLetters(b.ctx, store.DeadLetterFilter{SubscriptionID: a.ID})
	if err != nil || len(dls) != 1 || dls[0].ID != id {
		t.Fatalf("ListDeadLetters = %+v, %v; want only %s", dls, err, id)
	}

	// It is recorded like any delivery; the dead-lettered one stays as it is.
	s := succeeded(copyID, 1, end)
	s.LeaseOwner = b.lease.Owner
	b.record(s)
	if d := b.get(copyID); d.Status != delivery.StatusDelivered || d.DeadLetterOf != id || d.EndpointID != dlEp {
		t.Fatalf("the dead letter's delivery after its success: %+v", d)
	}
	equal(t, "the dead-lettered delivery after its dead letter's success", b.get(id), dead)
	equal(t, "its attempts", attempts(t, b, copyID), []delivery.Attempt{s.Attempt})
}

// testDeadLetterNoAttempt: an outcome that made no attempt (the delivery
// expired while held) carries the previous attempt's start: the dead
// letter is due then; with none before, at the event's publish time.
func testDeadLetterNoAttempt(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	expired := func(id string, last time.Time, attempts int) store.Outcome {
		return withCopy(b, store.Outcome{
			Attempt: delivery.Attempt{DeliveryID: id, StartedAt: last},
			Status:  delivery.StatusDeadLettered, Attempts: attempts, RoundAttempts: attempts,
			DeadLetterReason: "TimeToLiveExceeded",
		}, a)
	}
	// Never attempted.
	ev, _ := b.claimOne(a, b.at(time.Second))
	o := expired(ev.Deliveries[0].ID, time.Time{}, 0)
	b.record(o)
	if d := b.get(o.DeadLetterCopy.ID); !d.RoundStart.Equal(ev.PublishedAt) || !d.NextAttemptAt.Equal(ev.PublishedAt) ||
		d.DeadLetterOf != ev.Deliveries[0].ID || d.Status != delivery.StatusPending {
		t.Fatalf("dead letter of a delivery never attempted: %+v; want due at its publish time %v", d, ev.PublishedAt)
	}
	// Attempted before.
	id := b.retrying(a, b.now, b.at(time.Minute))
	if got := claimedIDs(b.claim(a.EndpointID, b.at(time.Minute), 10)); !slices.Contains(got, id) {
		t.Fatalf("claimed %v; want %s among them", got, id)
	}
	o = expired(id, b.now, 1)
	b.record(o)
	if d := b.get(o.DeadLetterCopy.ID); !d.RoundStart.Equal(b.now) || !d.NextAttemptAt.Equal(b.now) || d.DeadLetterOf != id {
		t.Fatalf("dead letter of a delivery that expired after an attempt: %+v; want due at that attempt's start %v", d, b.now)
	}
	if got := b.get(id); !got.LastAttemptAt.Equal(b.now) || got.Status != delivery.StatusDeadLettered {
		t.Fatalf("the expired delivery: %+v", got)
	}
}

// testDeadLetterNotWritten: the delivery of a dead letter is written only
// with the dead-lettered state it comes with: not when the lease guard
// fails, when the delivery is no longer pending, or with an outcome of
// another status.
func testDeadLetterNotWritten(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	// Another owner's lease.
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	o := withCopy(b, deadLettered(id, 1, b.now, b.now), a)
	o.LeaseOwner = "node-b"
	b.record(o)
	if d := b.get(id); d.Status != delivery.StatusPending {
		t.Fatalf("state written under another owner's lease: %+v", d)
	}
	noDelivery(b, o.DeadLetterCopy.ID)
	// Finished already.
	b.record(succeeded(id, 2, b.at(time.Second)))
	o = withCopy(b, deadLettered(id, 3, b.at(2*time.Second), b.now), a)
	o.LeaseOwner = ""
	b.record(o)
	if d := b.get(id); d.Status != delivery.StatusDelivered {
		t.Fatalf("a delivered delivery changed: %+v", d)
	}
	noDelivery(b, o.DeadLetterCopy.ID)
	// Another status: the copy is ignored.
	ev, _ = b.claimOne(a, b.now)
	id = ev.Deliveries[0].ID
	o = withCopy(b, failed(id, 1, b.now, b.at(time.Second), b.at(time.Minute)), a)
	b.record(o)
	noDelivery(b, o.DeadLetterCopy.ID)
	if d := b.get(id); d.Status != delivery.StatusPending || d.Attempts != 1 {
		t.Fatalf("retry not recorded: %+v", d)
	}
	// A delivery that does not exist.
	o = withCopy(b, deadLettered("dlv_unknown", 1, b.now, b.now), a)
	b.record(o)
	noDelivery(b, o.DeadLetterCopy.ID)
	if _, ok, err := b.s.NextDue(b.ctx, dlEndpoint(b, a)); err != nil || ok {
		t.Fatalf("NextDue(dead-letter endpoint) = %v, %v; want nothing due", ok, err)
	}
}

// testDeadLetterFollowsSubscription: the dead letter goes to the
// dead-letter URL its subscription names when the outcome is recorded: a
// subscription that names none gets none, one that changed its URL since
// the outcome was made gets it on the new URL's endpoint.
func testDeadLetterFollowsSubscription(t *testing.T, b *bundle) {
	plain := b.sub("https://plain.example/hook")
	ev, _ := b.claimOne(plain, b.now)
	o := deadLettered(ev.Deliveries[0].ID, 1, b.now, b.now)
	o.LeaseOwner = b.lease.Owner
	o.DeadLetterCopy = &store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: plain.ID,
		EndpointID: b.s.EndpointID("", "https://dl.example/hook")}
	b.record(o)
	if d := b.get(ev.Deliveries[0].ID); d.Status != delivery.StatusDeadLettered {
		t.Fatalf("dead-lettered delivery: %+v", d)
	}
	noDelivery(b, o.DeadLetterCopy.ID)

	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	ev, _ = b.claimOne(a, b.now)
	o = withCopy(b, deadLettered(ev.Deliveries[0].ID, 1, b.now, b.now), a) // made with the old URL
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(time.Second)
	updateSub(b, a)
	b.record(o)
	if d := b.get(o.DeadLetterCopy.ID); d.EndpointID != dlEndpoint(b, a) || d.DeadLetterOf != ev.Deliveries[0].ID {
		t.Fatalf("dead letter recorded after its URL changed: %+v; want it on %s", d, dlEndpoint(b, a))
	}
}

// testDeadLetterKeepsEvent: an event whose dead letter is still to be
// delivered is not cleaned up; once it is, the event goes with both
// deliveries.
func testDeadLetterKeepsEvent(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	_, seq, o, id, copyID := deadLetter(b, a, b.now)
	before := b.at(time.Hour)
	if n, err := b.s.Cleanup(b.ctx, before, 100); err != nil || n != 0 {
		t.Fatalf("Cleanup with a dead letter pending = %d, %v; want 0", n, err)
	}
	if _, err := b.s.GetEvent(b.ctx, seq); err != nil {
		t.Fatalf("event of a pending dead letter: %v", err)
	}
	b.get(id)
	end := attemptDue(o)
	equal(t, "claimed", claimedIDs(b.claim(dlEndpoint(b, a), end, 10)), []string{copyID})
	s := succeeded(copyID, 1, end)
	s.LeaseOwner = b.lease.Owner
	b.record(s)
	if n, err := b.s.Cleanup(b.ctx, before, 100); err != nil || n != 1 {
		t.Fatalf("Cleanup once the dead letter was delivered = %d, %v; want 1", n, err)
	}
	noDelivery(b, id)
	noDelivery(b, copyID)
}
