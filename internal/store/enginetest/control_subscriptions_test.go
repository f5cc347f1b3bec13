package enginetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

func fullSubscription(b *bundle) subscription.Subscription {
	url := "https://hooks.example.com/billing?x=1"
	return subscription.Subscription{
		ID:                b.id("sub_"),
		AccountID:         account.DefaultID,
		Name:              "billing",
		URL:               url,
		EndpointID:        b.s.EndpointID("", url),
		EventTypes:        []string{"invoice.paid", "invoice.voided"},
		SubjectBeginsWith: "invoices/",
		SubjectEndsWith:   ".json",
		RetryPolicy:       []byte(`{"preset": "workfront",  "max_attempts": 12}`),
		Timeout:           2500 * time.Millisecond,
		Headers:           map[string]string{"X-Api-Key": "secret", "X-Tenant": "t-1"},
		SecretHeaders:     map[string]string{"Authorization": "Bearer t0ken"},
		Signing: signing.Keyring{Algorithm: "hmac-sha256", Keys: []signing.Key{
			{Key: []byte("0123456789abcdef0123456789abcdef")},
			{Key: []byte("previous key of twenty-four+ bytes"), ExpiresAt: b.at(time.Hour)},
		}},
		DeadLetter:    true,
		State:         "active",
		DeliveryMode:  subscription.ModePush,
		FailurePolicy: subscription.FailureQueue,
		// Its secrets are kept (and read back) like the secret headers.
		Delivery: subscription.DeliveryOptions{Auth: &subscription.Auth{Type: subscription.AuthOAuth2,
			TokenURL: "https://auth.example/token", ClientID: "herald", ClientSecret: "s3cret",
			Scopes: []string{"a", "b"}, Audience: "https://api.example"},
			Transform: `{"text": "<" + event.subject + "> & " + string(data.amount)}`},
		// Kept as written: white space, escapes, and characters
		// json.Marshal would escape.
		Filters: subscription.FilterOptions{Advanced: json.RawMessage(advancedFilters), SubjectCaseSensitive: true,
			Expression: `data.note.contains("a<b & c>d") || event.type == "invoice.voided"`},
		CreatedAt: b.now,
		UpdatedAt: b.at(time.Second),
	}
}

// advancedFilters is an advanced_filters list as a client may write it.
const advancedFilters = `[ {"operator_type": "NumberIn",  "key": "data.amount", "values": [1, 2.50, 1e3]},
	{"operator_type":"StringContains","key":"data.note","values":["a<b & c>d", "caf\u00e9", "café", "\"q\""]} ]`

