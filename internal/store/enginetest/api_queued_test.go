package enginetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
)

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
	res := receive(b, a, b.at(time.Hour), 1)
	settled(t, "acknowledge", settle(b, a, store.Acknowledge, b.at(time.Hour), res.Received[0].LockToken), nil)
	ds, _, err = b.s.ListDeliveries(b.ctx, store.DeliveryFilter{EndpointID: a.EndpointID, Status: delivery.StatusQueued})
	if err != nil || len(ds) != 4 {
		t.Fatalf("after an acknowledgement: %v, %v; want 4", deliveryIDs(ds), err)
	}
}

// queuedItem is what ListQueued gives for delivery id of ev (stored at
// seq): the delivery as GetDelivery reads it, with its event.
func queuedItem(b *bundle, id string, ev store.NewEvent, seq int64) store.DeadLetter {
	b.t.Helper()
	return store.DeadLetter{Delivery: b.get(id), Event: store.StoredEvent{Seq: seq, AccountID: account.OrDefault(ev.AccountID),
		ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject, Payload: ev.Payload, PublishedAt: ev.PublishedAt}}
}

// listQueued lists every page of ListQueued with f and limit (allPages:
// full pages, a cursor only before more) and returns the items.
func listQueued(t *testing.T, b *bundle, f store.DeliveryFilter, limit int) []store.DeadLetter {
	t.Helper()
	var all []store.DeadLetter
	allPages(t, limit, func(p store.Page) ([]string, string, error) {
		f.Page = p
		qs, next, err := b.s.ListQueued(b.ctx, f)
		all = append(all, qs...)
		return make([]string, len(qs)), next, err
	})
	return all
}

// testListQueued: ListQueued lists the queued deliveries matching the
// filter (account, subscription, event id, endpoint), newest first, each
// with its event and its lock, in pages of any limit, whatever status the
// filter names; never a delivery in another status or of another account.
func testListQueued(t *testing.T, b *bundle) {
	other := b.account("other")
	p, a := b.pullSub(true), b.sub("https://a.example/hook")
	oa := b.subIn(other.ID, a.URL) // the same URL in another account: another endpoint
	ev1, seq1 := enqueue(b, b.now, p)
	shared, seqShared := enqueue(b, b.at(time.Second), p, a) // one event, two queued deliveries
	ev3, seq3 := enqueue(b, b.at(2*time.Second), a)
	evo, seqo := enqueue(b, b.at(3*time.Second), oa)
	// Received: the oldest two of p's are locked; one is acknowledged
	// (delivered, so no longer listed), the other stays locked.
	now := b.at(time.Minute)
	got := receive(b, p, now, 2).Received
	equal(t, "received", receivedIDs(got), []string{ev1.Deliveries[0].ID, shared.Deliveries[0].ID})
	settled(t, "acknowledge", settle(b, p, store.Acknowledge, now, got[1].LockToken), nil)
	// Not queued: pending, dead-lettered, delivered.
	c := b.sub("https://c.example/hook")
	b.deadAfterTwo(c, b.now)
	b.deliver(c, b.at(time.Hour))

	q1, qsa, q3, qo := ev1.Deliveries[0].ID, shared.Deliveries[1].ID, ev3.Deliveries[0].ID, evo.Deliveries[0].ID
	all := listQueued(t, b, store.DeliveryFilter{}, 100)
	equal(t, "every queued delivery", all, []store.DeadLetter{queuedItem(b, qo, evo, seqo), queuedItem(b, q3, ev3, seq3),
		queuedItem(b, qsa, shared, seqShared), queuedItem(b, q1, ev1, seq1)})
	if locked := all[3]; locked.Receives != 1 || !locked.LockedUntil.Equal(now.Add(lockFor)) || locked.Status != delivery.StatusQueued {
		t.Fatalf("a locked queued delivery listed as %+v; want its receive and lock", locked.Delivery)
	}
	for _, tc := range []struct {
		name string
		f    store.DeliveryFilter
		want []string // newest first
	}{
		{"none", store.DeliveryFilter{}, []string{qo, q3, qsa, q1}},
		{"status pending (taken as queued)", store.DeliveryFilter{Status: delivery.StatusPending}, []string{qo, q3, qsa, q1}},
		{"status delivered (taken as queued)", store.DeliveryFilter{Status: delivery.StatusDelivered}, []string{qo, q3, qsa, q1}},
		{"account", store.DeliveryFilter{AccountID: account.DefaultID}, []string{q3, qsa, q1}},
		{"other account", store.DeliveryFilter{AccountID: other.ID}, []string{qo}},
		{"pull subscription", store.DeliveryFilter{SubscriptionID: p.ID}, []string{q1}},
		{"push subscription", store.DeliveryFilter{AccountID: account.DefaultID, SubscriptionID: a.ID}, []string{q3, qsa}},
		{"subscription of another account", store.DeliveryFilter{AccountID: other.ID, SubscriptionID: a.ID}, []string{}},
		{"event id", store.DeliveryFilter{EventID: shared.ID}, []string{qsa}},
		{"event id, other account", store.DeliveryFilter{AccountID: other.ID, EventID: shared.ID}, []string{}},
		{"endpoint", store.DeliveryFilter{EndpointID: a.EndpointID}, []string{q3, qsa}},
		{"endpoint, account", store.DeliveryFilter{AccountID: account.DefaultID, EndpointID: a.EndpointID}, []string{q3, qsa}},
		{"endpoint, other account", store.DeliveryFilter{AccountID: other.ID, EndpointID: a.EndpointID}, []string{}},
		{"other account's endpoint", store.DeliveryFilter{EndpointID: oa.EndpointID}, []string{qo}},
		{"unknown subscription", store.DeliveryFilter{SubscriptionID: "sub_unknown"}, []string{}},
	} {
		for _, limit := range []int{1, 2, 3, 100} {
			got := []string{}
			for _, q := range listQueued(t, b, tc.f, limit) {
				got = append(got, q.ID)
			}
			equal(t, fmt.Sprintf("%s, limit %d", tc.name, limit), got, tc.want)
		}
	}
}

