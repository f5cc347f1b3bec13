package enginetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

func testPublishStores(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	ev1 := b.event(b.at(time.Second), a, c)
	ev2 := b.event(b.at(2 * time.Second)) // no deliveries
	res := b.publish(ev1, ev2)
	if res[0].Duplicate || res[1].Duplicate {
		t.Fatalf("results %+v: want no duplicates", res)
	}
	if res[0].Seq <= 0 || res[1].Seq <= res[0].Seq {
		t.Fatalf("results %+v: want positive, increasing sequences", res)
	}
	for i, ev := range []store.NewEvent{ev1, ev2} {
		got, err := b.s.GetEvent(b.ctx, res[i].Seq)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "event", got, store.StoredEvent{
			Seq: res[i].Seq, AccountID: account.DefaultID, ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject,
			Payload: ev.Payload, PublishedAt: ev.PublishedAt,
		})
	}
	for i := range ev1.Deliveries {
		equal(t, "delivery", b.get(ev1.Deliveries[i].ID), pendingDelivery(ev1, i, res[0].Seq))
	}
	if _, err := b.s.GetEvent(b.ctx, res[1].Seq+1000); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEvent(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := b.s.GetDelivery(b.ctx, "dlv_unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetDelivery(unknown) = %v, want ErrNotFound", err)
	}
}

func testPublishDuplicateAcrossCalls(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev := b.event(b.now, a)
	first := b.publish(ev)[0]

	again := ev
	again.Payload = []byte(`{"changed":true}`)
	again.PublishedAt = b.at(time.Minute)
	again.Deliveries = []store.NewDelivery{{ID: b.id("dlv_"), SubscriptionID: a.ID, EndpointID: a.EndpointID}}
	fresh := b.event(b.at(time.Minute), a)
	res := b.publish(again, fresh)

	equal(t, "duplicate result", res[0], store.PublishResult{Seq: first.Seq, Duplicate: true})
	if res[1].Duplicate || res[1].Seq <= first.Seq {
		t.Fatalf("new event after a duplicate: %+v", res[1])
	}
	if _, err := b.s.GetDelivery(b.ctx, again.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("duplicate's delivery was written (err %v)", err)
	}
	stored, err := b.s.GetEvent(b.ctx, first.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if string(stored.Payload) != string(ev.Payload) || !stored.PublishedAt.Equal(ev.PublishedAt) {
		t.Fatalf("duplicate changed the stored event: %+v", stored)
	}
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{SubscriptionID: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "deliveries", deliveryIDs(ds), []string{fresh.Deliveries[0].ID, ev.Deliveries[0].ID})
}

func testPublishDuplicateWithinCall(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev := b.event(b.now, a)
	dup := ev
	dup.Deliveries = []store.NewDelivery{{ID: b.id("dlv_"), SubscriptionID: a.ID, EndpointID: a.EndpointID}}
	other := b.event(b.now, a)
	res := b.publish(ev, dup, other)
	if res[0].Duplicate || res[2].Duplicate {
		t.Fatalf("results %+v: only the second occurrence is a duplicate", res)
	}
	equal(t, "second occurrence", res[1], store.PublishResult{Seq: res[0].Seq, Duplicate: true})
	if res[2].Seq == res[0].Seq {
		t.Fatalf("distinct events share seq %d", res[0].Seq)
	}
	if _, err := b.s.GetDelivery(b.ctx, dup.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("duplicate's delivery was written (err %v)", err)
	}
	b.get(ev.Deliveries[0].ID)
	b.get(other.Deliveries[0].ID)
}

func testPublishSameIDOtherSource(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev := b.event(b.now, a)
	other := ev
	other.Source = "/other"
	other.Deliveries = []store.NewDelivery{{ID: b.id("dlv_"), SubscriptionID: a.ID, EndpointID: a.EndpointID}}
	res := b.publish(ev, other)
	if res[0].Duplicate || res[1].Duplicate || res[0].Seq == res[1].Seq {
		t.Fatalf("(id, source) identifies an event; got %+v", res)
	}
	equal(t, "delivery", b.get(other.Deliveries[0].ID), pendingDelivery(other, 0, res[1].Seq))
}

func testPublishClaimed(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	ev := b.event(b.now, a, c)
	ev.Deliveries[0].Claimed = true
	seq := b.publish(ev)[0].Seq
	claimedID, freeID := ev.Deliveries[0].ID, ev.Deliveries[1].ID

	// The claimed delivery is leased: no claimer gets it, no due time shows it.
	if got := b.claim(a.EndpointID, b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("ClaimDue returned leased deliveries %v", claimedIDs(got))
	}
	if _, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || ok {
		t.Fatalf("NextDue(leased only) = ok %v, err %v; want none", ok, err)
	}
	due, err := b.s.DueEndpoints(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "due endpoints", due, []store.EndpointDue{{EndpointID: c.EndpointID, NextDue: b.now}})
	// It is still pending, and counted.
	equal(t, "claimed delivery", b.get(claimedID), pendingDelivery(ev, 0, seq))
	fresh, retry, err := b.s.CountPending(b.ctx)
	if err != nil || fresh != 2 || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want 2, 0", fresh, retry, err)
	}
	// The unclaimed one is due for the loader.
	equal(t, "claimed", claimedIDs(b.claim(c.EndpointID, b.now, 10)), []string{freeID})
	// Released, the claimed one becomes due too.
	if err := b.s.Release(b.ctx, []string{claimedID}, b.lease.Owner); err != nil {
		t.Fatal(err)
	}
	equal(t, "claimed after release", claimedIDs(b.claim(a.EndpointID, b.now, 10)), []string{claimedID})
}

