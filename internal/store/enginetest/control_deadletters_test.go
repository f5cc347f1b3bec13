package enginetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// testDeadLetterEndpointLife: a subscription's dead-letter URL has an
// endpoint row in its account while the subscription names it, created
// fresh; it goes when the URL is removed or changed, or the subscription
// deleted, and an update that keeps it keeps its health.
func testDeadLetterEndpointLife(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	dlEp := dlEndpoint(b, a)
	equal(t, "endpoints", allEndpointIDs(b), sortedCopy([]string{a.EndpointID, dlEp}))
	e := readEndpoint(b, dlEp)
	if e.AccountID != account.DefaultID || e.URL != "https://dl.example/hook" || !e.CreatedAt.Equal(b.now) || e.Version <= 0 {
		t.Fatalf("dead-letter endpoint: %+v", e)
	}
	equal(t, "fresh health", e.Health, readEndpoint(b, a.EndpointID).Health)

	// In another account: an endpoint of that account.
	acc := b.account("tenant")
	other := dlSubIn(b, acc.ID, "https://a.example/hook", "https://dl.example/hook")
	if otherEp := dlEndpoint(b, other); otherEp == dlEp || readEndpoint(b, otherEp).AccountID != acc.ID {
		t.Fatalf("dead-letter endpoint in another account: %s, %+v", otherEp, readEndpoint(b, otherEp))
	}

	// An update that keeps the URL keeps the row and its health.
	h := sampleHealth(b)
	setHealth(b, dlEp, h)
	a.EventTypes, a.UpdatedAt = []string{"invoice.voided"}, b.at(time.Second)
	updateSub(b, a)
	equal(t, "health after an update that kept the dead-letter URL", readEndpoint(b, dlEp).Health, h)

	// Changed: the new URL's row, the old one's gone.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(2*time.Second)
	updateSub(b, a)
	noEndpoint(b, dlEp)
	if e := readEndpoint(b, dlEndpoint(b, a)); e.URL != "https://dl2.example/hook" || !e.CreatedAt.Equal(b.at(2*time.Second)) {
		t.Fatalf("new dead-letter endpoint: %+v", e)
	}
	// Removed.
	dl2 := dlEndpoint(b, a)
	a.Delivery.DeadLetterURL, a.UpdatedAt = "", b.at(3*time.Second)
	updateSub(b, a)
	noEndpoint(b, dl2)
	readEndpoint(b, a.EndpointID)
	// Back, fresh, then deleted with the subscription.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl.example/hook", b.at(4*time.Second)
	updateSub(b, a)
	equal(t, "health of the recreated dead-letter endpoint", readEndpoint(b, dlEp).Health, e.Health)
	deleteSub(b, a)
	noEndpoint(b, dlEp)
	noEndpoint(b, a.EndpointID)
	deleteSub(b, other)
	equal(t, "endpoints after every subscription was deleted", allEndpointIDs(b), []string{})
}