func testSubscriptionRoundTrip(t *testing.T, b *bundle) {
	s := fullSubscription(b)
	if err := b.s.CreateSubscription(b.ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.GetSubscription(b.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version <= 0 {
		t.Fatalf("created subscription has version %d, want > 0", got.Version)
	}
	s.Version = got.Version          // assigned by the store
	equal(t, "subscription", got, s) // RetryPolicy and Filters.Advanced byte for byte, as written
	if string(got.Filters.Advanced) != advancedFilters {
		t.Fatalf("advanced filters read back as %s; want %s", got.Filters.Advanced, advancedFilters)
	}
	// The catalog reads the filters: it compiles them.
	ch, err := b.s.SubscriptionChanges(b.ctx, got.Version-1)
	if err != nil || len(ch.Changed) != 1 {
		t.Fatalf("SubscriptionChanges after the create: %+v, %v", ch, err)
	}
	equal(t, "changed", ch.Changed[0], s)

	// Empty lists and maps read back empty.
	bare := subscription.Subscription{ID: b.id("sub_"), Name: "bare", URL: "https://bare.example/",
		EndpointID: b.s.EndpointID("", "https://bare.example/"), State: "active", CreatedAt: b.now, UpdatedAt: b.now}
	if err := b.s.CreateSubscription(b.ctx, bare); err != nil {
		t.Fatal(err)
	}
	got, err = b.s.GetSubscription(b.ctx, bare.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.EventTypes) != 0 || len(got.Headers) != 0 || len(got.SecretHeaders) != 0 || len(got.Signing.Keys) != 0 ||
		len(got.RetryPolicy) != 0 || got.DeadLetter || got.Timeout != 0 || got.Filters.Advanced != nil || got.Filters.SubjectCaseSensitive {
		t.Fatalf("bare subscription read back as %+v", got)
	}
	got.EventTypes, got.Headers, got.SecretHeaders, got.RetryPolicy = nil, nil, nil, nil
	got.Signing = signing.Keyring{}
	bare.Version = got.Version
	// An empty account is the default's; an empty mode and policy are
	// push and retry.
	bare.AccountID = account.DefaultID
	bare.DeliveryMode, bare.FailurePolicy = subscription.ModePush, subscription.FailureRetry
	equal(t, "bare subscription", got, bare)
}

func testSubscriptionNameTaken(t *testing.T, b *bundle) {
	s := fullSubscription(b)
	if err := b.s.CreateSubscription(b.ctx, s); err != nil {
		t.Fatal(err)
	}
	other := fullSubscription(b)
	if err := b.s.CreateSubscription(b.ctx, other); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("CreateSubscription(same name) = %v, want ErrNameTaken", err)
	}
	if _, err := b.s.GetSubscription(b.ctx, other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused subscription was stored (err %v)", err)
	}
	other.Name = "other"
	if err := b.s.CreateSubscription(b.ctx, other); err != nil {
		t.Fatal(err)
	}
	other.Name = s.Name
	if err := b.s.UpdateSubscription(b.ctx, other); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("UpdateSubscription(taken name) = %v, want ErrNameTaken", err)
	}
	if got, _ := b.s.GetSubscription(b.ctx, other.ID); got.Name != "other" {
		t.Fatalf("refused update was stored: %+v", got)
	}
}

