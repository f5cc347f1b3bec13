package enginetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// pageIDs lists every page of list with limit, checking the page rule
// (allPages), and returns the items' keys.
func pageIDs[T any](t *testing.T, limit int, list func(store.Page) ([]T, string, error), key func(T) string) []string {
	t.Helper()
	got := allPages(t, limit, func(p store.Page) ([]string, string, error) {
		items, next, err := list(p)
		var out []string
		for _, v := range items {
			out = append(out, key(v))
		}
		return out, next, err
	})
	if got == nil {
		got = []string{}
	}
	return got
}

// testTenantDeliveries: deliveries listed for an account are that
// account's only, with every filter; a claimed delivery carries its
// account.
func testTenantDeliveries(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	a, x := b.sub("https://a.example/hook"), b.subIn(acc.ID, "https://x.example/hook")
	pa, px := b.deliver(a, b.now), b.deliver(x, b.now)
	ev, _ := b.claimOne(x, b.now)
	dx := ev.Deliveries[0].ID
	b.record(succeeded(dx, 1, b.now))
	// One CloudEvents id and source in both accounts.
	sa := b.event(b.now, a)
	sx := b.event(b.now, x)
	sx.ID, sx.Source = sa.ID, sa.Source
	b.publish(sa, sx)
	sharedA, sharedX := sa.Deliveries[0].ID, sx.Deliveries[0].ID

	for _, tc := range []struct {
		name string
		f    store.DeliveryFilter
		want []string // newest first
	}{
		{"every account", store.DeliveryFilter{}, []string{sharedX, sharedA, dx, px, pa}},
		{"account", store.DeliveryFilter{AccountID: acc.ID}, []string{sharedX, dx, px}},
		{"default account", store.DeliveryFilter{AccountID: account.DefaultID}, []string{sharedA, pa}},
		{"account and status", store.DeliveryFilter{AccountID: acc.ID, Status: delivery.StatusPending}, []string{sharedX, px}},
		{"account and subscription", store.DeliveryFilter{AccountID: acc.ID, SubscriptionID: x.ID}, []string{sharedX, dx, px}},
		{"another account's subscription", store.DeliveryFilter{AccountID: account.DefaultID, SubscriptionID: x.ID}, []string{}},
		{"another account's subscription and status", store.DeliveryFilter{AccountID: account.DefaultID, SubscriptionID: x.ID, Status: delivery.StatusDelivered}, []string{}},
		{"event id in every account", store.DeliveryFilter{EventID: sa.ID}, []string{sharedX, sharedA}},
		{"event id in an account", store.DeliveryFilter{EventID: sa.ID, AccountID: acc.ID}, []string{sharedX}},
		{"event id in the default account", store.DeliveryFilter{EventID: sa.ID, AccountID: account.DefaultID}, []string{sharedA}},
		{"event id, account, status", store.DeliveryFilter{EventID: sa.ID, AccountID: acc.ID, Status: delivery.StatusDelivered}, []string{}},
		{"unknown account", store.DeliveryFilter{AccountID: "acc_" + strings.Repeat("0", 26)}, []string{}},
	} {
		for _, limit := range []int{1, 2, 100} {
			got := pageIDs(t, limit, func(p store.Page) ([]delivery.Delivery, string, error) {
				f := tc.f
				f.Page = p
				return b.s.ListDeliveries(b.ctx, f)
			}, func(d delivery.Delivery) string { return d.ID })
			equal(t, fmt.Sprintf("%s, limit %d", tc.name, limit), got, tc.want)
		}
	}
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{AccountID: acc.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		equal(t, "listed delivery", d, b.get(d.ID))
		if d.AccountID != acc.ID {
			t.Fatalf("delivery %s of account %s lists as %s's", d.ID, acc.ID, d.AccountID)
		}
	}
	cs := b.claim(x.EndpointID, b.now, 10)
	equal(t, "claimed", sortedCopy(claimedIDs(cs)), sortedCopy([]string{px, sharedX}))
	for _, c := range cs {
		if c.AccountID != acc.ID {
			t.Fatalf("claimed delivery %s has account %q, want %s", c.ID, c.AccountID, acc.ID)
		}
	}
	r, err := b.s.Redeliver(b.ctx, dx, b.at(time.Minute))
	if err != nil || r.AccountID != acc.ID {
		t.Fatalf("Redeliver = %+v, %v; want a delivery of %s", r, err, acc.ID)
	}
}

// testTenantDeadLetters: dead letters listed for an account are that
// account's, each with its event in the account.
func testTenantDeadLetters(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	a, x := b.sub("https://a.example/hook"), b.subIn(acc.ID, "https://x.example/hook")
	var ofA, ofX []string
	for i := 0; i < 5; i++ {
		at := b.at(time.Duration(i) * time.Hour)
		if i%2 == 0 {
			ofX = append(ofX, b.deadAfterTwo(x, at))
		} else {
			ofA = append(ofA, b.deadAfterTwo(a, at))
		}
	}
	b.deliver(x, b.now) // pending: not a dead letter
	list := func(f store.DeadLetterFilter) func(store.Page) ([]store.DeadLetter, string, error) {
		return func(p store.Page) ([]store.DeadLetter, string, error) {
			f.Page = p
			dls, next, err := b.s.ListDeadLetters(b.ctx, f)
			for _, dl := range dls {
				if want := account.OrDefault(f.AccountID); f.AccountID != "" && (dl.AccountID != want || dl.Event.AccountID != want) {
					return nil, "", fmt.Errorf("dead letter of %s (event of %s) listed in %s", dl.AccountID, dl.Event.AccountID, want)
				}
			}
			return dls, next, err
		}
	}
	key := func(d store.DeadLetter) string { return d.ID }
	for _, limit := range []int{1, 2, 10} {
		equal(t, "dead letters of the account", pageIDs(t, limit, list(store.DeadLetterFilter{AccountID: acc.ID}), key), reversed(ofX))
		equal(t, "dead letters of the default account", pageIDs(t, limit, list(store.DeadLetterFilter{AccountID: account.DefaultID}), key), reversed(ofA))
		equal(t, "dead letters of the account's subscription", pageIDs(t, limit, list(store.DeadLetterFilter{AccountID: acc.ID, SubscriptionID: x.ID}), key), reversed(ofX))
		equal(t, "dead letters of another account's subscription", pageIDs(t, limit, list(store.DeadLetterFilter{AccountID: acc.ID, SubscriptionID: a.ID}), key), []string{})
		equal(t, "dead letters of every account", len(pageIDs(t, limit, list(store.DeadLetterFilter{}), key)), len(ofA)+len(ofX))
	}
}

