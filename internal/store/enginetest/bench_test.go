package enginetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/drivertest"
	"github.com/herald-events/herald/internal/subscription"
)

// BenchStore is a backend under Bench.
type BenchStore struct {
	// Open returns a new, empty store for tb, closed when tb ends.
	Open func(tb testing.TB) store.Store
	// Commits, when set, returns the store's group-commit counters: write
	// calls answered and transactions committed. The benchmarks of
	// concurrent writers then also report calls/commit.
	Commits func(s store.Store) (calls, commits int64)
}

// Bench runs the benchmarks every store shares, as sub-benchmarks of b,
// each on a store of its own:
//
//   - Publish100/serial, Publish100/parallel: Publish calls of 100 events
//     (one delivery each, 1 KiB payloads) from one goroutine (a commit per
//     call) and from 8 per CPU (calls share group commits); deliveries/s.
//   - Publish1: calls of one event from 64 goroutines per CPU; deliveries/s.
//   - Record1: calls of one outcome from 64 goroutines per CPU, as the
//     dispatcher makes after each attempt; outcomes/s.
//   - ClaimRecord100: the due loader's claim of 100 fresh deliveries of one
//     endpoint and the Record of their 100 outcomes (the publish that makes
//     them due is not timed); deliveries/s.
//   - Lookups/...: the reads the API serves, on a store of 10,000
//     deliveries (delivered, retrying, dead-lettered and leased) to 10
//     subscriptions.
func Bench(b *testing.B, bs BenchStore) {
	for _, sb := range []struct {
		name string
		run  func(*testing.B, BenchStore)
	}{
		{"Publish100", benchPublish100},
		{"Publish1", benchPublish1},
		{"Record1", benchRecord1},
		{"ClaimRecord100", benchClaimRecord100},
		{"Lifecycle", func(b *testing.B, bs BenchStore) { benchLifecycle(b, bs, 10) }},
		{"Lifecycle1", func(b *testing.B, bs BenchStore) { benchLifecycle(b, bs, 1) }},
		{"SerialLifecycle", benchSerialLifecycle},
		{"Lookups", benchLookups},
	} {
		b.Run(sb.name, func(b *testing.B) { sb.run(b, bs) })
	}
}

