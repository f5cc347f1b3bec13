package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// bundle is one test's store, its time and IDs, and the helpers that make
// what checks of every contract start from: accounts, subscriptions,
// events, and deliveries in each state. The helpers of one contract are
// functions in that contract's files.
type bundle struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
	// now is the suite's "current time": a fixed instant, millisecond
	// precision, UTC. Tests move time by adding to it.
	now   time.Time
	lease store.Lease
	// idAt advances by a millisecond per generated ID, so IDs made later in a
	// test always sort after earlier ones.
	idAt time.Time
	n    int
}

// base is the suite's "current time" (bundle.now) at the start of each test.
var base = time.Date(2030, time.March, 4, 5, 6, 7, 0, time.UTC)

// setup opens a store for t (closed when t ends) and returns its bundle.
func setup(t *testing.T, open Opener) *bundle {
	t.Helper()
	s := open(t)
	t.Cleanup(func() { _ = s.Close() })
	return &bundle{
		t:     t,
		s:     s,
		ctx:   context.Background(),
		now:   base,
		lease: store.Lease{Owner: "node-a", Until: base.Add(10000 * time.Hour)},
		idAt:  base,
	}
}

// id returns a new ID with prefix, sorting after every ID made before it.
func (b *bundle) id(prefix string) string {
	b.idAt = b.idAt.Add(time.Millisecond)
	return ids.New(prefix, b.idAt)
}

// at returns the suite's base time plus d.
func (b *bundle) at(d time.Duration) time.Time { return b.now.Add(d) }

// sub creates a subscription to url with a unique name in account.DefaultID.
func (b *bundle) sub(url string) subscription.Subscription {
	b.t.Helper()
	return b.subIn(account.DefaultID, url)
}

// subIn creates a subscription to url with a unique name in an account.
func (b *bundle) subIn(account, url string) subscription.Subscription {
	b.t.Helper()
	return b.subWith(account, url, nil)
}

// subWith creates a subscription to url with a unique name in an account,
// as subIn does, after edit (when not nil) changed it.
func (b *bundle) subWith(account, url string, edit func(*subscription.Subscription)) subscription.Subscription {
	b.t.Helper()
	b.n++
	s := subscription.Subscription{
		ID:            b.id("sub_"),
		AccountID:     account,
		Name:          fmt.Sprintf("sub-%d", b.n),
		URL:           url,
		EventTypes:    []string{"invoice.paid"},
		RetryPolicy:   []byte(`{"preset":"eventgrid"}`),
		Timeout:       30 * time.Second,
		Headers:       map[string]string{"X-Api-Key": "k"},
		DeadLetter:    true,
		State:         "active",
		DeliveryMode:  subscription.ModePush,
		FailurePolicy: subscription.FailureRetry,
		CreatedAt:     b.now,
		UpdatedAt:     b.now,
	}
	if edit != nil {
		edit(&s)
	}
	if err := b.s.CreateSubscription(b.ctx, s); err != nil {
		b.t.Fatalf("CreateSubscription: %v", err)
	}
	b.endpoints(&s)
	return s
}

// endpoints sets s's EndpointID and DeadLetterEndpointID as the store
// sets them on a write.
func (b *bundle) endpoints(s *subscription.Subscription) {
	s.EndpointID, s.DeadLetterEndpointID = "", ""
	if s.DeliveryMode == "" || s.DeliveryMode == subscription.ModePush {
		s.EndpointID = b.s.EndpointID(s.AccountID, s.URL)
		if s.Delivery.DeadLetterURL != "" {
			s.DeadLetterEndpointID = b.s.EndpointID(s.AccountID, s.Delivery.DeadLetterURL)
		}
	}
}

// event returns an event published at `at` with one unclaimed delivery per
// subscription in subs, in the account of the first (without subs, with no
// account: account.DefaultID's).
func (b *bundle) event(at time.Time, subs ...subscription.Subscription) store.NewEvent {
	b.n++
	ev := store.NewEvent{
		ID:          fmt.Sprintf("evt-%d", b.n),
		Source:      "/billing",
		Type:        "invoice.paid",
		Subject:     fmt.Sprintf("invoices/%d", b.n),
		Payload:     []byte(fmt.Sprintf(`{"specversion":"1.0","id":"evt-%d","data":{"n":%d}}`, b.n, b.n)),
		PublishedAt: at,
	}
	for _, s := range subs {
		ev.Deliveries = append(ev.Deliveries, store.NewDelivery{ID: b.id("dlv_"), SubscriptionID: s.ID, EndpointID: s.EndpointID})
	}
	if len(subs) > 0 {
		ev.AccountID = subs[0].AccountID
	}
	return ev
}