// testTenantSubscriptions: subscriptions listed for an account are that
// account's, and read back with it.
func testTenantSubscriptions(t *testing.T, b *bundle) {
	acc, other := b.account("tenant"), b.account("other")
	var all, ofAcc, ofDefault []string
	for i := 0; i < 7; i++ {
		url := fmt.Sprintf("https://example.com/%d", i)
		var s subscription.Subscription
		if i%2 == 0 {
			s = b.subIn(acc.ID, url)
			ofAcc = append(ofAcc, s.ID)
		} else {
			s = b.sub(url)
			ofDefault = append(ofDefault, s.ID)
		}
		all = append(all, s.ID)
		if got, err := b.s.GetSubscription(b.ctx, s.ID); err != nil || got.AccountID != s.AccountID || got.EndpointID != s.EndpointID {
			t.Fatalf("GetSubscription(%s) = %+v, %v; want it in %s", s.ID, got, err, s.AccountID)
		}
	}
	key := func(s subscription.Subscription) string { return s.ID }
	list := func(account string) func(store.Page) ([]subscription.Subscription, string, error) {
		return func(p store.Page) ([]subscription.Subscription, string, error) {
			return b.s.ListSubscriptions(b.ctx, account, p)
		}
	}
	for _, limit := range []int{1, 2, 4, 8} {
		equal(t, "subscriptions of the account", pageIDs(t, limit, list(acc.ID), key), ofAcc)
		equal(t, "subscriptions of the default account", pageIDs(t, limit, list(account.DefaultID), key), ofDefault)
		equal(t, "subscriptions of every account", pageIDs(t, limit, list(""), key), all)
		equal(t, "subscriptions of an account without any", pageIDs(t, limit, list(other.ID), key), []string{})
	}
	ss, _, err := b.s.ListSubscriptions(b.ctx, acc.ID, store.Page{Limit: 1})
	if err != nil || len(ss) != 1 {
		t.Fatalf("ListSubscriptions = %+v, %v", ss, err)
	}
	got, err := b.s.GetSubscription(b.ctx, ofAcc[0])
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "listed subscription", ss[0], got)
}

// testTenantEndpoints: one URL in two accounts is two endpoints (two
// circuits), each listed in its account only; deleting one account's
// subscription leaves the other's endpoint.
func testTenantEndpoints(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	url := "https://shared.example/hook"
	a, x := b.sub(url), b.subIn(acc.ID, url)
	if a.EndpointID != b.s.EndpointID("", url) || x.EndpointID != b.s.EndpointID(acc.ID, url) || a.EndpointID == x.EndpointID {
		t.Fatalf("endpoint IDs %s and %s: want one per account (Store.EndpointID)", a.EndpointID, x.EndpointID)
	}
	for _, s := range []subscription.Subscription{a, x} {
		if e := readEndpoint(b, s.EndpointID); e.AccountID != s.AccountID || e.URL != url {
			t.Fatalf("endpoint of %s: %+v", s.AccountID, e)
		}
	}
	key := func(e endpoint.Endpoint) string { return e.ID }
	list := func(account string) func(store.Page) ([]endpoint.Endpoint, string, error) {
		return func(p store.Page) ([]endpoint.Endpoint, string, error) {
			return b.s.ListEndpoints(b.ctx, account, "", p)
		}
	}
	other := b.sub("https://other.example/hook")
	for _, limit := range []int{1, 2, 3} {
		equal(t, "endpoints of the account", pageIDs(t, limit, list(acc.ID), key), []string{x.EndpointID})
		equal(t, "endpoints of the default account", pageIDs(t, limit, list(account.DefaultID), key), sortedCopy([]string{a.EndpointID, other.EndpointID}))
		equal(t, "endpoints of every account", pageIDs(t, limit, list(""), key), sortedCopy([]string{a.EndpointID, other.EndpointID, x.EndpointID}))
	}
	// Each endpoint has its own deliveries and health.
	da, dx := b.deliver(a, b.now), b.deliver(x, b.now)
	equal(t, "claimed on the default account's endpoint", claimedIDs(b.claim(a.EndpointID, b.now, 10)), []string{da})
	setHealth(b, x.EndpointID, sampleHealth(b))
	if e := readEndpoint(b, a.EndpointID); e.Health.ConsecutiveFailures != 0 {
		t.Fatalf("the other account's endpoint took the health: %+v", e.Health)
	}
	deleteSub(b, x)
	noEndpoint(b, x.EndpointID)
	if e := readEndpoint(b, a.EndpointID); e.AccountID != account.DefaultID {
		t.Fatalf("endpoint left: %+v", e)
	}
	if d := b.get(dx); d.Status != delivery.StatusDropped {
		t.Fatalf("delivery of the deleted subscription: %+v", d)
	}
	equal(t, "endpoints of the account after its subscription went", pageIDs(t, 10, list(acc.ID), key), []string{})
}
