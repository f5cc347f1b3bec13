package enginetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

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
			if _, err := b.s.Record(b.ctx, []store.Outcome{succeeded(ev.Deliveries[0].ID, 1, b.now)}); err != nil {
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
