package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Queued deliveries, receiving and the locks consumers settle
// (store.QueueStore). Deactivation and reactivation are in deactivate.go,
// several consumers at once in receivers.go.
var queueTests = []test{
	{"PublishQueued", testQueuePublish},
	{"ReceiveOldestFirstUpToMax", testReceiveOrder},
	{"ReceiveBoundedInBytes", testReceiveBytes},
	{"ConcurrentReceivesDisjoint", testConcurrentReceivesDisjoint},
	{"LockExpiry", testLockExpiry},
	{"Acknowledge", testAcknowledge},
	{"Release", testReleaseLock},
	{"Reject", testReject},
	{"Renew", testRenew},
	{"SettleExpiredLock", testSettleExpired},
	{"SettleOtherSubscription", testSettleOtherSubscription},
	{"MaxReceives", testMaxReceives},
	{"TTL", testReceiveTTL},
	{"CountQueued", testCountQueued},
	{"ListQueuedByEndpoint", testListQueuedByEndpoint},
	{"PullSubscriptionHasNoEndpoint", testPullNoEndpoint},
	{"RecordQueuedDeactivates", testRecordDeactivates},
	{"DeactivateOnlyWithTheLease", testDeactivateGuarded},
	{"Reactivate", testReactivate},
}

// The reasons Receive ends deliveries with (retry.ReasonMaxAttempts and
// retry.ReasonTTL).
const (
	reasonMaxReceives = "MaxDeliveryAttemptsExceeded"
	reasonTTL         = "TimeToLiveExceeded"
)

// lockFor is the lock duration of the suite's receives.
const lockFor = 30 * time.Second

// pullSub creates a pull subscription (no URL, no endpoint) with a unique
// name in account.DefaultID; deadLetter is its DeadLetter.
func (b *bundle) pullSub(deadLetter bool) subscription.Subscription {
	b.t.Helper()
	b.n++
	s := subscription.Subscription{ID: b.id("sub_"), AccountID: account.DefaultID, Name: fmt.Sprintf("pull-%d", b.n),
		EventTypes: []string{"invoice.paid"}, RetryPolicy: []byte(`{"preset":"eventgrid"}`), DeadLetter: deadLetter,
		State: subscription.StateActive, DeliveryMode: subscription.ModePull, FailurePolicy: subscription.FailureRetry,
		CreatedAt: b.now, UpdatedAt: b.now}
	if err := b.s.CreateSubscription(b.ctx, s); err != nil {
		b.t.Fatalf("CreateSubscription(pull): %v", err)
	}
	return s
}

// enqueue publishes one event at `at` with a queued delivery to each of
// subs, and returns it and its seq.
func (b *bundle) enqueue(at time.Time, subs ...subscription.Subscription) (store.NewEvent, int64) {
	b.t.Helper()
	ev := b.event(at, subs...)
	for i := range ev.Deliveries {
		ev.Deliveries[i].Queued = true
	}
	return ev, b.publish(ev)[0].Seq
}

// queue publishes one event at `at` with a queued delivery to sub and
// returns the delivery's ID.
func (b *bundle) queue(sub subscription.Subscription, at time.Time) string {
	b.t.Helper()
	ev, _ := b.enqueue(at, sub)
	return ev.Deliveries[0].ID
}

// receiveReq asks for up to max of sub's deliveries at now, locked for
// lockFor, ended as sub's DeadLetter says.
func receiveReq(sub subscription.Subscription, now time.Time, max int) store.ReceiveRequest {
	return store.ReceiveRequest{SubscriptionID: sub.ID, Now: now, Max: max, LockFor: lockFor, DeadLetter: sub.DeadLetter}
}

func (b *bundle) receiveWith(r store.ReceiveRequest) store.ReceiveResult {
	b.t.Helper()
	res, err := b.s.Receive(b.ctx, r)
	if err != nil {
		b.t.Fatalf("Receive: %v", err)
	}
	if len(res.Received) > r.Max {
		b.t.Fatalf("Receive(max %d) returned %d", r.Max, len(res.Received))
	}
	return res
}