// testDeadLetterSharedURL: an endpoint row is kept while any subscription
// uses its URL, as its URL or as its dead-letter URL.
func testDeadLetterSharedURL(t *testing.T, b *bundle) {
	const x = "https://x.example/hook"
	epX := b.s.EndpointID("", x)
	// One's URL, another's dead-letter URL.
	s1 := b.sub(x)
	s2 := dlSub(b, "https://two.example/hook", x)
	if dlEndpoint(b, s2) != epX || s1.EndpointID != epX {
		t.Fatalf("test setup: %s, %s", dlEndpoint(b, s2), s1.EndpointID)
	}
	h := sampleHealth(b)
	setHealth(b, epX, h)
	deleteSub(b, s1)
	equal(t, "health of the endpoint a dead-letter URL still uses", readEndpoint(b, epX).Health, h)
	s3 := b.sub(x) // and the other way round
	s2.Delivery.DeadLetterURL, s2.UpdatedAt = "", b.at(time.Second)
	updateSub(b, s2)
	equal(t, "health of the endpoint a URL still uses", readEndpoint(b, epX).Health, h)
	deleteSub(b, s3)
	noEndpoint(b, epX)

	// Two subscriptions' dead-letter URL.
	s4 := dlSub(b, "https://four.example/hook", x)
	s5 := dlSub(b, "https://five.example/hook", x)
	deleteSub(b, s4)
	readEndpoint(b, epX)
	s5.Delivery.DeadLetterURL, s5.UpdatedAt = "https://elsewhere.example/hook", b.at(time.Second)
	updateSub(b, s5)
	noEndpoint(b, epX)

	// One subscription's URL and dead-letter URL.
	s6 := dlSub(b, x, x)
	s6.Delivery.DeadLetterURL, s6.UpdatedAt = "", b.at(2*time.Second)
	updateSub(b, s6)
	readEndpoint(b, epX)
	s6.Delivery.DeadLetterURL, s6.UpdatedAt = x, b.at(3*time.Second)
	updateSub(b, s6)
	s6.URL, s6.EndpointID, s6.UpdatedAt = "https://six.example/hook", b.s.EndpointID("", "https://six.example/hook"), b.at(4*time.Second)
	updateSub(b, s6)
	readEndpoint(b, epX)
	deleteSub(b, s6)
	deleteSub(b, s5)
	deleteSub(b, s2)
	equal(t, "endpoints after every subscription was deleted", allEndpointIDs(b), []string{})
}

// testDeadLetterMove: a subscription whose dead-letter URL changes takes
// its dead letters still to be delivered to the new URL's endpoint
// (finished ones keep theirs) and leaves its other deliveries where they
// are; one whose URL changes takes its other deliveries and leaves its
// dead letters. Swapping the two URLs swaps them.
func testDeadLetterMove(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	epA, dl1 := a.EndpointID, dlEndpoint(b, a)
	_, _, o1, dead1, c1 := deadLetter(b, a, b.now) // pending
	_, _, o2, _, c2 := deadLetter(b, a, b.now)     // delivered
	equal(t, "claimed", claimedIDs(b.claim(dl1, attemptDue(o2), 10)), []string{c1, c2})
	s := succeeded(c2, 1, attemptDue(o2))
	s.LeaseOwner = b.lease.Owner
	b.record(s)
	b.s.Release(b.ctx, []string{c1}, b.lease.Owner)
	n := b.deliver(a, b.at(time.Hour)) // pending, not due before an hour

	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(time.Second)
	updateSub(b, a)
	dl2 := dlEndpoint(b, a)
	for id, want := range map[string]string{c1: dl2, c2: dl1, n: epA, dead1: epA} {
		if d := b.get(id); d.EndpointID != want {
			t.Fatalf("delivery %s is on %s after the dead-letter URL changed; want %s", id, d.EndpointID, want)
		}
	}
	noEndpoint(b, dl1)
	got := b.claim(dl2, attemptDue(o1), 10)
	if len(got) != 1 || got[0].ID != c1 || got[0].DeadLetter == nil || got[0].DeadLetter.ID != dead1 {
		t.Fatalf("claimed on the new dead-letter endpoint: %+v", got)
	}
	b.s.Release(b.ctx, []string{c1}, b.lease.Owner)

	a.URL, a.EndpointID, a.UpdatedAt = "https://b.example/hook", b.s.EndpointID("", "https://b.example/hook"), b.at(2*time.Second)
	updateSub(b, a)
	for id, want := range map[string]string{c1: dl2, n: a.EndpointID} {
		if d := b.get(id); d.EndpointID != want {
			t.Fatalf("delivery %s is on %s after the URL changed; want %s", id, d.EndpointID, want)
		}
	}
	noEndpoint(b, epA)

	// Swapped.
	url, dlURL := a.URL, a.Delivery.DeadLetterURL
	a.URL, a.EndpointID, a.Delivery.DeadLetterURL, a.UpdatedAt = dlURL, dl2, url, b.at(3*time.Second)
	updateSub(b, a)
	for id, want := range map[string]string{c1: dlEndpoint(b, a), n: dl2} {
		if d := b.get(id); d.EndpointID != want {
			t.Fatalf("delivery %s is on %s after the URLs were swapped; want %s", id, d.EndpointID, want)
		}
	}
	equal(t, "endpoints after the swap", allEndpointIDs(b), sortedCopy([]string{a.EndpointID, dlEndpoint(b, a)}))
}

