package enginetest

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// allPages lists with limit until the cursor is "", checking that every page
// but the last is full and the last is not empty (unless the list is).
func allPages(t *testing.T, limit int, list func(store.Page) ([]string, string, error)) []string {
	t.Helper()
	return boundedPages(t, limit, list, func(string) int64 { return 0 })
}

// boundedPages lists with limit until the cursor is "", checking every page
// against the page rule (store.MaxPageBytes), given each item's bytes: no
// item comes after the page's items reach MaxPageBytes; a page with a
// cursor is full or reaches MaxPageBytes; a cursor is followed by a page that
// is not empty.
func boundedPages[T any](t *testing.T, limit int, list func(store.Page) ([]T, string, error), bytes func(T) int64) []T {
	t.Helper()
	var all []T
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
		got, next, err := list(store.Page{Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(got) > limit {
			t.Fatalf("page %d has %d items, over the limit of %d", pages, len(got), limit)
		}
		var total int64
		for i, v := range got {
			if total >= store.MaxPageBytes {
				t.Fatalf("page %d: item %d comes after %d bytes; the page should have ended at %d", pages, i, total, store.MaxPageBytes)
			}
			total += bytes(v)
		}
		if len(got) == 0 && pages > 0 {
			t.Fatalf("page %d is empty: the previous page should have had no cursor", pages)
		}
		all = append(all, got...)
		if next == "" {
			return all
		}
		if len(got) != limit && total < store.MaxPageBytes {
			t.Fatalf("page %d has %d items of %d bytes and a cursor; want %d items or %d bytes", pages, len(got), total, limit, store.MaxPageBytes)
		}
		cursor = next
	}
}

func testListDeliveriesPages(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	var all, ofA []string
	for i := 0; i < 10; i++ {
		sub := a
		if i%3 == 2 {
			sub = c
		}
		id := b.deliver(sub, b.at(time.Duration(i)*time.Second))
		all = append(all, id)
		if sub.ID == a.ID {
			ofA = append(ofA, id)
		}
	}
	list := func(f store.DeliveryFilter) func(store.Page) ([]string, string, error) {
		return func(p store.Page) ([]string, string, error) {
			f.Page = p
			ds, next, err := b.s.ListDeliveries(b.ctx, f)
			return deliveryIDs(ds), next, err
		}
	}
	for _, limit := range []int{1, 3, 5, 10, 11} {
		equal(t, fmt.Sprintf("all, limit %d", limit), allPages(t, limit, list(store.DeliveryFilter{})), reversed(all))
		equal(t, fmt.Sprintf("subscription a, limit %d", limit),
			allPages(t, limit, list(store.DeliveryFilter{SubscriptionID: a.ID})), reversed(ofA))
	}
	// A page holds full deliveries, with their event.
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{Page: store.Page{Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "first item", ds, []delivery.Delivery{b.get(all[9])})
	if ds[0].EventID == "" || ds[0].EventSource != "/billing" {
		t.Fatalf("delivery without its event's id and source: %+v", ds[0])
	}
}

func testListDeliveriesFilters(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	pa := b.deliver(a, b.now)
	ev, _ := b.claimOne(a, b.now)
	da := ev.Deliveries[0].ID
	b.record(succeeded(da, 1, b.now))
	pc := b.deliver(c, b.now)
	shared := b.event(b.now, a, c) // one event, two deliveries
	b.publish(shared)
	sameID := b.event(b.now, c) // same CloudEvents id, other source
	sameID.ID, sameID.Source = shared.ID, "/elsewhere"
	b.publish(sameID)
	sa, sc, sx := shared.Deliveries[0].ID, shared.Deliveries[1].ID, sameID.Deliveries[0].ID

	for _, tc := range []struct {
		name string
		f    store.DeliveryFilter
		want []string // newest first
	}{
		{"none", store.DeliveryFilter{}, []string{sx, sc, sa, pc, da, pa}},
		{"subscription", store.DeliveryFilter{SubscriptionID: a.ID}, []string{sa, da, pa}},
		{"status", store.DeliveryFilter{Status: delivery.StatusDelivered}, []string{da}},
		{"status pending", store.DeliveryFilter{Status: delivery.StatusPending}, []string{sx, sc, sa, pc, pa}},
		{"subscription and status", store.DeliveryFilter{SubscriptionID: a.ID, Status: delivery.StatusPending}, []string{sa, pa}},
		{"event id", store.DeliveryFilter{EventID: shared.ID}, []string{sx, sc, sa}},
		{"event id and subscription", store.DeliveryFilter{EventID: shared.ID, SubscriptionID: c.ID}, []string{sx, sc}},
		{"event id, subscription, status", store.DeliveryFilter{EventID: shared.ID, SubscriptionID: c.ID, Status: delivery.StatusDelivered}, []string{}},
		{"unknown subscription", store.DeliveryFilter{SubscriptionID: "sub_unknown"}, []string{}},
	} {
		listsAllPages(t, b, tc.name, tc.f, tc.want)
	}
}

// listsAllPages checks that ListDeliveries with f lists want (newest
// first), reading its pages at a few limits.
func listsAllPages(t *testing.T, b *bundle, name string, f store.DeliveryFilter, want []string) {
	t.Helper()
	for _, limit := range []int{1, 2, 100} {
		got := allPages(t, limit, func(p store.Page) ([]string, string, error) {
			f.Page = p
			ds, next, err := b.s.ListDeliveries(b.ctx, f)
			return deliveryIDs(ds), next, err
		})
		if got == nil {
			got = []string{}
		}
		equal(t, fmt.Sprintf("%s, limit %d", name, limit), got, want)
	}
}

// testListDeliveriesTimeRange: Since and Before select the deliveries made
// (by their IDs' time) at or after Since and before Before, to the
// millisecond, with every other filter and page by page.
func testListDeliveriesTimeRange(t *testing.T, b *bundle) {
	a, c := b.subIn(b.account("times-a").ID, "https://a.example/hook"), b.sub("https://c.example/hook")
	minute := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	var made []string // made[i] at minute i, of a; the odd ones dead-lettered
	for i := range 5 {
		b.idAt = minute(i).Add(-time.Millisecond) // b.id adds one
		made = append(made, b.deliver(a, minute(i)))
		b.idAt = minute(i) // c's in the same millisecond
		b.deliver(c, minute(i))
	}
	for _, i := range []int{1, 3} {
		b.record(deadLettered(made[i], 1, b.now, b.now))
	}
	for _, tc := range []struct {
		name string
		f    store.DeliveryFilter
		want []string // newest first
	}{
		{"since, inclusive", store.DeliveryFilter{SubscriptionID: a.ID, Since: minute(2)}, []string{made[4], made[3], made[2]}},
		{"before, exclusive", store.DeliveryFilter{SubscriptionID: a.ID, Before: minute(2)}, []string{made[1], made[0]}},
		{"account, range", store.DeliveryFilter{AccountID: a.AccountID, Since: minute(1), Before: minute(4)}, []string{made[3], made[2], made[1]}},
		{"account, status, range", store.DeliveryFilter{AccountID: a.AccountID, Status: delivery.StatusDeadLettered,
			Since: minute(1), Before: minute(3)}, []string{made[1]}},
		{"subscription, status, since", store.DeliveryFilter{SubscriptionID: a.ID, Status: delivery.StatusPending, Since: minute(1)},
			[]string{made[4], made[2]}},
		{"one millisecond", store.DeliveryFilter{SubscriptionID: a.ID, Since: minute(3), Before: minute(3).Add(time.Millisecond)}, []string{made[3]}},
		{"empty range", store.DeliveryFilter{SubscriptionID: a.ID, Since: minute(3), Before: minute(3)}, []string{}},
	} {
		listsAllPages(t, b, tc.name, tc.f, tc.want)
	}
}

func testListDeliveriesClamp(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	evs := make([]store.NewEvent, 1001)
	for i := range evs {
		evs[i] = b.event(b.now, a)
	}
	b.publish(evs...)
	for _, tc := range []struct{ limit, want int }{{0, 100}, {-1, 100}, {7, 7}, {1000, 1000}, {5000, 1000}} {
		ds, next, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{Page: store.Page{Limit: tc.limit}})
		if err != nil || len(ds) != tc.want || next == "" {
			t.Fatalf("limit %d: %d items, cursor %q, %v; want %d and a cursor", tc.limit, len(ds), next, err, tc.want)
		}
	}
	got := allPages(t, 1000, func(p store.Page) ([]string, string, error) {
		ds, next, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{Page: p})
		return deliveryIDs(ds), next, err
	})
	if len(got) != 1001 {
		t.Fatalf("listed %d deliveries, want 1001", len(got))
	}
}

