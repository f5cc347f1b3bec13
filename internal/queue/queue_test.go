package queue

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlite"
	"github.com/herald-events/herald/internal/subscription"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// setup returns a service over a real SQLite store holding one pull
// subscription, whose store notifications reach the service.
func setup(t *testing.T) (*Service, *sqlite.Store, *clock.Fake) {
	t.Helper()
	var svc *Service
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"),
		sqlite.Options{OnQueued: func(ids []string) { svc.Notify(ids) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(t0)
	svc = New(st, clk, nil, nil, nil)
	sub := subscription.Subscription{ID: "sub_pull", Name: "p", State: subscription.StateActive, DeliveryMode: subscription.ModePull,
		RetryPolicy: []byte(`{"preset":"eventgrid"}`), CreatedAt: t0, UpdatedAt: t0}
	if err := st.CreateSubscription(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	return svc, st, clk
}

func publish(t *testing.T, st *sqlite.Store, id string) {
	t.Helper()
	_, err := st.Publish(context.Background(), []store.NewEvent{{ID: id, Source: "/s", Type: "t", Payload: []byte(`{}`), PublishedAt: t0,
		Deliveries: []store.NewDelivery{{ID: "dlv_" + id, SubscriptionID: "sub_pull", Queued: true}}}}, store.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWaitEndsOnPublish: a waiting receive returns what a publish queued,
// without the clock moving.
func TestWaitEndsOnPublish(t *testing.T) {
	svc, st, _ := setup(t)
	got := make(chan store.ReceiveResult, 1)
	go func() {
		res, _ := svc.Receive(context.Background(), store.ReceiveRequest{SubscriptionID: "sub_pull", Max: 5, LockFor: time.Minute}, time.Minute)
		got <- res
	}()
	waitUntil(t, "the receive waiting", func() bool { return svc.Waiting() == 1 })
	publish(t, st, "a")
	select {
	case res := <-got:
		if len(res.Received) != 1 {
			t.Fatalf("got %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the publish did not wake the waiting receive")
	}
	if svc.Waiting() != 0 {
		t.Fatalf("%d waiters left", svc.Waiting())
	}
}

// TestWaitEndsAtLockExpiry: a receive waiting on a queue whose only
// delivery is locked wakes when the lock expires (the clock reaches NextAt),
// before its max_wait.
func TestWaitEndsAtLockExpiry(t *testing.T) {
	svc, st, clk := setup(t)
	publish(t, st, "a")
	first, err := svc.Receive(context.Background(), store.ReceiveRequest{SubscriptionID: "sub_pull", Max: 5, LockFor: 10 * time.Second}, 0)
	if err != nil || len(first.Received) != 1 {
		t.Fatalf("first receive: %+v, %v", first, err)
	}
	svc.TestSignals.Slept.Init(t)
	got := make(chan store.ReceiveResult, 1)
	go func() {
		res, _ := svc.Receive(context.Background(), store.ReceiveRequest{SubscriptionID: "sub_pull", Max: 5, LockFor: 10 * time.Second}, time.Minute)
		got <- res
	}()
	if until := svc.TestSignals.Slept.WaitOrTimeout(); !until.Equal(t0.Add(10*time.Second)) || svc.Waiting() != 1 {
		t.Fatalf("the receive sleeps until %v with %d waiting; want the lock's end %v, 1", until, svc.Waiting(), t0.Add(10*time.Second))
	}
	if at, ok := clk.NextTimer(); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("the waiting receive sleeps until %v, want the lock's end %v", at, t0.Add(10*time.Second))
	}
	clk.Advance(10 * time.Second)
	select {
	case res := <-got:
		if len(res.Received) != 1 || res.Received[0].Receives != 2 || res.ExpiredLocks != 1 {
			t.Fatalf("after the lock expired: %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the receive did not wake at the lock's expiry")
	}
}

// TestWaitersAreBounded: past the bound a receive that would wait is
// refused at once.
func TestWaitersAreBounded(t *testing.T) {
	svc, _, _ := setup(t)
	svc.max = 1
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_, _ = svc.Receive(ctx, store.ReceiveRequest{SubscriptionID: "sub_pull", Max: 1, LockFor: time.Minute}, time.Minute)
		close(done)
	}()
	waitUntil(t, "the receive waiting", func() bool { return svc.Waiting() == 1 })
	if _, err := svc.Receive(context.Background(), store.ReceiveRequest{SubscriptionID: "sub_pull", Max: 1, LockFor: time.Minute}, time.Minute); !errors.Is(err, ErrTooManyWaiters) {
		t.Fatalf("a receive past the bound: %v, want ErrTooManyWaiters", err)
	}
	cancel()
	<-done
	if svc.Waiting() != 0 {
		t.Fatalf("%d waiters after the consumer left", svc.Waiting())
	}
}

// waitUntil checks cond on a short ticker and fails the test after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// TestCloseEndsWaits: Close answers a waiting receive at once (nothing),
// and a later receive does not wait.
func TestCloseEndsWaits(t *testing.T) {
	svc, _, _ := setup(t)
	done := make(chan store.ReceiveResult, 1)
	go func() {
		res, _ := svc.Receive(context.Background(), store.ReceiveRequest{SubscriptionID: "sub_pull", Max: 1, LockFor: time.Minute}, time.Minute)
		done <- res
	}()
	waitUntil(t, "the receive waiting", func() bool { return svc.Waiting() == 1 })
	svc.Close()
	select {
	case res := <-done:
		if len(res.Received) != 0 {
			t.Fatalf("got %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the wait")
	}
	res, err := svc.Receive(context.Background(), store.ReceiveRequest{SubscriptionID: "sub_pull", Max: 1, LockFor: time.Minute}, time.Minute)
	if err != nil || len(res.Received) != 0 {
		t.Fatalf("a receive after Close: %+v, %v", res, err)
	}
}