// testDeadLetterURLRemoved: a subscription that stops naming a dead-letter
// URL drops its dead letters still to be delivered, leased or not (a later
// outcome only logs), and writes no more; its other deliveries stay.
func testDeadLetterURLRemoved(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	dlEp := dlEndpoint(b, a)
	_, _, o1, dead1, c1 := deadLetter(b, a, b.now)
	_, _, _, _, c2 := deadLetter(b, a, b.at(time.Second))
	equal(t, "claimed", claimedIDs(b.claim(dlEp, attemptDue(o1), 1)), []string{c1}) // c1 leased, c2 not
	n := b.deliver(a, b.at(time.Hour))

	a.Delivery.DeadLetterURL, a.UpdatedAt = "", b.at(2*time.Second)
	updateSub(b, a)
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
	noEndpoint(b, dlEp)
	if due, err := b.s.DueEndpoints(b.ctx); err != nil || len(due) != 1 || due[0].EndpointID != a.EndpointID {
		t.Fatalf("DueEndpoints = %+v, %v; want only the subscription's", due, err)
	}
	// No dead letter is written without a dead-letter URL.
	ev, _ := b.claimOne(a, b.now)
	o := deadLettered(ev.Deliveries[0].ID, 1, b.now, b.now)
	o.LeaseOwner = b.lease.Owner
	o.DeadLetterCopy = &store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: a.ID, EndpointID: dlEp}
	b.record(o)
	noDelivery(b, o.DeadLetterCopy.ID)
}