func testListAttempts(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	var want []delivery.Attempt
	for n := 1; n <= 4; n++ {
		if n > 1 {
			b.claim(a.EndpointID, b.at(time.Duration(n)*time.Minute), 1)
		}
		o := failed(id, n, b.at(time.Duration(n)*time.Minute), b.at(time.Minute), b.at(time.Duration(n+1)*time.Minute))
		o.Attempt.Error = "attempt " + strconv.Itoa(n)
		b.record(o)
		want = append(want, o.Attempt)
	}
	o := succeeded(id, 5, b.at(5*time.Minute))
	b.claim(a.EndpointID, b.at(5*time.Minute), 1)
	b.record(o)
	want = append(want, o.Attempt)

	for _, limit := range []int{1, 2, 5, 6} {
		var got []delivery.Attempt
		allPages(t, limit, func(p store.Page) ([]string, string, error) {
			as, next, err := b.s.ListAttempts(b.ctx, id, p)
			got = append(got, as...)
			return make([]string, len(as)), next, err
		})
		equal(t, fmt.Sprintf("attempts, limit %d", limit), got, want)
	}
	if _, _, err := b.s.ListAttempts(b.ctx, id, store.Page{Cursor: "not a cursor"}); !errors.Is(err, store.ErrInvalidCursor) {
		t.Fatalf("ListAttempts(bad cursor) = %v, want ErrInvalidCursor", err)
	}
	// A delivery without attempts has an empty log.
	fresh := b.deliver(a, b.now)
	if as, next, err := b.s.ListAttempts(b.ctx, fresh, store.Page{}); err != nil || len(as) != 0 || next != "" {
		t.Fatalf("ListAttempts(no attempts) = %v, %q, %v", as, next, err)
	}
}