// testListQueuedBytes: a queued delivery's bytes are its event's id,
// source, type, subject and payload, as a dead letter's.
func testListQueuedBytes(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	var want []string
	for i, n := range pageSizes {
		ev := sizedEvent(b, b.at(time.Duration(i)*time.Second), p, n)
		ev.Deliveries[0].Queued = true
		b.publish(ev)
		want = append(want, ev.Deliveries[0].ID)
	}
	checkBounded(t, "queued", reversed(want), func(pg store.Page) ([]store.DeadLetter, string, error) {
		return b.s.ListQueued(b.ctx, store.DeliveryFilter{SubscriptionID: p.ID, Page: pg})
	}, withEventBytes(t, "queued delivery"), func(d store.DeadLetter) string { return d.ID })
}

// testListQueuedLimitsAndCursors: a page holds DefaultLimit items for a
// limit of zero or less, at most MaxLimit; a cursor not in the
// deliveries' format is ErrInvalidCursor, one in it that the list never
// gave is taken.
func testListQueuedLimitsAndCursors(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	evs := make([]store.NewEvent, store.MaxLimit+1)
	for i := range evs {
		evs[i] = b.event(b.now, p)
		evs[i].Deliveries[0].Queued = true
	}
	b.publish(evs...)
	for _, tc := range []struct{ limit, want int }{{0, store.DefaultLimit}, {-1, store.DefaultLimit}, {7, 7},
		{store.MaxLimit, store.MaxLimit}, {5000, store.MaxLimit}} {
		qs, next, err := b.s.ListQueued(b.ctx, store.DeliveryFilter{Page: store.Page{Limit: tc.limit}})
		if err != nil || len(qs) != tc.want || next != qs[len(qs)-1].ID {
			t.Fatalf("limit %d: %d items, cursor %q, %v; want %d and the last one's ID", tc.limit, len(qs), next, err, tc.want)
		}
	}
	if got := listQueued(t, b, store.DeliveryFilter{}, store.MaxLimit); len(got) != store.MaxLimit+1 {
		t.Fatalf("listed %d queued deliveries, want %d", len(got), store.MaxLimit+1)
	}
	ulid := ids.New("", b.at(time.Hour)) // sorts after every ID made so far
	for _, c := range []string{"dlv_" + ulid[2:], "ep_" + ulid[:20], "sub_" + ulid, "42", evs[0].Deliveries[0].ID + "' OR '1'='1"} {
		if qs, _, err := b.s.ListQueued(b.ctx, store.DeliveryFilter{Page: store.Page{Cursor: c}}); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("cursor %q: %d items, %v; want ErrInvalidCursor", c, len(qs), err)
		}
	}
	if qs, _, err := b.s.ListQueued(b.ctx, store.DeliveryFilter{Page: store.Page{Cursor: "dlv_" + ulid, Limit: 3}}); err != nil ||
		len(qs) != 3 || qs[0].ID != evs[len(evs)-1].Deliveries[0].ID {
		t.Fatalf("a cursor after every delivery: %d items, %v; want the newest 3", len(qs), err)
	}
}
