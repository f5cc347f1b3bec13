package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// The delivery of dead letters to a subscription's dead-letter URL
// (subscription.DeliveryOptions.DeadLetterURL): Record writes it with the
// dead-lettering outcome (Outcome.DeadLetterCopy), ClaimDue hands it out
// with the dead-lettered delivery (Claimed.DeadLetter), and the
// dead-letter URL's endpoint row lives while a subscription names it.
var deadLetterTests = []test{
	{"RecordWritesTheDeadLetter", testDeadLetterWritten},
	{"NoAttemptDueAtTheLastOne", testDeadLetterNoAttempt},
	{"WrittenOnlyWhenApplied", testDeadLetterNotWritten},
	{"FollowsTheSubscription", testDeadLetterFollowsSubscription},
	{"KeepsItsEvent", testDeadLetterKeepsEvent},
	{"EndpointLivesWithTheURL", testDeadLetterEndpointLife},
	{"SharedURL", testDeadLetterSharedURL},
	{"MovesWithTheURL", testDeadLetterMove},
	{"RemovedURLDrops", testDeadLetterURLRemoved},
	{"RedeliverAndRedrive", testDeadLetterRedeliver},
	{"Reactivate", testDeadLetterReactivate},
	{"ConcurrentURLChanges", testDeadLetterConcurrentChanges},
}

// reasonDeadLetterURLRemoved is the reason the SQL stores drop the dead
// letters still to be delivered of a subscription whose dead-letter URL
// was removed (sqlrow.ReasonDeadLetterURLRemoved).
const reasonDeadLetterURLRemoved = "DeadLetterURLRemoved"

// dlSub creates a push subscription to url with the dead-letter URL dlURL,
// in account.DefaultID.
func (b *bundle) dlSub(url, dlURL string) subscription.Subscription {
	b.t.Helper()
	return b.dlSubIn(account.DefaultID, url, dlURL)
}

// dlSubIn creates a push subscription to url with the dead-letter URL
// dlURL, in an account.
func (b *bundle) dlSubIn(account, url, dlURL string) subscription.Subscription {
	b.t.Helper()
	return b.subWith(account, url, func(s *subscription.Subscription) { s.Delivery.DeadLetterURL = dlURL })
}

// dlEndpoint is the endpoint of sub's dead-letter URL, as it is now.
func (b *bundle) dlEndpoint(sub subscription.Subscription) string {
	return b.s.EndpointID(sub.AccountID, sub.Delivery.DeadLetterURL)
}

// withCopy returns o (a dead-lettered outcome) under b's lease, with the
// delivery of its dead letter to sub's dead-letter URL, as the dispatcher
// makes it.
func (b *bundle) withCopy(o store.Outcome, sub subscription.Subscription) store.Outcome {
	o.LeaseOwner = b.lease.Owner
	o.DeadLetterCopy = &store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: sub.ID, EndpointID: b.dlEndpoint(sub)}
	return o
}