// testDeadLetterRedeliver: a dead letter's delivery that was dead-lettered
// itself is redelivered and redriven to its subscription's current
// dead-letter URL's endpoint (the others to its URL's), and neither when
// the subscription names no dead-letter URL any more.
func testDeadLetterRedeliver(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	_, _, o, dead, c := deadLetter(b, a, b.now)
	at := attemptDue(o)
	deadAgain := func(id string, endpoint string, now time.Time) {
		t.Helper()
		equal(t, "claimed", claimedIDs(b.claim(endpoint, now, 10)), []string{id})
		o := deadLettered(id, 1, now, now)
		o.LeaseOwner = b.lease.Owner
		b.record(o)
	}
	deadAgain(c, dlEndpoint(b, a), at)
	now := b.at(time.Hour)
	d, err := b.s.Redeliver(b.ctx, c, now)
	if err != nil || d.Status != delivery.StatusPending || d.EndpointID != dlEndpoint(b, a) || d.DeadLetterOf != dead || !d.NextAttemptAt.Equal(now) {
		t.Fatalf("Redeliver of a dead letter = %+v, %v; want pending on %s", d, err, dlEndpoint(b, a))
	}
	got := b.claim(dlEndpoint(b, a), now, 10)
	if len(got) != 1 || got[0].ID != c || got[0].DeadLetter == nil || got[0].DeadLetter.ID != dead ||
		got[0].DeadLetter.Status != delivery.StatusDeadLettered {
		t.Fatalf("claimed after the redeliver: %+v", got)
	}
	o = deadLettered(c, 2, now, now)
	o.LeaseOwner = b.lease.Owner
	b.record(o)

	// Redrive, after the dead-letter URL changed.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "https://dl2.example/hook", b.at(time.Second)
	updateSub(b, a)
	now = b.at(2 * time.Hour)
	res, err := b.s.Redrive(b.ctx, a.ID, nil, now)
	if err != nil || res.Count != 2 {
		t.Fatalf("Redrive = %+v, %v; want 2", res, err)
	}
	equal(t, "redriven to", sortedCopy(res.Endpoints), sortedCopy([]string{a.EndpointID, dlEndpoint(b, a)}))
	for id, want := range map[string]string{dead: a.EndpointID, c: dlEndpoint(b, a)} {
		if d := b.get(id); d.Status != delivery.StatusPending || d.EndpointID != want {
			t.Fatalf("delivery %s after the redrive: %+v; want pending on %s", id, d, want)
		}
	}
	deadAgain(dead, a.EndpointID, now)
	deadAgain(c, dlEndpoint(b, a), now)

	// No dead-letter URL: the dead letter stays where it is.
	a.Delivery.DeadLetterURL, a.UpdatedAt = "", b.at(2*time.Second)
	updateSub(b, a)
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
	a := dlSub(b, "https://a.example/hook", "https://dl.example/hook")
	_, _, _, _, c := deadLetter(b, a, b.now)
	ev, _ := b.claimOne(a, b.now)
	d := ev.Deliveries[0].ID
	o := queuedOutcome(d, 1, b.at(time.Second))
	o.LeaseOwner = b.lease.Owner
	b.record(o)
	if got := b.get(c); got.Status != delivery.StatusQueued {
		t.Fatalf("dead letter after the deactivation: %+v; want queued", got)
	}
	at := b.at(time.Minute)
	res, err := b.s.ReactivateSubscription(b.ctx, a.ID, at, subscription.ReasonReactivatedByHand)
	if err != nil || res.Count != 2 {
		t.Fatalf("ReactivateSubscription = %+v, %v; want 2 moved", res, err)
	}
	equal(t, "endpoints", res.Endpoints, []string{a.EndpointID, dlEndpoint(b, a)})
	for id, want := range map[string]string{c: dlEndpoint(b, a), d: a.EndpointID} {
		if got := b.get(id); got.Status != delivery.StatusPending || got.EndpointID != want || !got.NextAttemptAt.Equal(at) {
			t.Fatalf("delivery %s after the reactivation: %+v; want pending on %s", id, got, want)
		}
	}
	got := b.claim(dlEndpoint(b, a), at, 10)
	if len(got) != 1 || got[0].ID != c || got[0].DeadLetter == nil {
		t.Fatalf("claimed on the dead-letter endpoint after the reactivation: %+v", got)
	}
}

// testDeadLetterConcurrentChanges: dead letters recorded while the
// subscription's dead-letter URL keeps changing all end up on the endpoint
// of the URL it names last, and no endpoint row is left behind.
func testDeadLetterConcurrentChanges(t *testing.T, b *bundle) {
	a := dlSub(b, "https://a.example/hook", "https://dl0.example/hook")
	const n = 40
	outcomes := make([]store.Outcome, n)
	for i := range outcomes {
		ev, _ := b.claimOne(a, b.now)
		outcomes[i] = withCopy(b, deadLettered(ev.Deliveries[0].ID, 1, b.now, b.now), a)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for _, o := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.s.Record(b.ctx, []store.Outcome{o})
			errs <- err
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
	a = readSubscription(b, a.ID)
	for _, o := range outcomes {
		if d := b.get(o.DeadLetterCopy.ID); d.Status != delivery.StatusPending || d.EndpointID != dlEndpoint(b, a) {
			t.Fatalf("dead letter %s: %+v; want pending on %s", d.ID, d, dlEndpoint(b, a))
		}
	}
	equal(t, "endpoints", allEndpointIDs(b), sortedCopy([]string{a.EndpointID, dlEndpoint(b, a)}))
}

// endpointIDs returns the IDs of every endpoint, sorted.
func allEndpointIDs(b *bundle) []string {
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

// reasonDeadLetterURLRemoved is the reason the SQL stores drop the dead
// letters still to be delivered of a subscription whose dead-letter URL
// was removed (sqlrow.ReasonDeadLetterURLRemoved).
const reasonDeadLetterURLRemoved = "DeadLetterURLRemoved"
