package enginetest

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
// store (Run: the only way SQLite runs it, since a second store on a file
// cannot be opened while the first is); a shared backend also passes
// several (several processes: PostgreSQL's TestTwoNodesClaimDisjoint).
// The database must hold no pending deliveries.
func CheckClaimsDisjoint(t *testing.T, nodes ...store.Store) {
	t.Helper()
	sub := claimersSubscription(t, nodes[0])
	for round := range claimRounds {
		all := publishClaimRound(t, nodes, sub, round)
		now := base.Add(time.Hour)
		holder := claimAll(t, nodes, sub.EndpointID, now)
		if len(holder) != len(all) {
			t.Fatalf("round %d: %d deliveries claimed, want %d", round, len(holder), len(all))
		}
		finishClaimRound(t, nodes[len(nodes)-1], all, holder, now, round)
	}
}

// CheckClaimsDisjoint's sizes: rounds, deliveries a round, claimers a
// store.
const claimRounds, claimsPerRound, claimersPerNode = 3, 400, 3

// claimersSubscription creates CheckClaimsDisjoint's subscription on s.
func claimersSubscription(t *testing.T, s store.Store) subscription.Subscription {
	t.Helper()
	url := "https://claimers.example/hook"
	id := ids.New("sub_", base)
	sub := subscription.Subscription{ID: id, Name: "claimers-" + id, URL: url,
		EndpointID: s.EndpointID("", url), EventTypes: []string{"x"}, State: "active", CreatedAt: base, UpdatedAt: base}
	if err := s.CreateSubscription(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

// publishClaimRound publishes a round's deliveries to sub, through one of
// nodes in turn, and returns their IDs: half of them fresh, half claimed
// at publish and failed once (retries, due at once).
func publishClaimRound(t *testing.T, nodes []store.Store, sub subscription.Subscription, round int) []string {
	t.Helper()
	ctx := context.Background()
	setup := store.Lease{Owner: "setup", Until: base.Add(10000 * time.Hour)}
	published := base.Add(time.Duration(round) * time.Second)
	var all []string
	for batch := range claimsPerRound / 100 {
		evs := make([]store.NewEvent, 100)
		for i := range evs {
			id := ids.New("dlv_", published)
			all = append(all, id)
			evs[i] = store.NewEvent{ID: fmt.Sprintf("%s-%d-%d-%d", sub.ID, round, batch, i), Source: "/claimers", Type: "x",
				Payload: []byte(`{}`), PublishedAt: published,
				Deliveries: []store.NewDelivery{{ID: id, SubscriptionID: sub.ID, EndpointID: sub.EndpointID, Claimed: i%2 == 1}}}
		}
		if _, err := nodes[round%len(nodes)].Publish(ctx, evs, store.PublishOptions{Lease: setup}); err != nil {
			t.Fatal(err)
		}
	}
	var outs []store.Outcome
	for i := 1; i < len(all); i += 2 {
		outs = append(outs, store.Outcome{
			Attempt: delivery.Attempt{DeliveryID: all[i], Number: 1, StartedAt: published, StatusCode: 500, Outcome: "http_500"},
			Status:  delivery.StatusPending, Attempts: 1, RoundAttempts: 1, FirstFailure: published, NextAttemptAt: published,
		})
	}
	if _, err := nodes[0].Record(ctx, outs); err != nil {
		t.Fatal(err)
	}
	return all
}

// holders is which claimer (or consumer) holds each delivery now.
type holders struct {
	mu sync.Mutex
	m  map[string]string
}

// take records that me holds the deliveries of ids but those it gives back
// (every fifth), which it returns; it fails when another holds one.
func (h *holders) take(me string, ids []string, holdAs func(i int) string) (giveBack []int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, id := range ids {
		if other, ok := h.m[id]; ok {
			return nil, fmt.Errorf("%s took %s, held by %s", me, id, other)
		}
		if i%5 == 4 {
			giveBack = append(giveBack, i)
			continue
		}
		h.m[id] = holdAs(i)
	}
	return giveBack, nil
}

// claimAll has claimersPerNode claimers on each of nodes claim from
// endpoint ep at now, all at once, until nothing is left, and returns who
// holds each delivery at the end.
func claimAll(t *testing.T, nodes []store.Store, ep string, now time.Time) map[string]string {
	t.Helper()
	return takeAll(t, nodes, claimersPerNode, "claimer", func(s store.Store, me string, c int, h *holders) error {
		return claimUntilEmpty(s, ep, now, me, c, h)
	})
}

// takeAll runs perNode takers on each of nodes at once, the c-th of node n
// named node<n>-<kind><c>, each take(s, name, c, h) until it returns, and
// fails the test on any error; it returns what h holds at the end.
func takeAll(t *testing.T, nodes []store.Store, perNode int, kind string, take func(s store.Store, me string, c int, h *holders) error) map[string]string {
	t.Helper()
	h := &holders{m: map[string]string{}}
	var wg sync.WaitGroup
	errc := make(chan error, len(nodes)*perNode)
	start := make(chan struct{})
	for ni, s := range nodes {
		for c := range perNode {
			me := fmt.Sprintf("node%d-%s%d", ni, kind, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := take(s, me, c, h); err != nil {
					errc <- err
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
	return h.m
}

// claimUntilEmpty is one claimer, me (the c-th of its store): it claims
// from ep at now, in batches of varying size, giving some back, until a
// claim returns nothing.
func claimUntilEmpty(s store.Store, ep string, now time.Time, me string, c int, h *holders) error {
	ctx := context.Background()
	lease := store.Lease{Owner: me, Until: base.Add(10000 * time.Hour)}
	for k := 0; ; k++ {
		got, err := s.ClaimDue(ctx, ep, now, 1+(k*7+c)%25, lease)
		if err != nil || len(got) == 0 {
			return err
		}
		giveBack, err := h.take(me, claimedIDs(got), func(int) string { return me })
		if err != nil {
			return err
		}
		var release []string
		for _, i := range giveBack {
			release = append(release, got[i].ID)
		}
		if len(release) > 0 {
			if err := s.Release(ctx, release, me); err != nil {
				return err
			}
		}
	}
}

// finishClaimRound records the deliveries of all as delivered, each by its
// holder, through last, and checks that every outcome applied: the next
// round starts from an empty endpoint.
func finishClaimRound(t *testing.T, last store.Store, all []string, holder map[string]string, now time.Time, round int) {
	t.Helper()
	ctx := context.Background()
	var done []store.Outcome
	for _, id := range all {
		done = append(done, store.Outcome{Attempt: delivery.Attempt{DeliveryID: id, Number: 2, StartedAt: now},
			Status: delivery.StatusDelivered, Attempts: 2, RoundAttempts: 2, DeliveredAt: now, LeaseOwner: holder[id]})
	}
	if _, err := last.Record(ctx, done); err != nil {
		t.Fatal(err)
	}
	if fresh, retry, err := last.CountPending(ctx); err != nil || fresh+retry != 0 {
		t.Fatalf("round %d: %d+%d still pending (%v); want every holder's outcome applied", round, fresh, retry, err)
	}
}