func testSubscriptionUpdate(t *testing.T, b *bundle) {
	s := fullSubscription(b)
	if err := b.s.CreateSubscription(b.ctx, s); err != nil {
		t.Fatal(err)
	}
	// Keeping its own name is fine; every field is replaced but the state,
	// which only a deactivation and a reactivation change.
	s.URL = "https://new.example/hook"
	s.EndpointID = b.s.EndpointID("", s.URL)
	s.EventTypes = []string{"task.updated"}
	s.SubjectBeginsWith, s.SubjectEndsWith = "tasks/", ""
	s.RetryPolicy = []byte(`{"preset":"sap"}`)
	s.Timeout = 10 * time.Second
	s.Headers = map[string]string{"A": "b"}
	s.SecretHeaders = map[string]string{"C": "d"}
	s.Signing = signing.Keyring{Algorithm: "ed25519", Keys: []signing.Key{
		{Key: []byte("an ed25519 seed of 32 bytes.....")},
		{Key: []byte("0123456789abcdef0123456789abcdef"), ExpiresAt: b.at(2 * time.Hour)},
		{Key: []byte("previous key of twenty-four+ bytes"), ExpiresAt: b.at(time.Hour)},
	}}
	s.DeadLetter = false
	s.State = "deactivated" // ignored
	s.FailurePolicy = subscription.FailureRetry
	s.Filters = subscription.FilterOptions{Advanced: json.RawMessage(`[{"operator_type":"IsNullOrUndefined","key":"data.x"}]`)}
	s.UpdatedAt = b.at(time.Hour)
	before, err := b.s.GetSubscription(b.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.s.UpdateSubscription(b.ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.GetSubscription(b.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version <= before.Version {
		t.Fatalf("version after update %d, before %d: want it to advance", got.Version, before.Version)
	}
	s.Version = got.Version
	s.State = before.State
	equal(t, "updated", got, s)
	// The catalog reads the secrets too: the dispatcher sends and signs with them.
	ch, err := b.s.SubscriptionChanges(b.ctx, before.Version)
	if err != nil || len(ch.Changed) != 1 {
		t.Fatalf("SubscriptionChanges after the update: %+v, %v", ch, err)
	}
	equal(t, "changed", ch.Changed[0], s)
	// Deliveries to the new URL work at once.
	d := b.deliver(got, b.now)
	equal(t, "claimed on the new endpoint", claimedIDs(b.claim(s.EndpointID, b.now, 10)), []string{d})
}

func testSubscriptionNotFound(t *testing.T, b *bundle) {
	if _, err := b.s.GetSubscription(b.ctx, "sub_unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSubscription = %v, want ErrNotFound", err)
	}
	s := fullSubscription(b)
	if err := b.s.UpdateSubscription(b.ctx, s); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateSubscription = %v, want ErrNotFound", err)
	}
	if err := b.s.DeleteSubscription(b.ctx, s.ID, b.now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteSubscription = %v, want ErrNotFound", err)
	}
}

// testSubscriptionByName: SubscriptionByName finds the subscription of an
// account by its exact name (letter case included), another account's of
// the same name in that account only, and a renamed one by its new name
// only; an empty account is the default one.
func testSubscriptionByName(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	mine := b.subWith(account.DefaultID, "https://n.example/a", func(s *subscription.Subscription) { s.Name = "billing" })
	theirs := b.subWith(acc.ID, "https://n.example/b", func(s *subscription.Subscription) { s.Name = "billing" })
	b.subWith(account.DefaultID, "https://n.example/c", func(s *subscription.Subscription) { s.Name = "billing-2" })
	for _, c := range []struct {
		account string
		want    subscription.Subscription
	}{{"", mine}, {account.DefaultID, mine}, {acc.ID, theirs}} {
		got, err := b.s.SubscriptionByName(b.ctx, c.account, "billing")
		if err != nil {
			t.Fatalf("SubscriptionByName(%q, billing): %v", c.account, err)
		}
		stored, err := b.s.GetSubscription(b.ctx, c.want.ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "SubscriptionByName in "+c.account, got, stored)
	}
	for _, name := range []string{"Billing", "billin", "billing ", ""} {
		if _, err := b.s.SubscriptionByName(b.ctx, "", name); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SubscriptionByName(%q) = %v, want ErrNotFound", name, err)
		}
	}
	mine.Name = "invoices"
	updateSub(b, mine)
	if _, err := b.s.SubscriptionByName(b.ctx, "", "billing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SubscriptionByName(the old name) = %v, want ErrNotFound", err)
	}
	if got, err := b.s.SubscriptionByName(b.ctx, "", "invoices"); err != nil || got.ID != mine.ID {
		t.Fatalf("SubscriptionByName(the new name) = %+v, %v", got, err)
	}
}

