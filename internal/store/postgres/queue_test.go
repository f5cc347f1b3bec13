package postgres

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// pullFixture creates a pull subscription on s and returns it.
func pullFixture(t *testing.T, f *fixture, s *Store, name string) subscription.Subscription {
	t.Helper()
	sub := subscription.Subscription{ID: ids.New("sub_", t0), Name: name, EventTypes: []string{"x"},
		State: subscription.StateActive, DeliveryMode: subscription.ModePull, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateSubscription(f.ctx, sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

// enqueue publishes n events on s, each with a queued delivery to sub, and
// returns the deliveries' IDs.
func enqueue(t *testing.T, f *fixture, s *Store, sub subscription.Subscription, n int) []string {
	t.Helper()
	evs := f.events(n, t0)
	out := make([]string, n)
	for i := range evs {
		evs[i].Deliveries = []store.NewDelivery{{ID: ids.New("dlv_", t0), SubscriptionID: sub.ID, Queued: true}}
		out[i] = evs[i].Deliveries[0].ID
	}
	f.publish(s, evs, store.Lease{})
	return out
}

// TestTwoNodesReceiveDisjoint: consumers on two nodes (two stores, two
// pools) receive from one subscription at once, at one now with a long
// lock, until it has nothing receivable: every delivery is received
// exactly once, and every lock settles.
func TestTwoNodesReceiveDisjoint(t *testing.T) {
	dbURL := freshSchema(t)
	nodes := []*Store{openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})}
	f := newFixture(t, nodes[0])
	sub := pullFixture(t, f, nodes[0], "pull")
	const total, consumers = 600, 8
	want := enqueue(t, f, nodes[1], sub, total)
	now := t0.Add(time.Second)

	var mu sync.Mutex
	got := map[string]int{}
	var tokens []string
	var wg sync.WaitGroup
	errc := make(chan error, total+consumers)
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[c%2]
			for {
				res, err := s.Receive(f.ctx, store.ReceiveRequest{SubscriptionID: sub.ID, Now: now, Max: 1 + c*3, LockFor: time.Hour})
				if err != nil {
					errc <- err
					return
				}
				if len(res.Received) == 0 {
					if !res.NextAt.IsZero() && !res.NextAt.After(now) {
						continue // some are held by another receive still in progress
					}
					return
				}
				mu.Lock()
				for _, r := range res.Received {
					got[r.ID]++
					tokens = append(tokens, r.LockToken)
					if r.Receives != 1 || !r.LockedUntil.Equal(now.Add(time.Hour)) {
						errc <- fmt.Errorf("received %s: receives %d, locked until %v", r.ID, r.Receives, r.LockedUntil)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if len(got) != total {
		t.Fatalf("received %d distinct deliveries, want %d", len(got), total)
	}
	for _, id := range want {
		if got[id] != 1 {
			t.Fatalf("delivery %s received %d times", id, got[id])
		}
	}
	// Every token holds its lock, once: acknowledging them all succeeds.
	for i := 0; i < len(tokens); i += 500 {
		res, err := nodes[i/500%2].Settle(f.ctx, store.SettleRequest{SubscriptionID: sub.ID, Action: store.Acknowledge,
			Tokens: tokens[i:min(i+500, len(tokens))], Now: now.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		for j, err := range res {
			if err != nil {
				t.Fatalf("acknowledge %s: %v", tokens[i+j], err)
			}
		}
	}
	if n, err := nodes[0].CountQueued(f.ctx); err != nil || n != 0 {
		t.Fatalf("CountQueued = %d, %v; want 0", n, err)
	}
}

// queuedLog records Options.OnQueued's calls.
type queuedLog struct {
	mu    sync.Mutex
	calls [][]string
	ch    chan string // every ID heard
}

func newQueuedLog() *queuedLog { return &queuedLog{ch: make(chan string, 100)} }

func (l *queuedLog) onQueued(subs []string) {
	l.mu.Lock()
	l.calls = append(l.calls, slices.Clone(subs))
	l.mu.Unlock()
	for _, s := range subs {
		select {
		case l.ch <- s:
		default:
		}
	}
}

// await waits for the ID to be heard.
func (l *queuedLog) await(t *testing.T, what, id string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-l.ch:
			if got == id {
				return
			}
		case <-timeout:
			t.Fatalf("%s: OnQueued never heard of %s", what, id)
		}
	}
}

// heard returns the calls so far and forgets them.
func (l *queuedLog) heard() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

// heardAlready fails unless id was among the calls so far, each of which
// names one of ids only; it forgets them.
func (l *queuedLog) heardAlready(t *testing.T, what, id string, ids ...string) {
	t.Helper()
	calls, found := l.heard(), false
	for _, c := range calls {
		for _, got := range c {
			found = found || got == id
			if !slices.Contains(ids, got) {
				t.Fatalf("%s: OnQueued heard %v; want only %v", what, calls, ids)
			}
		}
	}
	if !found {
		t.Fatalf("%s: OnQueued heard %v, not yet %s", what, calls, id)
	}
}

// TestOnQueuedAcrossNodes: what node A makes receivable reaches node B's
// OnQueued through LISTEN (a publish of queued deliveries, a release, a
// deactivation), and A's own OnQueued before A's call returns (A hears its
// own notifications too, later: not counted here); another schema's
// notifications are not heard.
func TestOnQueuedAcrossNodes(t *testing.T) {
	dbURL := freshSchema(t)
	logA, logB, logOther := newQueuedLog(), newQueuedLog(), newQueuedLog()
	a := openAt(t, dbURL, Options{OnQueued: logA.onQueued})
	b := openAt(t, dbURL, Options{OnQueued: logB.onQueued})
	other := openAt(t, freshSchema(t), Options{OnQueued: logOther.onQueued})
	// The listeners are listening once they have signalled their first
	// (re)connection.
	for _, s := range []*Store{b, other} {
		select {
		case <-s.SubscriptionsChanged():
		case <-time.After(10 * time.Second):
			t.Fatal("the listener did not connect")
		}
	}
	f := newFixture(t, a)
	pull := pullFixture(t, f, a, "pull")

	// A publish of queued deliveries (two, one subscription: one ID).
	enqueue(t, f, a, pull, 2)
	logA.heardAlready(t, "A's publish", pull.ID, pull.ID)
	logB.await(t, "publish", pull.ID)

	// A release.
	now := t0.Add(time.Second)
	res, err := a.Receive(f.ctx, store.ReceiveRequest{SubscriptionID: pull.ID, Now: now, Max: 10, LockFor: time.Minute})
	if err != nil || len(res.Received) != 2 {
		t.Fatalf("receive: %+v, %v", res, err)
	}
	logA.heard()
	if out, err := a.Settle(f.ctx, store.SettleRequest{SubscriptionID: pull.ID, Action: store.Release,
		Tokens: []string{res.Received[0].LockToken}, Now: now}); err != nil || out[0] != nil {
		t.Fatalf("release: %v, %v", out, err)
	}
	logA.heardAlready(t, "A's release", pull.ID, pull.ID)
	logB.await(t, "release", pull.ID)
	// An acknowledgement makes nothing receivable.
	if out, err := a.Settle(f.ctx, store.SettleRequest{SubscriptionID: pull.ID, Action: store.Acknowledge,
		Tokens: []string{res.Received[1].LockToken}, Now: now}); err != nil || out[0] != nil {
		t.Fatalf("acknowledge: %v, %v", out, err)
	}

	// A deactivation: the failed push is queued, the subscription
	// deactivated.
	evs := f.events(2, t0)
	f.publish(a, evs, store.Lease{})
	o := store.Outcome{Attempt: delivery.Attempt{DeliveryID: evs[0].Deliveries[0].ID, Number: 1, StartedAt: now, Duration: time.Second,
		StatusCode: 503, Outcome: "http_503"}, Status: delivery.StatusQueued, Attempts: 1, RoundAttempts: 1, FirstFailure: now.Add(time.Second),
		NextAttemptAt: now.Add(time.Second), LastStatusCode: 503, LastOutcome: "http_503", Deactivate: true}
	logA.heard()
	if _, err := a.Record(f.ctx, []store.Outcome{o}); err != nil {
		t.Fatal(err)
	}
	logA.heardAlready(t, "A's deactivation", f.sub.ID, f.sub.ID, pull.ID)
	logB.await(t, "deactivation", f.sub.ID)
	sub, err := b.GetSubscription(f.ctx, f.sub.ID)
	if err != nil || sub.State != subscription.StateDeactivated {
		t.Fatalf("subscription after the deactivation: %+v, %v", sub, err)
	}
	// The other pending delivery was queued too, receivable from the
	// attempt's start (sqlrow.AttemptDueMS).
	d, err := b.GetDelivery(f.ctx, evs[1].Deliveries[0].ID)
	if err != nil || d.Status != delivery.StatusQueued || !d.NextAttemptAt.Equal(now) {
		t.Fatalf("the subscription's other delivery: %+v, %v", d, err)
	}

	// Nothing of this schema reached the other schema's store; give a
	// stray notification time to arrive.
	time.Sleep(200 * time.Millisecond)
	if got := logOther.heard(); len(got) != 0 {
		t.Fatalf("another schema's OnQueued heard %v", got)
	}
	// B heard nothing it did not have to: only these subscriptions.
	for _, call := range logB.heard() {
		for _, id := range call {
			if id != pull.ID && id != f.sub.ID {
				t.Fatalf("B heard of %s", id)
			}
		}
	}
}
