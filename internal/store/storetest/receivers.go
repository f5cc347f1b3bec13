package storetest

import (
	"context"
	"fmt"
	"sync"
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
// store; a shared backend may also pass several (several processes).
func CheckReceivesDisjoint(t *testing.T, nodes ...store.Store) {
	t.Helper()
	const total, consumers = 600, 4
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
	for batch := range total / 100 {
		evs := make([]store.NewEvent, 100)
		for i := range evs {
			published := base.Add(time.Duration(batch*100+i) * time.Millisecond)
			evs[i] = store.NewEvent{ID: fmt.Sprintf("%s-%d-%d", id, batch, i), Source: "/receivers", Type: "x",
				Payload: []byte(`{}`), PublishedAt: published,
				Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", published), SubscriptionID: id, Queued: true}}}
		}
		if _, err := nodes[batch%len(nodes)].Publish(ctx, evs, store.PublishOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	holder := map[string]string{} // delivery → the lock token of the consumer holding it
	var wg sync.WaitGroup
	errc := make(chan error, len(nodes)*consumers)
	now := base.Add(time.Hour)
	start := make(chan struct{})
	for ni, s := range nodes {
		for c := range consumers {
			me := fmt.Sprintf("node%d-consumer%d", ni, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k := 0; ; k++ {
					res, err := s.Receive(ctx, store.ReceiveRequest{SubscriptionID: id, Now: now, Max: 1 + (k*7+c)%25,
						LockFor: time.Hour, DeadLetter: true})
					if err != nil {
						errc <- err
						return
					}
					if len(res.Received) == 0 {
						return
					}
					var release []string
					mu.Lock()
					for i, r := range res.Received {
						if h, ok := holder[r.ID]; ok {
							mu.Unlock()
							errc <- fmt.Errorf("%s received %s, locked under %s", me, r.ID, h)
							return
						}
						if i%5 == 4 {
							release = append(release, r.LockToken) // give some back
							continue
						}
						holder[r.ID] = r.LockToken
					}
					mu.Unlock()
					if len(release) > 0 {
						got, err := s.Settle(ctx, store.SettleRequest{SubscriptionID: id, Action: store.Release, Tokens: release, Now: now})
						if err == nil {
							for i, e := range got {
								if e != nil {
									err = fmt.Errorf("%s released %s: %w", me, release[i], e)
									break
								}
							}
						}
						if err != nil {
							errc <- err
							return
						}
					}
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if len(holder) != total {
		t.Fatalf("%d deliveries received, want %d", len(holder), total)
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
