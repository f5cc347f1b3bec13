package queue

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/store"
)

// TestFinishedCountsWhatConsumersEnd: herald_deliveries_finished_total, read
// from the registry, counts each delivery a consumer's call finishes once,
// with its status: an acknowledgement delivered, a rejection dead_lettered
// (dropped for a subscription that keeps no dead letters), a receive that
// ends a delivery received too often dead_lettered; a token that holds no
// lock any more (settled already) counts nothing, and neither do release
// and renew-lock.
func TestFinishedCountsWhatConsumersEnd(t *testing.T) {
	svc, st, clk := setup(t)
	reg := prometheus.NewRegistry()
	svc.metrics.finished = recording.NewMetrics(reg)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		publish(t, st, id)
	}
	recv := func(max int, maxReceives int) []store.Received {
		t.Helper()
		res, err := svc.Receive(ctx, store.ReceiveRequest{SubscriptionID: "sub_pull", Max: max, LockFor: 10 * time.Second,
			MaxReceives: maxReceives, DeadLetter: true}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res.Received
	}
	settle := func(a store.LockAction, deadLetter bool, rs ...store.Received) {
		t.Helper()
		var tokens []string
		for _, r := range rs {
			tokens = append(tokens, r.LockToken)
		}
		if _, err := svc.Settle(ctx, store.SettleRequest{SubscriptionID: "sub_pull", Action: a, Tokens: tokens,
			DeadLetter: deadLetter, LockFor: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	got := recv(5, 0)
	if len(got) != 5 {
		t.Fatalf("received %d, want 5", len(got))
	}
	settle(store.Acknowledge, false, got[0])
	settle(store.Acknowledge, false, got[0]) // settled already: lock lost
	settle(store.Reject, true, got[1])
	settle(store.Reject, false, got[2])
	settle(store.Renew, false, got[3])
	settle(store.Release, false, got[3], got[4])
	clk.Advance(time.Second)
	if again := recv(5, 1); len(again) != 0 { // d and e were received once: ended
		t.Fatalf("received %d past max receives, want none", len(again))
	}
	want := map[string]float64{"delivered": 1, "dead_lettered": 3, "dropped": 1}
	equalCounts(t, finishedCounts(t, reg), want)
}

// finishedCounts reads herald_deliveries_finished_total by status.
func finishedCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "herald_deliveries_finished_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

func equalCounts(t *testing.T, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("herald_deliveries_finished_total %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("herald_deliveries_finished_total %v, want %v", got, want)
		}
	}
}
