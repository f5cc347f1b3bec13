package enginetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// The reasons Receive ends deliveries with (retry.ReasonMaxAttempts and
// retry.ReasonTTL).
const (
	reasonMaxReceives = "MaxDeliveryAttemptsExceeded"
	reasonTTL         = "TimeToLiveExceeded"
)

// lockFor is the lock duration of the suite's receives.
const lockFor = 30 * time.Second

// enqueue publishes one event at `at` with a queued delivery to each of
// subs, and returns it and its seq.
func enqueue(b *bundle, at time.Time, subs ...subscription.Subscription) (store.NewEvent, int64) {
	b.t.Helper()
	ev := b.event(at, subs...)
	for i := range ev.Deliveries {
		ev.Deliveries[i].Queued = true
	}
	return ev, b.publish(ev)[0].Seq
}

// receiveReq asks for up to max of sub's deliveries at now, locked for
// lockFor, ended as sub's DeadLetter says.
func receiveReq(sub subscription.Subscription, now time.Time, max int) store.ReceiveRequest {
	return store.ReceiveRequest{SubscriptionID: sub.ID, Now: now, Max: max, LockFor: lockFor, DeadLetter: sub.DeadLetter}
}

func receiveWith(b *bundle, r store.ReceiveRequest) store.ReceiveResult {
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

func receive(b *bundle, sub subscription.Subscription, now time.Time, max int) store.ReceiveResult {
	b.t.Helper()
	return receiveWith(b, receiveReq(sub, now, max))
}

// receiveNone receives from sub at now, fails the test if it gets
// anything, and returns NextAt.
func receiveNone(b *bundle, sub subscription.Subscription, now time.Time) time.Time {
	b.t.Helper()
	res := receive(b, sub, now, 10)
	if len(res.Received)+len(res.Ended) != 0 {
		b.t.Fatalf("Receive at %v: received %v, ended %v; want nothing", now, receivedIDs(res.Received), deliveryIDs(res.Ended))
	}
	return res.NextAt
}

func settleWith(b *bundle, r store.SettleRequest) []error {
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
func settle(b *bundle, sub subscription.Subscription, action store.LockAction, now time.Time, tokens ...string) []error {
	b.t.Helper()
	return settleWith(b, store.SettleRequest{SubscriptionID: sub.ID, Action: action, Tokens: tokens, Now: now,
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

func countQueued(b *bundle, want int64) {
	b.t.Helper()
	if n, err := b.s.CountQueued(b.ctx); err != nil || n != want {
		b.t.Fatalf("CountQueued = %d, %v; want %d", n, err, want)
	}
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
	res := receive(b, p, now, 2)
	equal(t, "first receive", receivedIDs(res.Received), []string{d1, d2})
	if !res.NextAt.Equal(b.at(3 * time.Second)) {
		t.Fatalf("NextAt with receivable deliveries left = %v, want %v", res.NextAt, b.at(3*time.Second))
	}
	res = receive(b, p, now, 10)
	equal(t, "second receive", receivedIDs(res.Received), []string{d3, d4})
	if !res.NextAt.Equal(now.Add(lockFor)) {
		t.Fatalf("NextAt = %v, want the first lock's end %v", res.NextAt, now.Add(lockFor))
	}
	if next := receiveNone(b, p, now); !next.Equal(now.Add(lockFor)) {
		t.Fatalf("NextAt = %v, want %v", next, now.Add(lockFor))
	}
}

// testReceiveBytes: Receive stops before the delivery whose payload would
// bring those it returns over store.MaxPageBytes (by default), unless it
// is the first (one larger comes alone), and locks nothing it does not
// return: the next receives, at the same time, get the rest in order,
// each delivery once, with its payload. A delivery it ends takes no
// bytes.
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
			res := receive(b, p, now, max)
			if len(res.Received) == 0 {
				t.Fatalf("max %d, receive %d: nothing, with %d of %d deliveries received", max, call, len(got), len(want))
			}
			var total int64
			for i, r := range res.Received {
				if string(r.Payload) != string(payloads[r.ID]) {
					t.Fatalf("max %d, receive %d: %s with a payload of %d bytes, want its %d", max, call, r.ID, len(r.Payload), len(payloads[r.ID]))
				}
				total += int64(len(r.Payload))
				if i > 0 && total > store.MaxPageBytes {
					t.Fatalf("max %d, receive %d: delivery %d brings the answer to %d bytes, over %d", max, call, i, total, store.MaxPageBytes)
				}
				got = append(got, r.ID)
			}
			if rest := len(want) - len(got); rest > 0 && len(res.Received) < max && total+int64(len(payloads[want[len(got)]])) <= store.MaxPageBytes {
				t.Fatalf("max %d, receive %d: %d deliveries of %d bytes while the next, of %d, fits; want %d or the bound", max, call,
					len(res.Received), total, len(payloads[want[len(got)]]), max)
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
	// returns the first of 3 MiB alone (a second would cross the bound).
	q := b.pullSub(true)
	var ended, big []string
	for range 2 {
		ev, _ := enqueue(b, b.now, q)
		ended = append(ended, ev.Deliveries[0].ID)
	}
	req := receiveReq(q, b.now, 10)
	req.MaxReceives = 1
	equal(t, "first receive", receivedIDs(receiveWith(b, req).Received), ended)
	req.Now, req.Max = b.at(lockFor), 1000 // the locks end: due again
	for range 3 {
		ev := b.event(req.Now, q)
		ev.Payload = filler(3 * mib)
		ev.Deliveries[0].Queued = true
		b.publish(ev)
		big = append(big, ev.Deliveries[0].ID)
	}
	res := receiveWith(b, req)
	equal(t, "past the ended ones", receivedIDs(res.Received), big[:1])
	equal(t, "ended", deliveryIDs(res.Ended), ended)
	equal(t, "the next", receivedIDs(receiveWith(b, req).Received), big[1:2])
	equal(t, "the last", receivedIDs(receiveWith(b, req).Received), big[2:])
}

// testReceiveAnswerBytes: a request's own bound (MaxBytes, each delivery
// counting ItemBytes of its ID and payload) decides: deliveries of 1,000
// bytes counted as 1,100 against 2,500 come two at a time, one counted
// over the bound comes alone when it is first and else waits for the next
// receive; ItemBytes is asked of each delivery it takes, with its ID and
// payload's bytes.
func testReceiveAnswerBytes(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	var want []string
	sizes := map[string]int64{}
	for i, n := range []int{1000, 1000, 1000, 3000, 1000, 1000} {
		ev := b.event(b.at(time.Duration(i)*time.Second), p)
		ev.Payload = filler(n)
		ev.Deliveries[0].Queued = true
		b.publish(ev)
		want = append(want, ev.Deliveries[0].ID)
		sizes[ev.Deliveries[0].ID] = int64(n)
	}
	asked := map[string]int64{}
	req := receiveReq(p, b.at(time.Hour), 1000)
	req.MaxBytes = 2500
	req.ItemBytes = func(id string, payload int64) int64 {
		asked[id] = payload
		return payload + 100
	}
	var answers [][]string
	for call := 0; call < len(want); call++ {
		got := receivedIDs(receiveWith(b, req).Received)
		if len(got) == 0 {
			break
		}
		answers = append(answers, got)
	}
	equal(t, "answers", fmt.Sprint(answers), fmt.Sprint([][]string{want[0:2], want[2:3], want[3:4], want[4:6]}))
	for _, id := range want {
		if asked[id] != sizes[id] {
			t.Errorf("ItemBytes asked about %s with %d payload bytes, want %d", id, asked[id], sizes[id])
		}
	}
}

func testConcurrentReceivesDisjoint(t *testing.T, b *bundle) {
	CheckReceivesDisjoint(t, b.s)
}

// testLockExpiry: an expired lock makes the delivery receivable again,
// under a new token; the old token holds nothing.
func testLockExpiry(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	first := receive(b, p, b.now, 1).Received[0]
	end := b.at(lockFor)
	if next := receiveNone(b, p, end.Add(-time.Millisecond)); !next.Equal(end) {
		t.Fatalf("NextAt = %v, want %v", next, end)
	}
	res := receive(b, p, end, 10)
	equal(t, "received again", receivedIDs(res.Received), []string{id})
	again := res.Received[0]
	if again.Receives != 2 || !again.LockedUntil.Equal(end.Add(lockFor)) || again.LockToken == first.LockToken || res.ExpiredLocks != 1 {
		t.Fatalf("received again: %+v, token %q (first %q), expired locks %d; want 2 receives, a new token, 1 expired lock",
			again.Delivery, again.LockToken, first.LockToken, res.ExpiredLocks)
	}
	settled(t, "acknowledge with the old token", settle(b, p, store.Acknowledge, end, first.LockToken), store.ErrLockLost)
	settled(t, "acknowledge with the new token", settle(b, p, store.Acknowledge, end, again.LockToken), nil)
}

// testAcknowledge: the delivery is delivered, its lock cleared; a token
// settles once (a repeat in the same call holds nothing).
func testAcknowledge(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	d1, d2 := b.queue(p, b.now), b.queue(p, b.at(time.Millisecond))
	res := receive(b, p, b.at(time.Millisecond), 10)
	equal(t, "received", receivedIDs(res.Received), []string{d1, d2})
	tok := res.Received[0].LockToken
	at := b.at(time.Second)
	settled(t, "acknowledge", settle(b, p, store.Acknowledge, at, tok, tok), nil, store.ErrLockLost)
	want := res.Received[0].Delivery
	want.Status, want.DeliveredAt, want.LockedUntil = delivery.StatusDelivered, at, time.Time{}
	got := b.get(d1)
	want.NextAttemptAt = got.NextAttemptAt // not meaningful once finished
	equal(t, "acknowledged", got, want)
	settled(t, "acknowledge again", settle(b, p, store.Acknowledge, at, tok), store.ErrLockLost)
	countQueued(b, 1)
	// Only the other one comes back when its lock expires.
	res = receive(b, p, b.at(time.Hour), 10)
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
	tok := receive(b, p, b.now, 1).Received[0].LockToken
	at := b.at(time.Second)
	settled(t, "release", settleWith(b, store.SettleRequest{SubscriptionID: p.ID, Action: store.Release,
		Tokens: []string{tok, tok}, Now: at, Delay: time.Minute}), nil, store.ErrLockLost)
	d := b.get(id)
	if d.Status != delivery.StatusQueued || !d.LockedUntil.IsZero() || !d.NextAttemptAt.Equal(at.Add(time.Minute)) || d.Receives != 1 {
		t.Fatalf("released: %+v; want queued, unlocked, due at %v, 1 receive", d, at.Add(time.Minute))
	}
	if next := receiveNone(b, p, at.Add(time.Minute-time.Millisecond)); !next.Equal(at.Add(time.Minute)) {
		t.Fatalf("NextAt after a release = %v, want %v", next, at.Add(time.Minute))
	}
	res := receive(b, p, at.Add(time.Minute), 10)
	equal(t, "received after the delay", receivedIDs(res.Received), []string{id})
	if res.Received[0].Receives != 2 || res.ExpiredLocks != 0 {
		t.Fatalf("received %+v, expired locks %d; want 2 receives, 0", res.Received[0].Delivery, res.ExpiredLocks)
	}
	// Without a delay: at once.
	at = at.Add(time.Minute + time.Second)
	settled(t, "release", settle(b, p, store.Release, at, res.Received[0].LockToken), nil)
	equal(t, "received at once", receivedIDs(receive(b, p, at, 10).Received), []string{id})
}

// testReject: rejected deliveries are dead-lettered with delivery.ReasonRejected,
// or dropped without dead-lettering.
func testReject(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	d1, d2 := b.queue(p, b.now), b.queue(p, b.at(time.Millisecond))
	res := receive(b, p, b.at(time.Millisecond), 10)
	equal(t, "received", receivedIDs(res.Received), []string{d1, d2})
	at := b.at(time.Second)
	settled(t, "reject", settleWith(b, store.SettleRequest{SubscriptionID: p.ID, Action: store.Reject,
		Tokens: []string{res.Received[0].LockToken}, Now: at, DeadLetter: true}), nil)
	settled(t, "reject", settleWith(b, store.SettleRequest{SubscriptionID: p.ID, Action: store.Reject,
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
	countQueued(b, 0)
	if next := receiveNone(b, p, b.at(time.Hour)); !next.IsZero() {
		t.Fatalf("NextAt = %v, want zero", next)
	}
}

// testRenew: a renewed lock lasts LockFor from the renewal; renewing twice
// in one call is fine.
func testRenew(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	tok := receive(b, p, b.now, 1).Received[0].LockToken
	at := b.at(20 * time.Second)
	end := at.Add(time.Minute)
	settled(t, "renew", settleWith(b, store.SettleRequest{SubscriptionID: p.ID, Action: store.Renew,
		Tokens: []string{tok, tok}, Now: at, LockFor: time.Minute}), nil, nil)
	if d := b.get(id); !d.LockedUntil.Equal(end) || !d.NextAttemptAt.Equal(end) || d.Receives != 1 || d.Status != delivery.StatusQueued {
		t.Fatalf("renewed: %+v; want locked until %v", d, end)
	}
	if next := receiveNone(b, p, end.Add(-time.Millisecond)); !next.Equal(end) {
		t.Fatalf("NextAt of a renewed lock = %v, want %v", next, end)
	}
	// Past the first lock's end, the token still holds.
	settled(t, "acknowledge", settle(b, p, store.Acknowledge, end.Add(-time.Millisecond), tok), nil)
}

// testSettleExpired: no action applies once the lock has ended (at its
// end exactly too), and nothing changes.
func testSettleExpired(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	id := b.queue(p, b.now)
	tok := receive(b, p, b.now, 1).Received[0].LockToken
	before := b.get(id)
	end := b.at(lockFor)
	for _, action := range []store.LockAction{store.Acknowledge, store.Release, store.Reject, store.Renew} {
		for _, at := range []time.Time{end, end.Add(time.Hour)} {
			settled(t, fmt.Sprintf("action %d at %v", action, at), settle(b, p, action, at, tok), store.ErrLockLost)
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
	tp := receive(b, p, b.now, 1).Received[0].LockToken
	tq := receive(b, q, b.now, 1).Received[0].LockToken
	lost := store.ErrLockLost
	settled(t, "settle under q", settle(b, q, store.Acknowledge, b.now, tp, "", "garbage", "dlv_unknown.ABCDEF", dq+".WRONG", tq),
		lost, lost, lost, lost, lost, nil)
	if d := b.get(dp); d.Status != delivery.StatusQueued {
		t.Fatalf("p's delivery settled under q: %+v", d)
	}
	if d := b.get(dq); d.Status != delivery.StatusDelivered {
		t.Fatalf("q's delivery: %+v", d)
	}
	settled(t, "settle under p", settle(b, p, store.Acknowledge, b.now, tp), nil)
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
		equal(t, fmt.Sprintf("receive %d", i+1), receivedIDs(receiveWith(b, req).Received), []string{id})
	}
	req.Now = b.at(2 * lockFor)
	res := receiveWith(b, req)
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
	equal(t, "first receive", sortedCopy(receivedIDs(receiveWith(b, req).Received)), sortedCopy([]string{x1, x2}))
	late := b.at(lockFor + time.Millisecond)
	x3 := b.queue(q, late)
	req.Now, req.Max = late, 1
	res = receiveWith(b, req)
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
	res := receiveWith(b, req)
	equal(t, "received", receivedIDs(res.Received), []string{young})
	equal(t, "ended", deliveryIDs(res.Ended), []string{old})
	if e := res.Ended[0]; e.Status != delivery.StatusDeadLettered || e.DeadLetterReason != reasonTTL {
		t.Fatalf("ended %+v; want dead-lettered, %s", e, reasonTTL)
	}
	equal(t, "ended", b.get(old), res.Ended[0])
	req.Now = b.at(2 * time.Hour)
	res = receiveWith(b, req)
	if len(res.Received) != 0 || len(res.Ended) != 1 || res.Ended[0].ID != young || res.ExpiredLocks != 0 {
		t.Fatalf("receive at 2h: received %v, ended %v, expired locks %d; want %s ended", receivedIDs(res.Received),
			deliveryIDs(res.Ended), res.ExpiredLocks, young)
	}
}