// benchPublish100 is Publish100/serial and Publish100/parallel.
func benchPublish100(b *testing.B, bs BenchStore) {
	b.Run("serial", func(b *testing.B) {
		s, sub := benchSetup(b, bs)
		ctx := context.Background()
		var seq int
		for b.Loop() {
			seq++
			evs := drivertest.BenchEvents(fmt.Sprintf("s%d", seq), 100, sub, time.Now())
			if _, err := s.Publish(ctx, evs, store.PublishOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "deliveries/s")
	})
	b.Run("parallel", func(b *testing.B) { benchParallelPublish(b, bs, "p", 100, 8) })
}

// benchPublish1 is Publish1.
func benchPublish1(b *testing.B, bs BenchStore) { benchParallelPublish(b, bs, "o", 1, 64) }

// benchParallelPublish publishes calls of n events (IDs prefix…) from
// perCPU goroutines per CPU, and reports deliveries/s and, when the
// backend counts them, calls/commit.
func benchParallelPublish(b *testing.B, bs BenchStore, prefix string, n, perCPU int) {
	s, sub := benchSetup(b, bs)
	ctx := context.Background()
	var seq atomic.Int64
	calls, commits := bs.counts(s)
	b.SetParallelism(perCPU)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			evs := drivertest.BenchEvents(fmt.Sprintf("%s%d", prefix, seq.Add(1)), n, sub, time.Now())
			if _, err := s.Publish(ctx, evs, store.PublishOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "deliveries/s")
	bs.reportBatching(b, s, calls, commits)
}

// benchRecord1 is Record1: outcomes of 20,000 leased deliveries, one a
// call, from 64 goroutines per CPU.
func benchRecord1(b *testing.B, bs BenchStore) {
	s, sub := benchSetup(b, bs)
	ctx := context.Background()
	now := time.Now()
	lease := store.Lease{Owner: "bench", Until: now.Add(time.Hour)}
	var all []string
	for i := range 200 {
		evs := drivertest.BenchEvents(fmt.Sprintf("r%d", i), 100, sub, now)
		for j := range evs {
			evs[j].Deliveries[0].Claimed = true
			all = append(all, evs[j].Deliveries[0].ID)
		}
		if _, err := s.Publish(ctx, evs, store.PublishOptions{Lease: lease}); err != nil {
			b.Fatal(err)
		}
	}
	var seq atomic.Int64
	calls, commits := bs.counts(s)
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			o := store.Outcome{Attempt: delivery.Attempt{DeliveryID: all[int(n)%len(all)], Number: int(n), StartedAt: now,
				Duration: time.Millisecond, StatusCode: 503, Outcome: "http_503"},
				Status: delivery.StatusPending, Attempts: 1, RoundAttempts: 1, FirstFailure: now, NextAttemptAt: now.Add(time.Minute)}
			if _, err := s.Record(ctx, []store.Outcome{o}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "outcomes/s")
	bs.reportBatching(b, s, calls, commits)
}

// benchClaimRecord100 is ClaimRecord100.
func benchClaimRecord100(b *testing.B, bs BenchStore) {
	s, sub := benchSetup(b, bs)
	ctx := context.Background()
	now := time.Now()
	lease := store.Lease{Owner: "bench", Until: now.Add(time.Hour)}
	outs := make([]store.Outcome, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := s.Publish(ctx, drivertest.BenchEvents(fmt.Sprintf("c%d", i), 100, sub, now), store.PublishOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cs, err := s.ClaimDue(ctx, sub.EndpointID, now, 100, lease)
		if err != nil || len(cs) != 100 {
			b.Fatalf("claimed %d, %v; want 100", len(cs), err)
		}
		for j, c := range cs {
			outs[j] = deliveredOutcome(c.ID, now, lease.Owner)
		}
		if _, err := s.Record(ctx, outs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "deliveries/s")
}

// benchLifecycle measures the fast path's writes, concurrently as the
// engine makes them: each iteration publishes 100/fanout events with fanout
// claimed deliveries each (one request), then records their 100 outcomes,
// delivered at the first attempt, in one call. Fanout 1 is steady-batch's
// shape in herald bench, 10 that of an event many subscribers take.
func benchLifecycle(b *testing.B, bs BenchStore, fanout int) {
	s := bs.Open(b)
	var sus []subscription.Subscription
	for i := range 10 {
		sus = append(sus, drivertest.BenchSub(b, s, i))
	}
	ctx := context.Background()
	now := time.Now()
	lease := store.Lease{Owner: "bench", Until: now.Add(time.Hour)}
	var seq atomic.Int64
	calls, commits := bs.counts(s)
	b.SetParallelism(8)
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		outs := make([]store.Outcome, 0, 100)
		for pb.Next() {
			n := seq.Add(1)
			now := time.Now() // IDs in time order, as the engine makes them
			evs := drivertest.BenchEvents(fmt.Sprintf("f%d", n), 100/fanout, sus[0], now)
			outs = outs[:0]
			for j := range evs {
				evs[j].Deliveries = evs[j].Deliveries[:0]
				for _, sub := range sus[:fanout] {
					d := store.NewDelivery{ID: ids.New("dlv_", now), SubscriptionID: sub.ID, EndpointID: sub.EndpointID, Claimed: true}
					evs[j].Deliveries = append(evs[j].Deliveries, d)
					outs = append(outs, deliveredOutcome(d.ID, now, lease.Owner))
				}
			}
			if _, err := s.Publish(ctx, evs, store.PublishOptions{Lease: lease}); err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Record(ctx, outs); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N*100), "cpu-µs/delivery")
	bs.reportBatching(b, s, calls, commits)
}

// benchSerialLifecycle times the writes of steady-batch's shape one call
// at a time, each its own commit: publishing 100 events with a claimed
// delivery each, then recording their 100 outcomes, delivered at the first
// attempt. It reports the wall time of each per delivery (pub-µs/d,
// rec-µs/d), commit included.
func benchSerialLifecycle(b *testing.B, bs BenchStore) {
	s, sub := benchSetup(b, bs)
	ctx := context.Background()
	lease := store.Lease{Owner: "bench", Until: time.Now().Add(time.Hour)}
	outs := make([]store.Outcome, 0, 100)
	var pub, rec time.Duration
	for i := 0; b.Loop(); i++ {
		now := time.Now()
		evs := drivertest.BenchEvents(fmt.Sprintf("x%d", i), 100, sub, now)
		outs = outs[:0]
		for j := range evs {
			evs[j].Deliveries[0].Claimed = true
			outs = append(outs, deliveredOutcome(evs[j].Deliveries[0].ID, now, lease.Owner))
		}
		t0 := time.Now()
		if _, err := s.Publish(ctx, evs, store.PublishOptions{Lease: lease}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.Record(ctx, outs); err != nil {
			b.Fatal(err)
		}
		rec += time.Since(t1)
		pub += t1.Sub(t0)
	}
	b.ReportMetric(float64(pub.Microseconds())/float64(b.N*100), "pub-µs/d")
	b.ReportMetric(float64(rec.Microseconds())/float64(b.N*100), "rec-µs/d")
}

// deliveredOutcome is the outcome of delivery id delivered at its first
// attempt, made at now by owner.
func deliveredOutcome(id string, now time.Time, owner string) store.Outcome {
	return store.Outcome{Attempt: delivery.Attempt{DeliveryID: id, Number: 1, StartedAt: now,
		Duration: time.Millisecond, StatusCode: 200, Outcome: "http_200"},
		Status: delivery.StatusDelivered, Attempts: 1, RoundAttempts: 1, LastStatusCode: 200, LastOutcome: "http_200",
		DeliveredAt: now, LeaseOwner: owner}
}

// benchSetup opens a store for b with one subscription.
func benchSetup(b *testing.B, bs BenchStore) (store.Store, subscription.Subscription) {
	b.Helper()
	s := bs.Open(b)
	return s, drivertest.BenchSub(b, s, 0)
}

func (bs BenchStore) counts(s store.Store) (calls, commits int64) {
	if bs.Commits == nil {
		return 0, 0
	}
	return bs.Commits(s)
}

// reportBatching reports the mean group-commit batch since the counts
// calls0 and commits0.
func (bs BenchStore) reportBatching(b *testing.B, s store.Store, calls0, commits0 int64) {
	if bs.Commits == nil {
		return
	}
	calls, commits := bs.Commits(s)
	b.ReportMetric(float64(calls-calls0)/float64(max(commits-commits0, 1)), "calls/commit")
}