// deadLetter publishes an event to sub at `at`, claims its delivery and
// dead-letters it at its first attempt, started at `at`, with the delivery
// of its dead letter. It returns the event, its seq, the outcome and the
// IDs of the dead-lettered delivery and of its dead letter's.
func (b *bundle) deadLetter(sub subscription.Subscription, at time.Time) (store.NewEvent, int64, store.Outcome, string, string) {
	b.t.Helper()
	ev, seq := b.claimOne(sub, at)
	id := ev.Deliveries[0].ID
	o := b.withCopy(deadLettered(id, 1, at, at.Add(time.Second)), sub)
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
func (b *bundle) noDelivery(id string) {
	b.t.Helper()
	if d, err := b.s.GetDelivery(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
		b.t.Fatalf("GetDelivery(%s) = %+v, %v; want ErrNotFound", id, d, err)
	}
}

// endpointIDs returns the IDs of every endpoint, sorted.
func (b *bundle) allEndpointIDs() []string {
	b.t.Helper()
	eps, err := b.s.AllEndpoints(b.ctx)
	if err != nil {
		b.t.Fatalf("AllEndpoints: %v", err)
	}
	out := []string{}
	for _, e := range eps {
		out = append(out, e.ID)
	}
	return sortedCopy(out)
}

// testDeadLetterWritten: a dead-lettered outcome with a DeadLetterCopy,
// applied under its lease, writes the delivery of the dead letter: pending
// on the dead-letter URL's endpoint, due at the attempt's end (its round
// start too), with the dead-lettered delivery's subscription, account and
// event, created at the event's publish time, DeadLetterOf its ID. It is
// claimed on that endpoint only, with its event's payload and the
// dead-lettered delivery as it ended; it is not a dead letter itself.
func testDeadLetterWritten(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	dlEp := b.dlEndpoint(a)
	if dlEp != b.s.EndpointID("", "https://dl.example/hook") || dlEp == a.EndpointID {
		t.Fatalf("dead-letter endpoint %s", dlEp)
	}
	ev, seq := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	b.record(failed(id, 1, b.now, b.at(time.Second), b.at(time.Minute)))
	equal(t, "claimed again", claimedIDs(b.claim(a.EndpointID, b.at(time.Minute), 10)), []string{id})
	o := b.withCopy(deadLettered(id, 2, b.at(time.Minute), b.at(time.Second)), a)
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
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	expired := func(id string, last time.Time, attempts int) store.Outcome {
		return b.withCopy(store.Outcome{
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
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	// Another owner's lease.
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	o := b.withCopy(deadLettered(id, 1, b.now, b.now), a)
	o.LeaseOwner = "node-b"
	b.record(o)
	if d := b.get(id); d.Status != delivery.StatusPending {
		t.Fatalf("state written under another owner's lease: %+v", d)
	}
	b.noDelivery(o.DeadLetterCopy.ID)
	// Finished already.
	b.record(succeeded(id, 2, b.at(time.Second)))
	o = b.withCopy(deadLettered(id, 3, b.at(2*time.Second), b.now), a)
	o.LeaseOwner = ""
	b.record(o)
	if d := b.get(id); d.Status != delivery.StatusDelivered {
		t.Fatalf("a delivered delivery changed: %+v", d)
	}
	b.noDelivery(o.DeadLetterCopy.ID)
	// Another status: the copy is ignored.
	ev, _ = b.claimOne(a, b.now)
	id = ev.Deliveries[0].ID
	o = b.withCopy(failed(id, 1, b.now, b.at(time.Second), b.at(time.Minute)), a)
	b.record(o)
	b.noDelivery(o.DeadLetterCopy.ID)
	if d := b.get(id); d.Status != delivery.StatusPending || d.Attempts != 1 {
		t.Fatalf("retry not recorded: %+v", d)
	}
	// A delivery that does not exist.
	o = b.withCopy(deadLettered("dlv_unknown", 1, b.now, b.now), a)
	b.record(o)
	b.noDelivery(o.DeadLetterCopy.ID)
	if _, ok, err := b.s.NextDue(b.ctx, b.dlEndpoint(a)); err != nil || ok {
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
	b.noDelivery(o.DeadLetterCopy.ID)

	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	ev, _ = b.claimOne(a, b.now)
	o = b.withCopy(deadLettered(ev.Deliveries[0].ID, 1, b.now, b.now), a) // made with the old URL
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(time.Second)
	b.updateSub(a)
	b.record(o)
	if d := b.get(o.DeadLetterCopy.ID); d.EndpointID != b.dlEndpoint(a) || d.DeadLetterOf != ev.Deliveries[0].ID {
		t.Fatalf("dead letter recorded after its URL changed: %+v; want it on %s", d, b.dlEndpoint(a))
	}
}

// testDeadLetterKeepsEvent: an event whose dead letter is still to be
// delivered is not cleaned up; once it is, the event goes with both
// deliveries.
func testDeadLetterKeepsEvent(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	_, seq, o, id, copyID := b.deadLetter(a, b.now)
	before := b.at(time.Hour)
	if n, err := b.s.Cleanup(b.ctx, before, 100); err != nil || n != 0 {
		t.Fatalf("Cleanup with a dead letter pending = %d, %v; want 0", n, err)
	}
	if _, err := b.s.GetEvent(b.ctx, seq); err != nil {
		t.Fatalf("event of a pending dead letter: %v", err)
	}
	b.get(id)
	end := attemptDue(o)
	equal(t, "claimed", claimedIDs(b.claim(b.dlEndpoint(a), end, 10)), []string{copyID})
	s := succeeded(copyID, 1, end)
	s.LeaseOwner = b.lease.Owner
	b.record(s)
	if n, err := b.s.Cleanup(b.ctx, before, 100); err != nil || n != 1 {
		t.Fatalf("Cleanup once the dead letter was delivered = %d, %v; want 1", n, err)
	}
	b.noDelivery(id)
	b.noDelivery(copyID)
}

// testDeadLetterEndpointLife: a subscription's dead-letter URL has an
// endpoint row in its account while the subscription names it, created
// fresh; it goes when the URL is removed or changed, or the subscription
// deleted, and an update that keeps it keeps its health.
func testDeadLetterEndpointLife(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	dlEp := b.dlEndpoint(a)
	equal(t, "endpoints", b.allEndpointIDs(), sortedCopy([]string{a.EndpointID, dlEp}))
	e := b.endpoint(dlEp)
	if e.AccountID != account.DefaultID || e.URL != "https://dl.example/hook" || !e.CreatedAt.Equal(b.now) || e.Version <= 0 {
		t.Fatalf("dead-letter endpoint: %+v", e)
	}
	equal(t, "fresh health", e.Health, b.endpoint(a.EndpointID).Health)

	// In another account: an endpoint of that account.
	acc := b.account("tenant")
	other := b.dlSubIn(acc.ID, "https://a.example/hook", "https://dl.example/hook")
	if otherEp := b.dlEndpoint(other); otherEp == dlEp || b.endpoint(otherEp).AccountID != acc.ID {
		t.Fatalf("dead-letter endpoint in another account: %s, %+v", otherEp, b.endpoint(otherEp))
	}

	// An update that keeps the URL keeps the row and its health.
	h := sampleHealth(b)
	b.setHealth(dlEp, h)
	a.EventTypes, a.UpdatedAt = []string{"invoice.voided"}, b.at(time.Second)
	b.updateSub(a)
	equal(t, "health after an update that kept the dead-letter URL", b.endpoint(dlEp).Health, h)

	// Changed: the new URL's row, the old one's gone.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(2*time.Second)
	b.updateSub(a)
	b.noEndpoint(dlEp)
	if e := b.endpoint(b.dlEndpoint(a)); e.URL != "https://dl2.example/hook" || !e.CreatedAt.Equal(b.at(2*time.Second)) {
		t.Fatalf("new dead-letter endpoint: %+v", e)
	}
	// Removed.
	dl2 := b.dlEndpoint(a)
	a.Delivery.DeadLetterURL, a.UpdatedAt = "", b.at(3*time.Second)
	b.updateSub(a)
	b.noEndpoint(dl2)
	b.endpoint(a.EndpointID)
	// Back, fresh, then deleted with the subscription.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl.example/hook", b.at(4*time.Second)
	b.updateSub(a)
	equal(t, "health of the recreated dead-letter endpoint", b.endpoint(dlEp).Health, e.Health)
	b.deleteSub(a)
	b.noEndpoint(dlEp)
	b.noEndpoint(a.EndpointID)
	b.deleteSub(other)
	equal(t, "endpoints after every subscription was deleted", b.allEndpointIDs(), []string{})
}

// testDeadLetterSharedURL: an endpoint row is kept while any subscription
// uses its URL, as its URL or as its dead-letter URL.
func testDeadLetterSharedURL(t *testing.T, b *bundle) {
	const x = "https://x.example/hook"
	epX := b.s.EndpointID("", x)
	// One's URL, another's dead-letter URL.
	s1 := b.sub(x)
	s2 := b.dlSub("https://two.example/hook", x)
	if b.dlEndpoint(s2) != epX || s1.EndpointID != epX {
		t.Fatalf("test setup: %s, %s", b.dlEndpoint(s2), s1.EndpointID)
	}
	h := sampleHealth(b)
	b.setHealth(epX, h)
	b.deleteSub(s1)
	equal(t, "health of the endpoint a dead-letter URL still uses", b.endpoint(epX).Health, h)
	s3 := b.sub(x) // and the other way round
	s2.Delivery.DeadLetterURL, s2.UpdatedAt = "", b.at(time.Second)
	b.updateSub(s2)
	equal(t, "health of the endpoint a URL still uses", b.endpoint(epX).Health, h)
	b.deleteSub(s3)
	b.noEndpoint(epX)

	// Two subscriptions' dead-letter URL.
	s4 := b.dlSub("https://four.example/hook", x)
	s5 := b.dlSub("https://five.example/hook", x)
	b.deleteSub(s4)
	b.endpoint(epX)
	s5.Delivery.DeadLetterURL, s5.UpdatedAt = "https://elsewhere.example/hook", b.at(time.Second)
	b.updateSub(s5)
	b.noEndpoint(epX)

	// One subscription's URL and dead-letter URL.
	s6 := b.dlSub(x, x)
	s6.Delivery.DeadLetterURL, s6.UpdatedAt = "", b.at(2*time.Second)
	b.updateSub(s6)
	b.endpoint(epX)
	s6.Delivery.DeadLetterURL, s6.UpdatedAt = x, b.at(3*time.Second)
	b.updateSub(s6)
	s6.URL, s6.EndpointID, s6.UpdatedAt = "https://six.example/hook", b.s.EndpointID("", "https://six.example/hook"), b.at(4*time.Second)
	b.updateSub(s6)
	b.endpoint(epX)
	b.deleteSub(s6)
	b.deleteSub(s5)
	b.deleteSub(s2)
	equal(t, "endpoints after every subscription was deleted", b.allEndpointIDs(), []string{})
}

// testDeadLetterMove: a subscription whose dead-letter URL changes takes
// its dead letters still to be delivered to the new URL's endpoint
// (finished ones keep theirs) and leaves its other deliveries where they
// are; one whose URL changes takes its other deliveries and leaves its
// dead letters. Swapping the two URLs swaps them.
func testDeadLetterMove(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	epA, dl1 := a.EndpointID, b.dlEndpoint(a)
	_, _, o1, dead1, c1 := b.deadLetter(a, b.now) // pending
	_, _, o2, _, c2 := b.deadLetter(a, b.now)     // delivered
	equal(t, "claimed", claimedIDs(b.claim(dl1, attemptDue(o2), 10)), []string{c1, c2})
	s := succeeded(c2, 1, attemptDue(o2))
	s.LeaseOwner = b.lease.Owner
	b.record(s)
	b.s.Release(b.ctx, []string{c1}, b.lease.Owner)
	n := b.deliver(a, b.at(time.Hour)) // pending, not due before an hour

	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(time.Second)
	b.updateSub(a)
	dl2 := b.dlEndpoint(a)
	for id, want := range map[string]string{c1: dl2, c2: dl1, n: epA, dead1: epA} {
		if d := b.get(id); d.EndpointID != want {
			t.Fatalf("delivery %s is on %s after the dead-letter URL changed; want %s", id, d.EndpointID, want)
		}
	}
	b.noEndpoint(dl1)
	got := b.claim(dl2, attemptDue(o1), 10)
	if len(got) != 1 || got[0].ID != c1 || got[0].DeadLetter == nil || got[0].DeadLetter.ID != dead1 {
		t.Fatalf("claimed on the new dead-letter endpoint: %+v", got)
	}
	b.s.Release(b.ctx, []string{c1}, b.lease.Owner)

	a.URL, a.EndpointID, a.UpdatedAt = "https://b.example/hook", b.s.EndpointID("", "https://b.example/hook"), b.at(2*time.Second)
	b.updateSub(a)
	for id, want := range map[string]string{c1: dl2, n: a.EndpointID} {
		if d := b.get(id); d.EndpointID != want {
			t.Fatalf("delivery %s is on %s after the URL changed; want %s", id, d.EndpointID, want)
		}
	}
	b.noEndpoint(epA)

	// Swapped.
	url, dlURL := a.URL, a.Delivery.DeadLetterURL
	a.URL, a.EndpointID, a.Delivery.DeadLetterURL, a.UpdatedAt = dlURL, dl2, url, b.at(3*time.Second)
	b.updateSub(a)
	for id, want := range map[string]string{c1: b.dlEndpoint(a), n: dl2} {
		if d := b.get(id); d.EndpointID != want {
			t.Fatalf("delivery %s is on %s after the URLs were swapped; want %s", id, d.EndpointID, want)
		}
	}
	equal(t, "endpoints after the swap", b.allEndpointIDs(), sortedCopy([]string{a.EndpointID, b.dlEndpoint(a)}))
}

// testDeadLetterURLRemoved: a subscription that stops naming a dead-letter
// URL drops its dead letters still to be delivered, leased or not (a later
// outcome only logs), and writes no more; its other deliveries stay.
func testDeadLetterURLRemoved(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	dlEp := b.dlEndpoint(a)
	_, _, o1, dead1, c1 := b.deadLetter(a, b.now)
	_, _, _, _, c2 := b.deadLetter(a, b.at(time.Second))
	equal(t, "claimed", claimedIDs(b.claim(dlEp, attemptDue(o1), 1)), []string{c1}) // c1 leased, c2 not
	n := b.deliver(a, b.at(time.Hour))

	a.Delivery.DeadLetterURL, a.UpdatedAt = "", b.at(2*time.Second)
	b.updateSub(a)
	for _, id := range []string{c1, c2} {
		if d := b.get(id); d.Status != delivery.StatusDropped || d.DeadLetterReason != reasonDeadLetterURLRemoved || d.EndpointID != dlEp {
			t.Fatalf("dead letter %s after its URL was removed: %+v; want dropped (%s)", id, d, reasonDeadLetterURLRemoved)
		}
	}
	if d := b.get(n); d.Status != delivery.StatusPending || d.EndpointID != a.EndpointID {
		t.Fatalf("other delivery after the dead-letter URL was removed: %+v", d)
	}
	if d := b.get(dead1); d.Status != delivery.StatusDeadLettered {
		t.Fatalf("dead-lettered delivery after the dead-letter URL was removed: %+v", d)
	}
	s := succeeded(c1, 1, b.at(3*time.Second))
	s.LeaseOwner = b.lease.Owner
	b.record(s)
	if d := b.get(c1); d.Status != delivery.StatusDropped {
		t.Fatalf("outcome of a dropped dead letter applied: %+v", d)
	}
	if got := attempts(t, b, c1); len(got) != 1 {
		t.Fatalf("attempt of a dropped dead letter not logged: %+v", got)
	}
	b.noEndpoint(dlEp)
	if due, err := b.s.DueEndpoints(b.ctx); err != nil || len(due) != 1 || due[0].EndpointID != a.EndpointID {
		t.Fatalf("DueEndpoints = %+v, %v; want only the subscription's", due, err)
	}
	// No dead letter is written without a dead-letter URL.
	ev, _ := b.claimOne(a, b.now)
	o := deadLettered(ev.Deliveries[0].ID, 1, b.now, b.now)
	o.LeaseOwner = b.lease.Owner
	o.DeadLetterCopy = &store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: a.ID, EndpointID: dlEp}
	b.record(o)
	b.noDelivery(o.DeadLetterCopy.ID)
}

// testDeadLetterRedeliver: a dead letter's delivery that was dead-lettered
// itself is redelivered and redriven to its subscription's current
// dead-letter URL's endpoint (the others to its URL's), and neither when
// the subscription names no dead-letter URL any more.
func testDeadLetterRedeliver(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	_, _, o, dead, c := b.deadLetter(a, b.now)
	at := attemptDue(o)
	deadAgain := func(id string, endpoint string, now time.Time) {
		t.Helper()
		equal(t, "claimed", claimedIDs(b.claim(endpoint, now, 10)), []string{id})
		o := deadLettered(id, 1, now, now)
		o.LeaseOwner = b.lease.Owner
		b.record(o)
	}
	deadAgain(c, b.dlEndpoint(a), at)
	now := b.at(time.Hour)
	d, err := b.s.Redeliver(b.ctx, c, now)
	if err != nil || d.Status != delivery.StatusPending || d.EndpointID != b.dlEndpoint(a) || d.DeadLetterOf != dead || !d.NextAttemptAt.Equal(now) {
		t.Fatalf("Redeliver of a dead letter = %+v, %v; want pending on %s", d, err, b.dlEndpoint(a))
	}
	got := b.claim(b.dlEndpoint(a), now, 10)
	if len(got) != 1 || got[0].ID != c || got[0].DeadLetter == nil || got[0].DeadLetter.ID != dead ||
		got[0].DeadLetter.Status != delivery.StatusDeadLettered {
		t.Fatalf("claimed after the redeliver: %+v", got)
	}
	o = deadLettered(c, 2, now, now)
	o.LeaseOwner = b.lease.Owner
	b.record(o)

	// Redrive, after the dead-letter URL changed.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(time.Second)
	b.updateSub(a)
	now = b.at(2 * time.Hour)
	res, err := b.s.Redrive(b.ctx, a.ID, nil, now)
	if err != nil || res.Count != 2 {
		t.Fatalf("Redrive = %+v, %v; want 2", res, err)
	}
	equal(t, "redriven to", sortedCopy(res.Endpoints), sortedCopy([]string{a.EndpointID, b.dlEndpoint(a)}))
	for id, want := range map[string]string{dead: a.EndpointID, c: b.dlEndpoint(a)} {
		if d := b.get(id); d.Status != delivery.StatusPending || d.EndpointID != want {
			t.Fatalf("delivery %s after the redrive: %+v; want pending on %s", id, d, want)
		}
	}
	deadAgain(dead, a.EndpointID, now)
	deadAgain(c, b.dlEndpoint(a), now)

	// No dead-letter URL: the dead letter stays where it is.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "", b.at(2*time.Second)
	b.updateSub(a)
	before := b.get(c)
	if _, err := b.s.Redeliver(b.ctx, c, now); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Redeliver of a dead letter without a dead-letter URL: %v; want ErrConflict", err)
	}
	if res, err := b.s.Redrive(b.ctx, a.ID, []string{c}, now); err != nil || res.Count != 0 {
		t.Fatalf("Redrive of a dead letter without a dead-letter URL = %+v, %v; want nothing", res, err)
	}
	res, err = b.s.Redrive(b.ctx, a.ID, nil, now)
	if err != nil || res.Count != 1 {
		t.Fatalf("Redrive without a dead-letter URL = %+v, %v; want the dead-lettered delivery only", res, err)
	}
	equal(t, "redriven to", res.Endpoints, []string{a.EndpointID})
	equal(t, "the dead letter", b.get(c), before)
}

// testDeadLetterReactivate: a deactivation queues the subscription's dead
// letters still to be delivered with its other pending deliveries, and
// ReactivateSubscription makes them pending on its dead-letter URL's
// endpoint again, naming both endpoints.
func testDeadLetterReactivate(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl.example/hook")
	_, _, _, _, c := b.deadLetter(a, b.now)
	ev, _ := b.claimOne(a, b.now)
	d := ev.Deliveries[0].ID
	o := queuedOutcome(d, 1, b.at(time.Second))
	o.LeaseOwner = b.lease.Owner
	b.record(o)
	if got := b.get(c); got.Status != delivery.StatusQueued {
		t.Fatalf("dead letter after the deactivation: %+v; want queued", got)
	}
	at := b.at(time.Minute)
	res, err := b.s.ReactivateSubscription(b.ctx, a.ID, at)
	if err != nil || res.Count != 2 {
		t.Fatalf("ReactivateSubscription = %+v, %v; want 2 moved", res, err)
	}
	equal(t, "endpoints", res.Endpoints, []string{a.EndpointID, b.dlEndpoint(a)})
	for id, want := range map[string]string{c: b.dlEndpoint(a), d: a.EndpointID} {
		if got := b.get(id); got.Status != delivery.StatusPending || got.EndpointID != want || !got.NextAttemptAt.Equal(at) {
			t.Fatalf("delivery %s after the reactivation: %+v; want pending on %s", id, got, want)
		}
	}
	got := b.claim(b.dlEndpoint(a), at, 10)
	if len(got) != 1 || got[0].ID != c || got[0].DeadLetter == nil {
		t.Fatalf("claimed on the dead-letter endpoint after the reactivation: %+v", got)
	}
}

// testDeadLetterConcurrentChanges: dead letters recorded while the
// subscription's dead-letter URL keeps changing all end up on the endpoint
// of the URL it names last, and no endpoint row is left behind.
func testDeadLetterConcurrentChanges(t *testing.T, b *bundle) {
	a := b.dlSub("https://a.example/hook", "https://dl0.example/hook")
	const n = 40
	outcomes := make([]store.Outcome, n)
	for i := range outcomes {
		ev, _ := b.claimOne(a, b.now)
		outcomes[i] = b.withCopy(deadLettered(ev.Deliveries[0].ID, 1, b.now, b.now), a)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for _, o := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- b.s.Record(b.ctx, []store.Outcome{o})
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sub := a
		for i := 1; i <= 10; i++ {
			sub.Delivery.DeadLetterURL = fmt.Sprintf("https://dl%d.example/hook", i%4)
			sub.UpdatedAt = b.at(time.Duration(i) * time.Second)
			if err := b.s.UpdateSubscription(b.ctx, sub); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	a = b.subscription(a.ID)
	for _, o := range outcomes {
		if d := b.get(o.DeadLetterCopy.ID); d.Status != delivery.StatusPending || d.EndpointID != b.dlEndpoint(a) {
			t.Fatalf("dead letter %s: %+v; want pending on %s", d.ID, d, b.dlEndpoint(a))
		}
	}
	equal(t, "endpoints", b.allEndpointIDs(), sortedCopy([]string{a.EndpointID, b.dlEndpoint(a)}))
}
