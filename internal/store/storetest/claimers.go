package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// testConcurrentClaimsDisjoint runs CheckClaimsDisjoint on the test's store.
func testConcurrentClaimsDisjoint(t *testing.T, b *bundle) {
	CheckClaimsDisjoint(t, b.s)
}

// CheckClaimsDisjoint has several claimers per store, each with a lease
// owner of its own, call ClaimDue on one endpoint at once, round after
// round, until nothing is left: no delivery is held by two claimers at once
// and every delivery is claimed. Claimers give some of what they claim back
// (Release), which others then claim: a delivery may go to several claimers
// over time, never to two at once. Half of each round's deliveries are
// fresh, half retries.
//
// nodes are stores on one database: the conformance suite passes its one
// store; a shared backend may also pass several (several processes). The
// database must hold no pending deliveries.
func CheckClaimsDisjoint(t *testing.T, nodes ...store.Store) {
	t.Helper()
	const rounds, perRound, claimers = 3, 400, 3
	ctx := context.Background()
	at := base
	url := "https://claimers.example/hook"
	id := ids.New("sub_", at)
	sub := subscription.Subscription{ID: id, Name: "claimers-" + id, URL: url,
		EndpointID: nodes[0].EndpointID("", url), EventTypes: []string{"x"}, State: "active", CreatedAt: at, UpdatedAt: at}
	if err := nodes[0].CreateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	ep := sub.EndpointID
	setup := store.Lease{Owner: "setup", Until: base.Add(10000 * time.Hour)}
	n := 0
	for round := range rounds {
		published := base.Add(time.Duration(round) * time.Second)
		var all []string
		for range perRound / 100 {
			evs := make([]store.NewEvent, 100)
			for i := range evs {
				n++
				id := ids.New("dlv_", published)
				all = append(all, id)
				evs[i] = store.NewEvent{ID: fmt.Sprintf("%s-%d", sub.ID, n), Source: "/claimers", Type: "x",
					Payload: []byte(`{}`), PublishedAt: published,
					Deliveries: []store.NewDelivery{{ID: id, SubscriptionID: sub.ID, EndpointID: ep, Claimed: i%2 == 1}}}
			}
			if _, err := nodes[round%len(nodes)].Publish(ctx, evs, store.PublishOptions{Lease: setup}); err != nil {
				t.Fatal(err)
			}
		}
		// The claimed half fails its first attempt: retries, due at once.
		var outs []store.Outcome
		for i := 1; i < len(all); i += 2 {
			outs = append(outs, store.Outcome{
				Attempt: delivery.Attempt{DeliveryID: all[i], Number: 1, StartedAt: published, StatusCode: 500, Outcome: "http_500"},
				Status:  delivery.StatusPending, Attempts: 1, RoundAttempts: 1, FirstFailure: published, NextAttemptAt: published,
			})
		}
		if err := nodes[0].Record(ctx, outs); err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		holder := map[string]string{} // delivery → the claimer holding it now
		var wg sync.WaitGroup
		errc := make(chan error, len(nodes)*claimers)
		now := base.Add(time.Hour)
		start := make(chan struct{})
		for ni, s := range nodes {
			for c := range claimers {
				me := fmt.Sprintf("node%d-claimer%d", ni, c)
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					lease := store.Lease{Owner: me, Until: base.Add(10000 * time.Hour)}
					for k := 0; ; k++ {
						got, err := s.ClaimDue(ctx, ep, now, 1+(k*7+c)%25, lease)
						if err != nil {
							errc <- err
							return
						}
						if len(got) == 0 {
							return
						}
						var release []string
						mu.Lock()
						for i, cl := range got {
							if h, ok := holder[cl.ID]; ok {
								mu.Unlock()
								errc <- fmt.Errorf("%s claimed %s, held by %s", me, cl.ID, h)
								return
							}
							if i%5 == 4 {
								release = append(release, cl.ID) // give some back
								continue
							}
							holder[cl.ID] = me
						}
						mu.Unlock()
						if len(release) > 0 {
							if err := s.Release(ctx, release, me); err != nil {
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
		if len(holder) != len(all) {
			t.Fatalf("round %d: %d deliveries claimed, want %d", round, len(holder), len(all))
		}
		// Finish them, each by its holder, so the next round starts from an
		// empty endpoint.
		var done []store.Outcome
		for _, id := range all {
			done = append(done, store.Outcome{Attempt: delivery.Attempt{DeliveryID: id, Number: 2, StartedAt: now},
				Status: delivery.StatusDelivered, Attempts: 2, RoundAttempts: 2, DeliveredAt: now, LeaseOwner: holder[id]})
		}
		last := nodes[len(nodes)-1]
		if err := last.Record(ctx, done); err != nil {
			t.Fatal(err)
		}
		if fresh, retry, err := last.CountPending(ctx); err != nil || fresh+retry != 0 {
			t.Fatalf("round %d: %d+%d still pending (%v); want every holder's outcome applied", round, fresh, retry, err)
		}
	}
}
