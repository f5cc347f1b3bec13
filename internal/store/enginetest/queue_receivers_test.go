package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// CheckReceivesDisjoint has several consumers per store receive from one
// pull subscription at once, at one instant (so no lock expires), round
// after round, until nothing is receivable: no delivery is locked by two
// consumers at once, and every one is received. Consumers release some of
// what they receive at once (Release without delay), which others then
// receive: a delivery may go to several consumers over time, never to two
// at once. At the end every holder acknowledges what it holds, and each
// acknowledgement applies.
//
// nodes are stores on one database: the conformance suite passes its one
// store (Run: the only way SQLite runs it, since a second store on a file
// cannot be opened while the first is); a shared backend also passes
// several (several processes: PostgreSQL's TestTwoNodesReceiversDisjoint).
func CheckReceivesDisjoint(t *testing.T, nodes ...store.Store) {
	t.Helper()
	ctx := context.Background()
	id := ids.New("sub_", base)
	sub := subscription.Subscription{ID: id, Name: "receivers-" + id, EventTypes: []string{"x"}, State: subscription.StateActive,
		DeliveryMode: subscription.ModePull, CreatedAt: base, UpdatedAt: base}
	if err := nodes[0].CreateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	queuedBefore, err := nodes[0].CountQueued(ctx)
	if err != nil {
		t.Fatal(err)
	}
	publishReceivable(t, nodes, id)
	now := base.Add(time.Hour)
	holder := receiveAll(t, nodes, id, now)
	if len(holder) != receivesTotal {
		t.Fatalf("%d deliveries received, want %d", len(holder), receivesTotal)
	}
	var tokens []string
	for _, tok := range holder {
		tokens = append(tokens, tok)
	}
	last := nodes[len(nodes)-1]
	got, err := last.Settle(ctx, store.SettleRequest{SubscriptionID: id, Action: store.Acknowledge, Tokens: tokens, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got {
		if e != nil {
			t.Fatalf("acknowledging %s: %v; want every holder's lock live", tokens[i], e)
		}
	}
	if n, err := last.CountQueued(ctx); err != nil || n != queuedBefore {
		t.Fatalf("CountQueued = %d, %v; want %d: every delivery acknowledged", n, err, queuedBefore)
	}
}

// CheckReceivesDisjoint's sizes: deliveries, consumers a store.
const receivesTotal, consumersPerNode = 600, 4

// publishReceivable publishes receivesTotal queued deliveries to pull
// subscription id, through one of nodes in turn.
func publishReceivable(t *testing.T, nodes []store.Store, id string) {
	t.Helper()
	for batch := range receivesTotal / 100 {
		evs := make([]store.NewEvent, 100)
		for i := range evs {
			published := base.Add(time.Duration(batch*100+i) * time.Millisecond)
			evs[i] = store.NewEvent{ID: fmt.Sprintf("%s-%d-%d", id, batch, i), Source: "/receivers", Type: "x",
				Payload: []byte(`{}`), PublishedAt: published,
				Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", published), SubscriptionID: id, Queued: true}}}
		}
		if _, err := nodes[batch%len(nodes)].Publish(context.Background(), evs, store.PublishOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// receiveAll has consumersPerNode consumers on each of nodes receive from
// subscription id at now, all at once, until nothing is receivable, and
// returns the lock token each delivery is held under at the end.
func receiveAll(t *testing.T, nodes []store.Store, id string, now time.Time) map[string]string {
	t.Helper()
	return takeAll(t, nodes, consumersPerNode, "consumer", func(s store.Store, me string, c int, h *holders) error {
		return receiveUntilEmpty(s, id, now, me, c, h)
	})
}

// receiveUntilEmpty is one consumer, me (the c-th of its store): it
// receives from subscription id at now, in batches of varying size,
// releasing some at once, until a receive returns nothing.
func receiveUntilEmpty(s store.Store, id string, now time.Time, me string, c int, h *holders) error {
	ctx := context.Background()
	for k := 0; ; k++ {
		res, err := s.Receive(ctx, store.ReceiveRequest{SubscriptionID: id, Now: now, Max: 1 + (k*7+c)%25,
			LockFor: time.Hour, DeadLetter: true})
		if err != nil || len(res.Received) == 0 {
			return err
		}
		rs := res.Received
		giveBack, err := h.take(me, receivedIDs(rs), func(i int) string { return rs[i].LockToken })
		if err != nil {
			return err
		}
		var release []string
		for _, i := range giveBack {
			release = append(release, rs[i].LockToken)
		}
		if len(release) == 0 {
			continue
		}
		got, err := s.Settle(ctx, store.SettleRequest{SubscriptionID: id, Action: store.Release, Tokens: release, Now: now})
		if err != nil {
			return err
		}
		for i, e := range got {
			if e != nil {
				return fmt.Errorf("%s released %s: %w", me, release[i], e)
			}
		}
	}
}