func testSubscriptionList(t *testing.T, b *bundle) {
	var want []string
	for i := 0; i < 7; i++ {
		want = append(want, b.sub("https://example.com/"+string(rune('a'+i))).ID)
	}
	for _, limit := range []int{1, 3, 7, 8} {
		got := allPages(t, limit, func(p store.Page) ([]string, string, error) {
			ss, next, err := b.s.ListSubscriptions(b.ctx, "", p)
			var ids []string
			for _, s := range ss {
				ids = append(ids, s.ID)
			}
			return ids, next, err
		})
		equal(t, "listed", got, want)
	}
	changes, err := b.s.SubscriptionChanges(b.ctx, 0)
	if err != nil || !changes.Full {
		t.Fatalf("SubscriptionChanges(0): full %v, %v; want every subscription", changes.Full, err)
	}
	all := changes.Changed
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	equal(t, "all", sortedCopy(ids), want)
	first, err := b.s.GetSubscription(b.ctx, want[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.ID == first.ID {
			equal(t, "SubscriptionChanges item", s, first)
		}
	}
}

func testSubscriptionDelete(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	dead := b.deadAfterTwo(a, b.now)
	pending := b.deliver(a, b.now)
	lev, _ := b.claimOne(a, b.now)
	leased := lev.Deliveries[0].ID
	qev, _ := b.claimOne(a, b.now)
	queued := qev.Deliveries[0].ID
	q := failed(queued, 1, b.now, b.now, time.Time{})
	q.Status = delivery.StatusQueued
	b.record(q)
	dev, _ := b.claimOne(a, b.now)
	delivered := dev.Deliveries[0].ID
	b.record(succeeded(delivered, 1, b.now))
	keep := b.deliver(c, b.now)

	before := map[string]delivery.Delivery{}
	for _, id := range []string{pending, leased, queued, delivered, dead, keep} {
		before[id] = b.get(id)
	}
	if err := b.s.DeleteSubscription(b.ctx, a.ID, b.at(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.GetSubscription(b.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSubscription after delete = %v", err)
	}
	for _, id := range []string{pending, leased, queued} {
		want := before[id]
		want.Status, want.DeadLetterReason = delivery.StatusDropped, delivery.ReasonSubscriptionDeleted
		got := b.get(id)
		want.NextAttemptAt = got.NextAttemptAt
		equal(t, "dropped", got, want)
	}
	for _, id := range []string{delivered, dead, keep} {
		equal(t, "untouched", b.get(id), before[id])
	}
	if _, ok, err := b.s.NextDue(b.ctx, a.EndpointID); err != nil || ok {
		t.Fatalf("deleted subscription's endpoint still due (ok %v, err %v)", ok, err)
	}
	if got := b.claim(a.EndpointID, b.at(10*time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed dropped deliveries %v", claimedIDs(got))
	}
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != 1 || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want 1 (subscription c), 0", fresh, retry, err)
	}
	// The name is free again.
	again := a
	again.ID = b.id("sub_")
	if err := b.s.CreateSubscription(b.ctx, again); err != nil {
		t.Fatalf("reusing a deleted subscription's name: %v", err)
	}
}

// testTenantNames: a subscription name is unique in its account only.
func testTenantNames(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	named := func(account, name string) subscription.Subscription {
		s := subscription.Subscription{ID: b.id("sub_"), AccountID: account, Name: name, URL: "https://n.example/",
			EndpointID: b.s.EndpointID(account, "https://n.example/"), State: "active", CreatedAt: b.now, UpdatedAt: b.now}
		return s
	}
	a, x := named(account.DefaultID, "billing"), named(acc.ID, "billing")
	for _, s := range []subscription.Subscription{a, x} {
		if err := b.s.CreateSubscription(b.ctx, s); err != nil {
			t.Fatalf("CreateSubscription(%q in %s) = %v", s.Name, s.AccountID, err)
		}
	}
	if err := b.s.CreateSubscription(b.ctx, named(acc.ID, "billing")); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("CreateSubscription(a name taken in its account) = %v, want ErrNameTaken", err)
	}
	if err := b.s.CreateSubscription(b.ctx, named("", "billing")); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("CreateSubscription(a name taken in the default account) = %v, want ErrNameTaken", err)
	}
	// Renaming into a name another account uses is fine; into one the
	// account uses is not.
	y := named(acc.ID, "shipping")
	if err := b.s.CreateSubscription(b.ctx, y); err != nil {
		t.Fatal(err)
	}
	a.Name = "shipping"
	updateSub(b, a)
	y.Name = "billing"
	if err := b.s.UpdateSubscription(b.ctx, y); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("UpdateSubscription(a name taken in its account) = %v, want ErrNameTaken", err)
	}
}

// testTenantUpdateKeepsAccount: an update naming another account than the
// subscription's finds no subscription and changes nothing.
func testTenantUpdateKeepsAccount(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	x := b.subIn(acc.ID, "https://x.example/hook")
	before, err := b.s.GetSubscription(b.ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, account := range []string{"", account.DefaultID} {
		moved := x
		moved.AccountID, moved.EndpointID, moved.EventTypes = account, b.s.EndpointID(account, x.URL), []string{"other"}
		if err := b.s.UpdateSubscription(b.ctx, moved); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UpdateSubscription into account %q = %v, want ErrNotFound", account, err)
		}
	}
	after, err := b.s.GetSubscription(b.ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "subscription after refused updates", after, before)
	noEndpoint(b, b.s.EndpointID("", x.URL))
}
