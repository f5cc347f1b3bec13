package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

var lifecycleTests = []test{
	{"ConcurrentPublish", testConcurrentPublish},
	{"ConcurrentMixedWrites", testConcurrentMixed},
	{"FailedPublishFailsAlone", testFailedPublishFailsAlone},
	{"Ping", testPing},
	{"Closed", testClosed},
}

// testConcurrentPublish publishes from 50 goroutines at once (their calls
// share group commits) and checks every row afterwards. Each goroutine also
// publishes one event that all of them publish: exactly one stores it.
func testConcurrentPublish(t *testing.T, b *bundle) {
	const workers, perWorker = 50, 20
	a := b.sub("https://a.example/hook")
	shared := b.event(b.now)
	events := make([][]store.NewEvent, workers)
	for w := range events {
		for i := 0; i < perWorker; i++ {
			events[w] = append(events[w], b.event(b.at(time.Duration(i)*time.Millisecond), a))
		}
	}
	results := make([][]store.PublishResult, workers)
	sharedRes := make([]store.PublishResult, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ev := range events[w] {
				res, err := b.s.Publish(b.ctx, []store.NewEvent{ev}, store.PublishOptions{Lease: b.lease})
				if err != nil {
					errs[w] = err
					return
				}
				results[w] = append(results[w], res[0])
			}
			res, err := b.s.Publish(b.ctx, []store.NewEvent{shared}, store.PublishOptions{Lease: b.lease})
			if err != nil {
				errs[w] = err
				return
			}
			sharedRes[w] = res[0]
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	seqs := map[int64]bool{}
	for w := range events {
		for i, ev := range events[w] {
			r := results[w][i]
			if r.Duplicate || seqs[r.Seq] {
				t.Fatalf("worker %d event %d: %+v (duplicate or reused seq)", w, i, r)
			}
			seqs[r.Seq] = true
			equal(t, "delivery", b.get(ev.Deliveries[0].ID), pendingDelivery(ev, 0, r.Seq))
			got, err := b.s.GetEvent(b.ctx, r.Seq)
			if err != nil || got.ID != ev.ID {
				t.Fatalf("event %d: %+v, %v", r.Seq, got, err)
			}
		}
	}
	originals := 0
	for _, r := range sharedRes {
		if !r.Duplicate {
			originals++
		}
		if r.Seq != sharedRes[0].Seq {
			t.Fatalf("shared event results disagree: %+v", sharedRes)
		}
	}
	if originals != 1 {
		t.Fatalf("shared event stored %d times, want once", originals)
	}
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != workers*perWorker || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want %d, 0", fresh, retry, err, workers*perWorker)
	}
	claimed := b.claim(a.EndpointID, b.at(time.Second), 10000)
	if len(claimed) != workers*perWorker {
		t.Fatalf("claimed %d, want %d", len(claimed), workers*perWorker)
	}
}

// testConcurrentMixed runs every kind of write at once: one failing call in
// a group commit must not fail the others.
func testConcurrentMixed(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i := 0; i < n; i++ {
		ev := b.event(b.now, a)
		ev.Deliveries[0].Claimed = true
		subName := fmt.Sprintf("taken-%d", i%2) // half of these creations fail
		subID := b.id("sub_")
		wg.Add(3)
		go func() {
			defer wg.Done()
			if _, err := b.s.Publish(b.ctx, []store.NewEvent{ev}, store.PublishOptions{Lease: b.lease}); err != nil {
				errs <- err
				return
			}
			if err := b.s.Record(b.ctx, []store.Outcome{succeeded(ev.Deliveries[0].ID, 1, b.now)}); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			err := b.s.CreateSubscription(b.ctx, subscription.Subscription{ID: subID, Name: subName, URL: "https://x.example/",
				EndpointID: b.s.EndpointID("", "https://x.example/"), State: "active", CreatedAt: b.now, UpdatedAt: b.now})
			if err != nil && !errors.Is(err, store.ErrNameTaken) {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := b.s.Redeliver(b.ctx, "dlv_unknown", b.now); !errors.Is(err, store.ErrNotFound) {
				errs <- fmt.Errorf("Redeliver(unknown) = %v", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{Status: delivery.StatusDelivered, Page: store.Page{Limit: 1000}})
	if err != nil || len(ds) != n {
		t.Fatalf("delivered: %d, %v; want %d", len(ds), err, n)
	}
	all, err := b.s.SubscriptionChanges(b.ctx, 0)
	if err != nil || len(all.Changed) != 3 {
		t.Fatalf("subscriptions: %d, %v; want 3 (a, taken-0, taken-1)", len(all.Changed), err)
	}
}

// testFailedPublishFailsAlone: of many Publish calls made at once (which
// the store groups into shared commits), those that fail (one of their
// deliveries has an ID already stored) fail alone: they write nothing, and
// every other call commits all it publishes.
func testFailedPublishFailsAlone(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	taken := b.event(b.now, a)
	b.publish(taken)
	takenID := taken.Deliveries[0].ID
	const rounds, calls, perCall = 3, 48, 5
	bad := func(i int) bool { return i%12 == 5 }
	good := 1
	for round := range rounds {
		evs := make([][]store.NewEvent, calls)
		for i := range evs {
			for range perCall {
				evs[i] = append(evs[i], b.event(b.now, a))
			}
			if bad(i) {
				evs[i][2].Deliveries[0].ID = takenID
			}
		}
		results := make([][]store.PublishResult, calls)
		errs := make([]error, calls)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range evs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i], errs[i] = b.s.Publish(b.ctx, evs[i], store.PublishOptions{Lease: b.lease})
			}()
		}
		close(start)
		wg.Wait()
		for i := range evs {
			if !bad(i) {
				if errs[i] != nil {
					t.Fatalf("round %d: call %d failed with the bad ones: %v", round, i, errs[i])
				}
				for j, ev := range evs[i] {
					if r := results[i][j]; r.Duplicate {
						t.Fatalf("round %d: call %d event %d: %+v, want stored", round, i, j, r)
					}
					equal(t, "delivery", b.get(ev.Deliveries[0].ID), pendingDelivery(ev, 0, results[i][j].Seq))
				}
				good += perCall
				continue
			}
			if errs[i] == nil {
				t.Fatalf("round %d: call %d published a delivery ID already stored without error", round, i)
			}
			for j, ev := range evs[i] {
				if j == 2 {
					continue
				}
				if _, err := b.s.GetDelivery(b.ctx, ev.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("round %d: failed call %d wrote delivery %s (err %v)", round, i, ev.Deliveries[0].ID, err)
				}
			}
			// Its events were not stored either: published again (with a
			// new delivery ID for the bad one), none is a duplicate.
			evs[i][2].Deliveries[0].ID = b.id("dlv_")
			for j, r := range b.publish(evs[i]...) {
				if r.Duplicate {
					t.Fatalf("round %d: failed call %d stored event %d", round, i, j)
				}
			}
			good += perCall
		}
	}
	if fresh, retry, err := b.s.CountPending(b.ctx); err != nil || fresh != int64(good) || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v; want %d, 0", fresh, retry, err, good)
	}
	equal(t, "the taken delivery", b.get(takenID).EventID, taken.ID)
}