func (b *bundle) receive(sub subscription.Subscription, now time.Time, max int) store.ReceiveResult {
	b.t.Helper()
	return b.receiveWith(receiveReq(sub, now, max))
}

// receiveNone receives from sub at now, fails the test if it gets
// anything, and returns NextAt.
func (b *bundle) receiveNone(sub subscription.Subscription, now time.Time) time.Time {
	b.t.Helper()
	res := b.receive(sub, now, 10)
	if len(res.Received)+len(res.Ended) != 0 {
		b.t.Fatalf("Receive at %v: received %v, ended %v; want nothing", now, receivedIDs(res.Received), deliveryIDs(res.Ended))
	}
	return res.NextAt
}

func (b *bundle) settleWith(r store.SettleRequest) []error {
	b.t.Helper()
	res, err := b.s.Settle(b.ctx, r)
	if err != nil {
		b.t.Fatalf("Settle: %v", err)
	}
	if len(res) != len(r.Tokens) {
		b.t.Fatalf("Settle returned %d results for %d tokens", len(res), len(r.Tokens))
	}
	return res
}

// settle applies action at now to tokens of sub (Renew for lockFor, Reject
// as sub's DeadLetter says, Release without delay).
func (b *bundle) settle(sub subscription.Subscription, action store.LockAction, now time.Time, tokens ...string) []error {
	b.t.Helper()
	return b.settleWith(store.SettleRequest{SubscriptionID: sub.ID, Action: action, Tokens: tokens, Now: now,
		LockFor: lockFor, DeadLetter: sub.DeadLetter})
}