func testPublishEmpty(t *testing.T, b *bundle) {
	res, err := b.s.Publish(b.ctx, nil, store.PublishOptions{Lease: b.lease})
	if err != nil || len(res) != 0 {
		t.Fatalf("Publish(nil) = %v, %v; want no results", res, err)
	}
}

func testPublishCanceled(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev := b.event(b.now, a)
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	if _, err := b.s.Publish(ctx, []store.NewEvent{ev}, store.PublishOptions{Lease: b.lease}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish(canceled) = %v, want context.Canceled", err)
	}
	if _, err := b.s.GetDelivery(b.ctx, ev.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("canceled publish wrote its delivery (err %v)", err)
	}
	if res := b.publish(ev); res[0].Duplicate {
		t.Fatal("canceled publish stored its event")
	}
}

// testPublishSeqInputOrder: sequences increase in input order within a
// call, whatever the order of the events' keys; a duplicate within the call
// reports the first occurrence's sequence.
func testPublishSeqInputOrder(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	evs := make([]store.NewEvent, 200)
	for i := range evs {
		evs[i] = b.event(b.now, a)
		evs[i].ID = fmt.Sprintf("z-%03d", len(evs)-1-i) // reverse lexical order
	}
	evs[150].ID, evs[150].Source = evs[20].ID, evs[20].Source
	evs[150].Deliveries = nil
	res := b.publish(evs...)
	var last int64
	for i, r := range res {
		if i == 150 {
			equal(t, "duplicate within the call", r, store.PublishResult{Seq: res[20].Seq, Duplicate: true})
			continue
		}
		if r.Duplicate || r.Seq <= last {
			t.Fatalf("result %d = %+v after seq %d: want new, increasing sequences", i, r, last)
		}
		last = r.Seq
		e, err := b.s.GetEvent(b.ctx, r.Seq)
		if err != nil || e.ID != evs[i].ID {
			t.Fatalf("event %d: %+v, %v; want %s", r.Seq, e, err, evs[i].ID)
		}
		equal(t, "delivery", b.get(evs[i].Deliveries[0].ID), pendingDelivery(evs[i], 0, r.Seq))
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
	countQueued(b, 1)
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != 1 || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want 1, 0", fresh, retry, err)
	}
	// A duplicate writes nothing.
	if res, err := b.s.Publish(b.ctx, []store.NewEvent{ev}, store.PublishOptions{}); err != nil || !res[0].Duplicate {
		t.Fatalf("Publish(duplicate) = %+v, %v", res, err)
	}
	countQueued(b, 1)

	if next := receiveNone(b, p, b.at(time.Second-time.Millisecond)); !next.Equal(b.at(time.Second)) {
		t.Fatalf("NextAt before the publish time = %v, want %v", next, b.at(time.Second))
	}
	res := receive(b, p, b.at(time.Second), 10)
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
	countQueued(b, 1) // locked, still queued
	if next := receiveNone(b, p, b.at(time.Second)); !next.Equal(end) {
		t.Fatalf("NextAt while locked = %v, want the lock's end %v", next, end)
	}
	// The push subscription has nothing queued; nothing pull is claimed.
	if next := receiveNone(b, a, b.at(time.Hour)); !next.IsZero() {
		t.Fatalf("NextAt of a subscription with nothing queued = %v, want zero", next)
	}
	if got := b.claim("", b.at(time.Hour), 10); len(got) != 0 {
		t.Fatalf("ClaimDue(\"\") claimed %v", claimedIDs(got))
	}
	equal(t, "claimed push delivery", claimedIDs(b.claim(a.EndpointID, b.at(time.Hour), 10)), []string{ev.Deliveries[1].ID})
}