func testListDeadLetters(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	var ofA, all []string
	for i := 0; i < 5; i++ {
		sub := a
		if i == 2 {
			sub = c
		}
		id := b.deadAfterTwo(sub, b.at(time.Duration(i)*time.Hour))
		all = append(all, id)
		if sub.ID == a.ID {
			ofA = append(ofA, id)
		}
	}
	b.deliver(a, b.now) // pending: not a dead letter
	list := func(sub string) func(store.Page) ([]string, string, error) {
		return func(p store.Page) ([]string, string, error) {
			dls, next, err := b.s.ListDeadLetters(b.ctx, store.DeadLetterFilter{SubscriptionID: sub, Page: p})
			var ids []string
			for _, dl := range dls {
				ids = append(ids, dl.ID)
				if dl.Status != delivery.StatusDeadLettered || dl.Event.Seq != dl.EventSeq || dl.Event.ID != dl.EventID ||
					len(dl.Event.Payload) == 0 || dl.Attempts != 2 || dl.DeadLetterReason == "" || dl.LastAttemptAt.IsZero() {
					return nil, "", fmt.Errorf("dead letter without its dead-letter fields or event: %+v", dl)
				}
			}
			return ids, next, err
		}
	}
	for _, limit := range []int{1, 2, 10} {
		equal(t, "all dead letters", allPages(t, limit, list("")), reversed(all))
		equal(t, "dead letters of a", allPages(t, limit, list(a.ID)), reversed(ofA))
	}
}

func testEndpointList(t *testing.T, b *bundle) {
	want := map[string]bool{}
	for _, u := range []string{"https://a.example/1", "https://a.example/2", "https://a.example/3"} {
		want[b.sub(u).EndpointID] = true
	}
	b.sub("https://a.example/1") // a second subscription to the same URL adds no endpoint
	seen := map[string]bool{}
	cursor := ""
	for i := 0; i < 5; i++ {
		eps, next, err := b.s.ListEndpoints(b.ctx, "", "", store.Page{Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			if seen[e.ID] {
				t.Fatalf("endpoint %s listed twice", e.ID)
			}
			seen[e.ID] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("listed %v, want %v", seen, want)
	}
	if _, err := b.s.GetEndpoint(b.ctx, "ep_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEndpoint(unknown): %v", err)
	}
}

// testListPendingLeased: the pending deliveries of a subscription and of
// an account, newest first, page after page, hold the leased ones (a
// delivery leased at publish, one claimed later) beside those waiting,
// whichever index each is in (SQLite's status indexes hold no leased
// delivery: 0021_leased_apart.sql); a leased one that is delivered
// leaves them, one that failed and waits comes back, and the lists of
// other statuses hold none of them.
func testListPendingLeased(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	dead := b.deadAfterTwo(a, b.now)
	waiting := b.deliver(a, b.at(time.Hour)) // due later: never claimed here
	ev, _ := b.claimOne(a, b.now)
	fast := ev.Deliveries[0].ID
	claimed := b.deliver(a, b.now)
	if got := claimedIDs(b.claim(a.EndpointID, b.at(time.Minute), 10)); len(got) != 1 || got[0] != claimed {
		t.Fatalf("claimed %v; want %s", got, claimed)
	}
	oev, _ := b.claimOne(a, b.now)
	other := oev.Deliveries[0].ID
	pages := func(when string, f store.DeliveryFilter, want ...string) {
		t.Helper()
		var got []string
		for f.Page.Limit = 1; ; {
			ds, next, err := b.s.ListDeliveries(b.ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				got = append(got, d.ID)
			}
			if next == "" {
				break
			}
			f.Page.Cursor = next
		}
		equal(t, when, got, want)
	}
	newest := func(ids ...string) []string {
		sort.Sort(sort.Reverse(sort.StringSlice(ids)))
		return ids
	}
	for _, f := range []store.DeliveryFilter{{AccountID: a.AccountID}, {AccountID: a.AccountID, SubscriptionID: a.ID}} {
		f.Status = delivery.StatusPending
		pages("pending", f, newest(waiting, fast, claimed, other)...)
		f.Status = delivery.StatusDeadLettered
		pages("dead-lettered", f, dead)
	}
	b.record(succeeded(fast, 1, b.now), failed(other, 1, b.now, b.now, b.at(time.Hour)))
	for _, f := range []store.DeliveryFilter{{AccountID: a.AccountID}, {AccountID: a.AccountID, SubscriptionID: a.ID}} {
		f.Status = delivery.StatusPending
		pages("pending after an outcome each", f, newest(waiting, claimed, other)...)
		f.Status = delivery.StatusDelivered
		pages("delivered", f, fast)
	}
}