func testPing(t *testing.T, b *bundle) {
	if err := b.s.Ping(b.ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testClosed(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	id := b.deliver(a, b.now)
	if err := b.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := map[string]error{}
	_, calls["Publish"] = b.s.Publish(b.ctx, []store.NewEvent{b.event(b.now, a)}, store.PublishOptions{Lease: b.lease})
	calls["Record"] = b.s.Record(b.ctx, []store.Outcome{succeeded(id, 1, b.now)})
	_, calls["ClaimDue"] = b.s.ClaimDue(b.ctx, a.EndpointID, b.now, 10, b.lease)
	calls["Release"] = b.s.Release(b.ctx, []string{id}, b.lease.Owner)
	_, calls["ExtendLeases"] = b.s.ExtendLeases(b.ctx, []string{id}, b.lease)
	_, calls["TryLead"] = b.s.TryLead(b.ctx, "cleanup", b.lease.Owner, b.now, b.at(time.Minute))
	_, calls["ModifyEndpoints"] = b.s.ModifyEndpoints(b.ctx, []string{a.EndpointID}, func([]*endpoint.Endpoint) error { return nil })
	_, calls["TakeProbe"] = b.s.TakeProbe(b.ctx, a.EndpointID, b.now, b.at(time.Minute))
	_, calls["GetDelivery"] = b.s.GetDelivery(b.ctx, id)
	_, _, calls["ListDeliveries"] = b.s.ListDeliveries(b.ctx, store.DeliveryFilter{})
	_, calls["DueEndpoints"] = b.s.DueEndpoints(b.ctx)
	_, _, calls["NextDue"] = b.s.NextDue(b.ctx, a.EndpointID)
	_, _, calls["CountPending"] = b.s.CountPending(b.ctx)
	_, calls["GetSubscription"] = b.s.GetSubscription(b.ctx, a.ID)
	calls["CreateSubscription"] = b.s.CreateSubscription(b.ctx, subscription.Subscription{ID: "sub_x", Name: "x", URL: "https://x/"})
	calls["DeleteSubscription"] = b.s.DeleteSubscription(b.ctx, a.ID, b.now)
	_, calls["Redeliver"] = b.s.Redeliver(b.ctx, id, b.now)
	_, calls["Cleanup"] = b.s.Cleanup(b.ctx, b.now, 10)
	calls["Ping"] = b.s.Ping(b.ctx)
	calls["CreateAccount"] = b.s.CreateAccount(b.ctx, account.Account{ID: "acc_x", Name: "x"})
	_, calls["GetAccount"] = b.s.GetAccount(b.ctx, account.DefaultID)
	calls["DeleteAccount"] = b.s.DeleteAccount(b.ctx, "acc_x")
	_, calls["CreateFirstKey"] = b.s.CreateFirstKey(b.ctx, account.Key{ID: "key_x", Hash: []byte("x")})
	_, calls["KeyByHash"] = b.s.KeyByHash(b.ctx, []byte("x"))
	_, calls["AuthVersion"] = b.s.AuthVersion(b.ctx)
	_, calls["Receive"] = b.s.Receive(b.ctx, store.ReceiveRequest{SubscriptionID: a.ID, Now: b.now, Max: 1, LockFor: time.Minute})
	_, calls["Settle"] = b.s.Settle(b.ctx, store.SettleRequest{SubscriptionID: a.ID, Action: store.Acknowledge,
		Tokens: []string{store.LockToken(id, "x")}, Now: b.now})
	_, calls["ReactivateSubscription"] = b.s.ReactivateSubscription(b.ctx, a.ID, b.now)
	_, calls["CountQueued"] = b.s.CountQueued(b.ctx)
	for name, err := range calls {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if err := b.s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}