// settled fails the test unless each of got is its want (nil or
// ErrLockLost).
func settled(t *testing.T, what string, got []error, want ...error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !errors.Is(got[i], want[i]) {
			t.Fatalf("%s: result %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func receivedIDs(rs []store.Received) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// queuedDelivery is the state Publish gives a queued delivery of ev.
func queuedDelivery(ev store.NewEvent, i int, seq int64) delivery.Delivery {
	d := pendingDelivery(ev, i, seq)
	d.Status = delivery.StatusQueued
	return d
}

func (b *bundle) countQueued(want int64) {
	b.t.Helper()
	if n, err := b.s.CountQueued(b.ctx); err != nil || n != want {
		b.t.Fatalf("CountQueued = %d, %v; want %d", n, err, want)
	}
}

// testQueuePublish: a queued delivery is written queued, unlocked,
// receivable from its publish time; receiving it locks it, returns it with
// its event, and a token naming it.
func testQueuePublish(t *testing.T, b *bundle) {
	p, a := b.pullSub(true), b.sub("https://a.example/hook")
	ev := b.event(b.at(time.Second), p, a)
	ev.Deliveries[0].Queued = true
	seq := b.publish(ev)[0].Seq
	id := ev.Deliveries[0].ID
	want := queuedDelivery(ev, 0, seq)
	equal(t, "queued delivery", b.get(id), want)
	if want.EndpointID != "" {
		t.Fatalf("a pull subscription's delivery has endpoint %q", want.EndpointID)
	}
	equal(t, "pending delivery of the same event", b.get(ev.Deliveries[1].ID), pendingDelivery(ev, 1, seq))
	b.countQueued(1)
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != 1 || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want 1, 0", fresh, retry, err)
	}
	// A duplicate writes nothing.
	if res, err := b.s.Publish(b.ctx, []store.NewEvent{ev}, store.PublishOptions{}); err != nil || !res[0].Duplicate {
		t.Fatalf("Publish(duplicate) = %+v, %v", res, err)
	}
	b.countQueued(1)

	if next := b.receiveNone(p, b.at(time.Second-time.Millisecond)); !next.Equal(b.at(time.Second)) {
		t.Fatalf("NextAt before the publish time = %v, want %v", next, b.at(time.Second))
	}
	res := b.receive(p, b.at(time.Second), 10)
	end := b.at(time.Second + lockFor)
	want.Receives, want.LockedUntil, want.NextAttemptAt = 1, end, end
	if len(res.Received) != 1 {
		t.Fatalf("received %v, want [%s]", receivedIDs(res.Received), id)
	}
	r := res.Received[0]
	equal(t, "received", r.Delivery, want)
	if string(r.Payload) != string(ev.Payload) {
		t.Fatalf("payload %q, want %q", r.Payload, ev.Payload)
	}
	if !strings.HasPrefix(r.LockToken, id+".") || len(r.LockToken) < len(id)+17 || store.LockTokenDelivery(r.LockToken) != id {
		t.Fatalf("lock token %q: want %s, a dot and at least 16 characters", r.LockToken, id)
	}
	if len(res.Ended) != 0 || res.ExpiredLocks != 0 || !res.NextAt.Equal(end) {
		t.Fatalf("Receive: ended %v, expired locks %d, NextAt %v; want none, 0, %v", res.Ended, res.ExpiredLocks, res.NextAt, end)
	}
	equal(t, "delivery after Receive", b.get(id), want)
	b.countQueued(1) // locked, still queued
	if next := b.receiveNone(p, b.at(time.Second)); !next.Equal(end) {
		t.Fatalf("NextAt while locked = %v, want the lock's end %v", next, end)
	}
	// The push subscription has nothing queued; nothing pull is claimed.
	if next := b.receiveNone(a, b.at(time.Hour)); !next.IsZero() {
		t.Fatalf("NextAt of a subscription with nothing queued = %v, want zero", next)
	}
	if got := b.claim("", b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("ClaimDue(\"\") claimed %v", claimedIDs(got))
	}
	equal(t, "claimed push delivery", claimedIDs(b.claim(a.EndpointID, b.at(time.Hour), 10)), []string{ev.Deliveries[1].ID})
}

// testReceiveOrder: Receive returns the receivable deliveries oldest due
// first, at most Max, only the subscription's; NextAt is the earliest due
// time of what is left queued, locks included.
func testReceiveOrder(t *testing.T, b *bundle) {
	p, other := b.pullSub(true), b.pullSub(true)
	d3 := b.queue(p, b.at(3*time.Second))
	d1 := b.queue(p, b.at(1*time.Second))
	d2 := b.queue(p, b.at(2*time.Second))
	d4 := b.queue(p, b.at(4*time.Second))
	b.queue(p, b.at(time.Hour))
	b.queue(other, b.now)
	now := b.at(time.Minute)
	res := b.receive(p, now, 2)
	equal(t, "first receive", receivedIDs(res.Received), []string{d1, d2})
	if !res.NextAt.Equal(b.at(3 * time.Second)) {
		t.Fatalf("NextAt with receivable deliveries left = %v, want %v", res.NextAt, b.at(3*time.Second))
	}
	res = b.receive(p, now, 10)
	equal(t, "second receive", receivedIDs(res.Received), []string{d3, d4})
	if !res.NextAt.Equal(now.Add(lockFor)) {
		t.Fatalf("NextAt = %v, want the first lock's end %v", res.NextAt, now.Add(lockFor))
	}
	if next := b.receiveNone(p, now); !next.Equal(now.Add(lockFor)) {
		t.Fatalf("NextAt = %v, want %v", next, now.Add(lockFor))
	}
}

// testReceiveBytes: Receive stops, as a list page does, after the
// delivery whose payload brings those it returns to store.MaxPageBytes or
// more (one larger comes alone), and locks nothing it does not return: the
// next receives, at the same time, get the rest in order, each delivery
// once, with its payload. A delivery it ends takes no bytes.
func testReceiveBytes(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	var want []string
	payloads := map[string][]byte{}
	for i, n := range pageSizes {
		ev := b.event(b.at(time.Duration(i)*time.Second), p)
		ev.Payload = filler(n)
		ev.Deliveries[0].Queued = true
		b.publish(ev)
		id := ev.Deliveries[0].ID
		want = append(want, id)
		payloads[id] = ev.Payload
	}
	now := b.at(time.Hour)
	for round, max := range []int{1000, 2} {
		var got []string
		for call := 1; len(got) < len(want); call++ {
			if call > len(want) {
				t.Fatalf("max %d: %d receives got %d of %d deliveries", max, call-1, len(got), len(want))
			}
			res := b.receive(p, now, max)
			if len(res.Received) == 0 {
				t.Fatalf("max %d, receive %d: nothing, with %d of %d deliveries received", max, call, len(got), len(want))
			}
			var total int64
			for i, r := range res.Received {
				if total >= store.MaxPageBytes {
					t.Fatalf("max %d, receive %d: delivery %d comes after %d bytes; the answer should have ended at %d", max, call, i, total, store.MaxPageBytes)
				}
				if string(r.Payload) != string(payloads[r.ID]) {
					t.Fatalf("max %d, receive %d: %s with a payload of %d bytes, want its %d", max, call, r.ID, len(r.Payload), len(payloads[r.ID]))
				}
				total += int64(len(r.Payload))
				got = append(got, r.ID)
			}
			if rest := len(want) - len(got); rest > 0 && len(res.Received) < max && total < store.MaxPageBytes {
				t.Fatalf("max %d, receive %d: %d deliveries of %d bytes while %d more are receivable; want %d or %d bytes", max, call, len(res.Received), total, rest, max, store.MaxPageBytes)
			}
			for _, id := range want[len(got):] {
				if d := b.get(id); d.LockedUntil.After(now) || d.Receives != round {
					t.Fatalf("max %d, receive %d: %s, not returned, is locked until %v with %d receives; want it unlocked, %d", max, call, id, d.LockedUntil, d.Receives, round)
				}
			}
		}
		equal(t, fmt.Sprintf("max %d: received, in order", max), got, want)
		now = now.Add(lockFor) // every lock ends: all receivable again
	}

	// Deliveries ended on the way take no bytes: two received too often,
	// due again ahead of three of 3 MiB: the receive ends them and
	// returns the first two of 3 MiB.
	q := b.pullSub(true)
	var ended, big []string
	for range 2 {
		ev, _ := b.enqueue(b.now, q)
		ended = append(ended, ev.Deliveries[0].ID)
	}
	req := receiveReq(q, b.now, 10)
	req.MaxReceives = 1
	equal(t, "first receive", receivedIDs(b.receiveWith(req).Received), ended)
	req.Now, req.Max = b.at(lockFor), 1000 // the locks end: due again
	for range 3 {
		ev := b.event(req.Now, q)
		ev.Payload = filler(3 * mib)
		ev.Deliveries[0].Queued = true
		b.publish(ev)
		big = append(big, ev.Deliveries[0].ID)
	}
	res := b.receiveWith(req)
	equal(t, "past the ended ones", receivedIDs(res.Received), big[:2])
	equal(t, "ended", deliveryIDs(res.Ended), ended)
	equal(t, "the rest", receivedIDs(b.receiveWith(req).Received), big[2:])
}

func testConcurrentReceivesDisjoint(t *testing.T, b *bundle) {
	CheckReceivesDisjoint(t, b.s)
}

// testLockExpiry: an expired lock makes the delivery receivable again,
// under a new token; the old token holds nothing.
func testLockExpiry(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	first := b.receive(p, b.now, 1).Received[0]
	end := b.at(lockFor)
	if next := b.receiveNone(p, end.Add(-time.Millisecond)); !next.Equal(end) {
		t.Fatalf("NextAt = %v, want %v", next, end)
	}
	res := b.receive(p, end, 10)
	equal(t, "received again", receivedIDs(res.Received), []string{id})
	again := res.Received[0]
	if again.Receives != 2 || !again.LockedUntil.Equal(end.Add(lockFor)) || again.LockToken == first.LockToken || res.ExpiredLocks != 1 {
		t.Fatalf("received again: %+v, token %q (first %q), expired locks %d; want 2 receives, a new token, 1 expired lock",
			again.Delivery, again.LockToken, first.LockToken, res.ExpiredLocks)
	}
	settled(t, "acknowledge with the old token", b.settle(p, store.Acknowledge, end, first.LockToken), store.ErrLockLost)
	settled(t, "acknowledge with the new token", b.settle(p, store.Acknowledge, end, again.LockToken), nil)
}

// testAcknowledge: the delivery is delivered, its lock cleared; a token
// settles once (a repeat in the same call holds nothing).
func testAcknowledge(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	d1, d2 := b.queue(p, b.now), b.queue(p, b.at(time.Millisecond))
	res := b.receive(p, b.at(time.Millisecond), 10)
	equal(t, "received", receivedIDs(res.Received), []string{d1, d2})
	tok := res.Received[0].LockToken
	at := b.at(time.Second)
	settled(t, "acknowledge", b.settle(p, store.Acknowledge, at, tok, tok), nil, store.ErrLockLost)
	want := res.Received[0].Delivery
	want.Status, want.DeliveredAt, want.LockedUntil = delivery.StatusDelivered, at, time.Time{}
	got := b.get(d1)
	want.NextAttemptAt = got.NextAttemptAt // not meaningful once finished
	equal(t, "acknowledged", got, want)
	settled(t, "acknowledge again", b.settle(p, store.Acknowledge, at, tok), store.ErrLockLost)
	b.countQueued(1)
	// Only the other one comes back when its lock expires.
	res = b.receive(p, b.at(time.Hour), 10)
	equal(t, "received after the locks' end", receivedIDs(res.Received), []string{d2})
	if res.ExpiredLocks != 1 {
		t.Fatalf("expired locks %d, want 1", res.ExpiredLocks)
	}
}

// testReleaseLock: a released delivery is receivable again after the
// delay (at once without), and its lock counts as settled.
func testReleaseLock(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	tok := b.receive(p, b.now, 1).Received[0].LockToken
	at := b.at(time.Second)
	settled(t, "release", b.settleWith(store.SettleRequest{SubscriptionID: p.ID, Action: store.Release,
		Tokens: []string{tok, tok}, Now: at, Delay: time.Minute}), nil, store.ErrLockLost)
	d := b.get(id)
	if d.Status != delivery.StatusQueued || !d.LockedUntil.IsZero() || !d.NextAttemptAt.Equal(at.Add(time.Minute)) || d.Receives != 1 {
		t.Fatalf("released: %+v; want queued, unlocked, due at %v, 1 receive", d, at.Add(time.Minute))
	}
	if next := b.receiveNone(p, at.Add(time.Minute-time.Millisecond)); !next.Equal(at.Add(time.Minute)) {
		t.Fatalf("NextAt after a release = %v, want %v", next, at.Add(time.Minute))
	}
	res := b.receive(p, at.Add(time.Minute), 10)
	equal(t, "received after the delay", receivedIDs(res.Received), []string{id})
	if res.Received[0].Receives != 2 || res.ExpiredLocks != 0 {
		t.Fatalf("received %+v, expired locks %d; want 2 receives, 0", res.Received[0].Delivery, res.ExpiredLocks)
	}
	// Without a delay: at once.
	at = at.Add(time.Minute + time.Second)
	settled(t, "release", b.settle(p, store.Release, at, res.Received[0].LockToken), nil)
	equal(t, "received at once", receivedIDs(b.receive(p, at, 10).Received), []string{id})
}

// testReject: rejected deliveries are dead-lettered with delivery.ReasonRejected,
// or dropped without dead-lettering.
func testReject(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	d1, d2 := b.queue(p, b.now), b.queue(p, b.at(time.Millisecond))
	res := b.receive(p, b.at(time.Millisecond), 10)
	equal(t, "received", receivedIDs(res.Received), []string{d1, d2})
	at := b.at(time.Second)
	settled(t, "reject", b.settleWith(store.SettleRequest{SubscriptionID: p.ID, Action: store.Reject,
		Tokens: []string{res.Received[0].LockToken}, Now: at, DeadLetter: true}), nil)
	settled(t, "reject", b.settleWith(store.SettleRequest{SubscriptionID: p.ID, Action: store.Reject,
		Tokens: []string{res.Received[1].LockToken}, Now: at, DeadLetter: false}), nil)
	for i, status := range []delivery.Status{delivery.StatusDeadLettered, delivery.StatusDropped} {
		want := res.Received[i].Delivery
		want.Status, want.DeadLetterReason, want.LockedUntil = status, delivery.ReasonRejected, time.Time{}
		got := b.get(want.ID)
		want.NextAttemptAt = got.NextAttemptAt
		equal(t, "rejected", got, want)
	}
	dls, _, err := b.s.ListDeadLetters(b.ctx, store.DeadLetterFilter{SubscriptionID: p.ID})
	if err != nil || len(dls) != 1 || dls[0].ID != d1 {
		t.Fatalf("ListDeadLetters = %+v, %v; want [%s]", dls, err, d1)
	}
	b.countQueued(0)
	if next := b.receiveNone(p, b.at(time.Hour)); !next.IsZero() {
		t.Fatalf("NextAt = %v, want zero", next)
	}
}

// testRenew: a renewed lock lasts LockFor from the renewal; renewing twice
// in one call is fine.
func testRenew(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	tok := b.receive(p, b.now, 1).Received[0].LockToken
	at := b.at(20 * time.Second)
	end := at.Add(time.Minute)
	settled(t, "renew", b.settleWith(store.SettleRequest{SubscriptionID: p.ID, Action: store.Renew,
		Tokens: []string{tok, tok}, Now: at, LockFor: time.Minute}), nil, nil)
	if d := b.get(id); !d.LockedUntil.Equal(end) || !d.NextAttemptAt.Equal(end) || d.Receives != 1 || d.Status != delivery.StatusQueued {
		t.Fatalf("renewed: %+v; want locked until %v", d, end)
	}
	if next := b.receiveNone(p, end.Add(-time.Millisecond)); !next.Equal(end) {
		t.Fatalf("NextAt of a renewed lock = %v, want %v", next, end)
	}
	// Past the first lock's end, the token still holds.
	settled(t, "acknowledge", b.settle(p, store.Acknowledge, end.Add(-time.Millisecond), tok), nil)
}

// testSettleExpired: no action applies once the lock has ended (at its
// end exactly too), and nothing changes.
func testSettleExpired(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	tok := b.receive(p, b.now, 1).Received[0].LockToken
	before := b.get(id)
	end := b.at(lockFor)
	for _, action := range []store.LockAction{store.Acknowledge, store.Release, store.Reject, store.Renew} {
		for _, at := range []time.Time{end, end.Add(time.Hour)} {
			settled(t, fmt.Sprintf("action %d at %v", action, at), b.settle(p, action, at, tok), store.ErrLockLost)
		}
	}
	equal(t, "delivery after settling an expired lock", b.get(id), before)
}

// testSettleOtherSubscription: a token settles only under its
// subscription; what is not a live token holds nothing, and the others in
// the call are applied.
func testSettleOtherSubscription(t *testing.T, b *bundle) {
	p, q := b.pullSub(true), b.pullSub(true)
	dp, dq := b.queue(p, b.now), b.queue(q, b.now)
	tp := b.receive(p, b.now, 1).Received[0].LockToken
	tq := b.receive(q, b.now, 1).Received[0].LockToken
	lost := store.ErrLockLost
	settled(t, "settle under q", b.settle(q, store.Acknowledge, b.now, tp, "", "garbage", "dlv_unknown.ABCDEF", dq+".WRONG", tq),
		lost, lost, lost, lost, lost, nil)
	if d := b.get(dp); d.Status != delivery.StatusQueued {
		t.Fatalf("p's delivery settled under q: %+v", d)
	}
	if d := b.get(dq); d.Status != delivery.StatusDelivered {
		t.Fatalf("q's delivery: %+v", d)
	}
	settled(t, "settle under p", b.settle(p, store.Acknowledge, b.now, tp), nil)
	res, err := b.s.Settle(b.ctx, store.SettleRequest{SubscriptionID: p.ID, Action: store.Acknowledge, Now: b.now})
	if err != nil || len(res) != 0 {
		t.Fatalf("Settle without tokens = %v, %v", res, err)
	}
}

// testMaxReceives: a delivery received MaxReceives times ends instead of
// being received again (dead-lettered or dropped); deliveries ended do not
// take the place of those returned.
func testMaxReceives(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	req := receiveReq(p, b.now, 10)
	req.MaxReceives = 2
	for i := range 2 {
		req.Now = b.at(time.Duration(i) * lockFor)
		equal(t, fmt.Sprintf("receive %d", i+1), receivedIDs(b.receiveWith(req).Received), []string{id})
	}
	req.Now = b.at(2 * lockFor)
	res := b.receiveWith(req)
	if len(res.Received) != 0 || len(res.Ended) != 1 || res.ExpiredLocks != 0 || !res.NextAt.IsZero() {
		t.Fatalf("third receive: received %v, ended %+v, expired locks %d, NextAt %v; want it ended, nothing left",
			receivedIDs(res.Received), res.Ended, res.ExpiredLocks, res.NextAt)
	}
	got := b.get(id)
	if got.Status != delivery.StatusDeadLettered || got.DeadLetterReason != reasonMaxReceives || got.Receives != 2 || !got.LockedUntil.IsZero() {
		t.Fatalf("ended: %+v; want dead-lettered, %s, 2 receives, unlocked", got, reasonMaxReceives)
	}
	equal(t, "Ended", res.Ended[0], got)

	// Without dead-lettering: dropped. Two exhausted deliveries ahead of a
	// fresh one: Max 1 still returns the fresh one.
	q := b.pullSub(false)
	x1, x2 := b.queue(q, b.now), b.queue(q, b.now)
	req = receiveReq(q, b.now, 10)
	req.MaxReceives = 1
	equal(t, "first receive", sortedCopy(receivedIDs(b.receiveWith(req).Received)), sortedCopy([]string{x1, x2}))
	late := b.at(lockFor + time.Millisecond)
	x3 := b.queue(q, late)
	req.Now, req.Max = late, 1
	res = b.receiveWith(req)
	equal(t, "received past the exhausted ones", receivedIDs(res.Received), []string{x3})
	equal(t, "ended", sortedCopy(deliveryIDs(res.Ended)), sortedCopy([]string{x1, x2}))
	for _, e := range res.Ended {
		if e.Status != delivery.StatusDropped || e.DeadLetterReason != reasonMaxReceives {
			t.Fatalf("ended %+v; want dropped, %s", e, reasonMaxReceives)
		}
		equal(t, "ended", b.get(e.ID), e)
	}
}

// testReceiveTTL: a delivery whose round started TTL or more before now
// ends instead of being received.
func testReceiveTTL(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	old := b.queue(p, b.now)
	young := b.queue(p, b.at(time.Hour))
	req := receiveReq(p, b.at(time.Hour), 10)
	req.TTL = time.Hour
	res := b.receiveWith(req)
	equal(t, "received", receivedIDs(res.Received), []string{young})
	equal(t, "ended", deliveryIDs(res.Ended), []string{old})
	if e := res.Ended[0]; e.Status != delivery.StatusDeadLettered || e.DeadLetterReason != reasonTTL {
		t.Fatalf("ended %+v; want dead-lettered, %s", e, reasonTTL)
	}
	equal(t, "ended", b.get(old), res.Ended[0])
	req.Now = b.at(2 * time.Hour)
	res = b.receiveWith(req)
	if len(res.Received) != 0 || len(res.Ended) != 1 || res.Ended[0].ID != young || res.ExpiredLocks != 0 {
		t.Fatalf("receive at 2h: received %v, ended %v, expired locks %d; want %s ended", receivedIDs(res.Received),
			deliveryIDs(res.Ended), res.ExpiredLocks, young)
	}
}

// testCountQueued: every subscription's queued deliveries, locked or not.
func testCountQueued(t *testing.T, b *bundle) {
	b.countQueued(0)
	p, q, a := b.pullSub(true), b.pullSub(true), b.sub("https://a.example/hook")
	for range 3 {
		b.queue(p, b.now)
	}
	b.queue(q, b.now)
	b.queue(a, b.now) // a push subscription's (deactivated)
	b.deliver(a, b.now)
	b.countQueued(5)
	res := b.receive(p, b.now, 3)
	b.countQueued(5)
	settled(t, "acknowledge", b.settle(p, store.Acknowledge, b.now, res.Received[0].LockToken), nil)
	settled(t, "reject", b.settle(p, store.Reject, b.now, res.Received[1].LockToken), nil)
	settled(t, "release", b.settle(p, store.Release, b.now, res.Received[2].LockToken), nil)
	b.countQueued(3)
}

// testListQueuedByEndpoint: ListDeliveries with an endpoint and the queued
// status lists that endpoint's queued deliveries, newest first, in pages.
func testListQueuedByEndpoint(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	other := b.account("other")
	oa := b.subIn(other.ID, a.URL) // the same URL in another account: another endpoint
	var queued []string
	for i := range 5 {
		queued = append(queued, b.queue(a, b.at(time.Duration(i)*time.Second)))
	}
	b.queue(c, b.now)
	b.queue(oa, b.now)
	b.deliver(a, b.now)
	for _, f := range []store.DeliveryFilter{
		{AccountID: account.DefaultID, EndpointID: a.EndpointID, Status: delivery.StatusQueued},
		{EndpointID: a.EndpointID, Status: delivery.StatusQueued},
		{AccountID: account.DefaultID, SubscriptionID: a.ID, EndpointID: a.EndpointID, Status: delivery.StatusQueued},
	} {
		for _, limit := range []int{1, 2, 5, 6} {
			got := allPages(t, limit, func(p store.Page) ([]string, string, error) {
				f.Page = p
				ds, next, err := b.s.ListDeliveries(b.ctx, f)
				for _, d := range ds {
					if d.Status != delivery.StatusQueued || d.EndpointID != a.EndpointID {
						t.Fatalf("listed %+v", d)
					}
				}
				return deliveryIDs(ds), next, err
			})
			equal(t, fmt.Sprintf("queued of %s by %+v, limit %d", a.EndpointID, f, limit), got, reversed(queued))
		}
	}
	// Another account's view of the endpoint is empty.
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{AccountID: other.ID, EndpointID: a.EndpointID, Status: delivery.StatusQueued})
	if err != nil || len(ds) != 0 {
		t.Fatalf("another account's list = %v, %v; want none", deliveryIDs(ds), err)
	}
	// A settled delivery leaves the list.
	res := b.receive(a, b.at(time.Hour), 1)
	settled(t, "acknowledge", b.settle(a, store.Acknowledge, b.at(time.Hour), res.Received[0].LockToken), nil)
	ds, _, err = b.s.ListDeliveries(b.ctx, store.DeliveryFilter{EndpointID: a.EndpointID, Status: delivery.StatusQueued})
	if err != nil || len(ds) != 4 {
		t.Fatalf("after an acknowledgement: %v, %v; want 4", deliveryIDs(ds), err)
	}
}

// testPullNoEndpoint: a pull subscription has no endpoint row: creating,
// updating and deleting it leaves the endpoints as they are.
func testPullNoEndpoint(t *testing.T, b *bundle) {
	endpoints := func() []string {
		t.Helper()
		eps, err := b.s.AllEndpoints(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range eps {
			out = append(out, e.ID)
		}
		return out
	}
	p := b.pullSub(true)
	got, err := b.s.GetSubscription(b.ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.Version = got.Version
	equal(t, "pull subscription", got, p)
	equal(t, "endpoints", endpoints(), []string{})
	a := b.sub("https://a.example/hook")
	equal(t, "endpoints", endpoints(), []string{a.EndpointID})
	p.Name, p.EventTypes = "renamed", []string{"invoice.voided"}
	b.updateSub(p)
	if got, err := b.s.GetSubscription(b.ctx, p.ID); err != nil || got.Name != "renamed" || got.EndpointID != "" || got.DeliveryMode != subscription.ModePull {
		t.Fatalf("updated pull subscription: %+v, %v", got, err)
	}
	equal(t, "endpoints after an update", endpoints(), []string{a.EndpointID})
	id := b.queue(p, b.now)
	b.deleteSub(p)
	equal(t, "endpoints after a delete", endpoints(), []string{a.EndpointID})
	if d := b.get(id); d.Status != delivery.StatusDropped || d.DeadLetterReason != delivery.ReasonSubscriptionDeleted {
		t.Fatalf("queued delivery of a deleted pull subscription: %+v", d)
	}
	b.countQueued(0)
}