// publish publishes events and fails the test on error.
func (b *bundle) publish(events ...store.NewEvent) []store.PublishResult {
	b.t.Helper()
	res, err := b.s.Publish(b.ctx, events, store.PublishOptions{Lease: b.lease})
	if err != nil {
		b.t.Fatalf("Publish: %v", err)
	}
	if len(res) != len(events) {
		b.t.Fatalf("Publish returned %d results for %d events", len(res), len(events))
	}
	return res
}

// deliver publishes one event at `at` to sub and returns its delivery's ID.
func (b *bundle) deliver(sub subscription.Subscription, at time.Time) string {
	b.t.Helper()
	ev := b.event(at, sub)
	b.publish(ev)
	return ev.Deliveries[0].ID
}

func (b *bundle) get(id string) delivery.Delivery {
	b.t.Helper()
	d, err := b.s.GetDelivery(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetDelivery(%s): %v", id, err)
	}
	return d
}

func (b *bundle) claim(endpointID string, now time.Time, limit int) []store.Claimed {
	b.t.Helper()
	cs, err := b.s.ClaimDue(b.ctx, endpointID, now, limit, b.lease)
	if err != nil {
		b.t.Fatalf("ClaimDue: %v", err)
	}
	return cs
}

// record records outcomes and returns which applied, checking that Record
// says it of each.
func (b *bundle) record(outcomes ...store.Outcome) (applied []bool) {
	b.t.Helper()
	applied, err := b.s.Record(b.ctx, outcomes)
	if err != nil {
		b.t.Fatalf("Record: %v", err)
	}
	if len(applied) != len(outcomes) {
		b.t.Fatalf("Record of %d outcomes reported %d applied or not", len(outcomes), len(applied))
	}
	return applied
}

// account creates an account with a new ID, named name, at b.now.
func (b *bundle) account(name string) account.Account {
	b.t.Helper()
	a := account.Account{ID: b.id("acc_"), Name: name, Settings: account.Settings{FailurePolicy: "queue"},
		CreatedAt: b.now, UpdatedAt: b.now}
	if err := b.s.CreateAccount(b.ctx, a); err != nil {
		b.t.Fatalf("CreateAccount(%s): %v", name, err)
	}
	return a
}

// retrying makes a delivery to sub, published at `published`, whose first
// attempt failed; it is due again at next (in the retry lane).
func (b *bundle) retrying(sub subscription.Subscription, published, next time.Time) string {
	b.t.Helper()
	ev := b.event(published, sub)
	ev.Deliveries[0].Claimed = true
	b.publish(ev)
	id := ev.Deliveries[0].ID
	b.record(failed(id, 1, published, published.Add(2*time.Second), next))
	return id
}

// deadAfterTwo makes a delivery to sub that failed twice and was then
// dead-lettered; published at `at`.
func (b *bundle) deadAfterTwo(sub subscription.Subscription, at time.Time) string {
	b.t.Helper()
	ev, _ := b.claimOne(sub, at)
	id := ev.Deliveries[0].ID
	b.record(failed(id, 1, at, at.Add(time.Second), at.Add(time.Minute)))
	if got := claimedIDs(b.claim(sub.EndpointID, at.Add(time.Minute), 100)); len(got) != 1 || got[0] != id {
		b.t.Fatalf("deadAfterTwo: claimed %v, want only %s (make other due deliveries after)", got, id)
	}
	b.record(deadLettered(id, 2, at.Add(time.Minute), at.Add(time.Second)))
	return id
}

// claimOne publishes a delivery to sub at `at` and claims it.
func (b *bundle) claimOne(sub subscription.Subscription, at time.Time) (store.NewEvent, int64) {
	b.t.Helper()
	ev := b.event(at, sub)
	ev.Deliveries[0].Claimed = true
	seq := b.publish(ev)[0].Seq
	return ev, seq
}

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

// queue publishes one event at `at` with a queued delivery to sub and
// returns the delivery's ID.
func (b *bundle) queue(sub subscription.Subscription, at time.Time) string {
	b.t.Helper()
	ev, _ := enqueue(b, at, sub)
	return ev.Deliveries[0].ID
}