// testTenantDedup: the same (source, id) published in two accounts makes
// two events; repeated in one account it is a duplicate of that
// account's.
func testTenantDedup(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	a, x := b.sub("https://a.example/hook"), b.subIn(acc.ID, "https://x.example/hook")
	inDefault := b.event(b.now, a)
	inAcc := b.event(b.now, x)
	inAcc.ID, inAcc.Source = inDefault.ID, inDefault.Source
	res := b.publish(inDefault, inAcc)
	if res[0].Duplicate || res[1].Duplicate || res[0].Seq == res[1].Seq {
		t.Fatalf("one (source, id) in two accounts: %+v; want two new events", res)
	}
	for i, ev := range []store.NewEvent{inDefault, inAcc} {
		e, err := b.s.GetEvent(b.ctx, res[i].Seq)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "event", e, store.StoredEvent{Seq: res[i].Seq, AccountID: ev.AccountID, ID: ev.ID, Source: ev.Source,
			Type: ev.Type, Subject: ev.Subject, Payload: ev.Payload, PublishedAt: ev.PublishedAt})
		equal(t, "delivery", b.get(ev.Deliveries[0].ID), pendingDelivery(ev, 0, res[i].Seq))
	}

	// Again in each account (and in the default one without naming it):
	// duplicates of that account's event.
	again := func(ev store.NewEvent, account string) store.NewEvent {
		ev.AccountID = account
		ev.Deliveries = []store.NewDelivery{{ID: b.id("dlv_"), SubscriptionID: ev.Deliveries[0].SubscriptionID, EndpointID: ev.Deliveries[0].EndpointID}}
		return ev
	}
	dups := []store.NewEvent{again(inAcc, acc.ID), again(inDefault, ""), again(inDefault, account.DefaultID)}
	got := b.publish(dups...)
	equal(t, "duplicates", got, []store.PublishResult{{Seq: res[1].Seq, Duplicate: true}, {Seq: res[0].Seq, Duplicate: true},
		{Seq: res[0].Seq, Duplicate: true}})
	for _, ev := range dups {
		if _, err := b.s.GetDelivery(b.ctx, ev.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a duplicate's delivery was written (%v)", err)
		}
	}
	// A third account is new to it too, within one call as well.
	other := b.account("other")
	third := inAcc
	third.AccountID, third.Deliveries = other.ID, nil
	got = b.publish(third, third)
	if got[0].Duplicate || got[0].Seq == res[0].Seq || got[0].Seq == res[1].Seq || got[1] != (store.PublishResult{Seq: got[0].Seq, Duplicate: true}) {
		t.Fatalf("the event in a third account: %+v", got)
	}
}

// queuedDelivery is the state Publish gives a queued delivery of ev.
func queuedDelivery(ev store.NewEvent, i int, seq int64) delivery.Delivery {
	d := pendingDelivery(ev, i, seq)
	d.Status = delivery.StatusQueued
	return d
}
