package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/drivertest"
	"github.com/herald-events/herald/internal/subscription"
)

// BenchmarkBacklog1M measures the due loader's queries with 1,000,000
// pending retries spread over 1,000 endpoints (plus 1,000 fresh deliveries),
// the backlog of the budget in docs/benchmarks.md. Filling the database takes about a minute.
func BenchmarkBacklog1M(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "backlog.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	err = s.rawWrite(ctx, func(w *writeConn) error {
		for _, q := range []string{
			`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1001000)
			 INSERT INTO events (id, source, type, subject, published_at, payload)
			 SELECT 'evt-' || i, '/bench', 'bench', '', 1000, zeroblob(200) FROM n`,
			// Retries due from t = 10,000,000 ms on, one per endpoint every 1000 ms.
			`INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start, next_attempt_at, created_at)
			 SELECT printf('dlv_%026d', seq), 'sub_' || (seq % 1000), printf('ep_%04d', seq % 1000), seq, 'pending',
			        1, 1000, 10000000 + seq, 1000
			 FROM events WHERE seq <= 1000000`,
			`INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start, next_attempt_at, created_at)
			 SELECT printf('dlv_%026d', seq), 'sub_' || (seq % 1000), printf('ep_%04d', seq % 1000), seq, 'pending',
			        0, 1000, 1000, 1000
			 FROM events WHERE seq > 1000000`,
		} {
			if _, err := w.exec(q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("filled in %v", time.Since(start))
	lease := store.Lease{Owner: "bench", Until: time.Now().Add(time.Hour)}

	b.Run("ClaimDue100+Release", func(b *testing.B) {
		now := time.UnixMilli(10000000 + 200000) // 200 due retries per endpoint
		i := 0
		for b.Loop() {
			ep := fmt.Sprintf("ep_%04d", i%1000)
			i++
			cs, err := s.ClaimDue(ctx, ep, now, 100, lease)
			if err != nil || len(cs) != 100 {
				b.Fatalf("claimed %d, %v", len(cs), err)
			}
			ids := make([]string, len(cs))
			for j, c := range cs {
				ids[j] = c.ID
			}
			if err := s.Release(ctx, ids, lease.Owner); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("NextDue", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, ok, err := s.NextDue(ctx, fmt.Sprintf("ep_%04d", i%1000)); err != nil || !ok {
				b.Fatal(ok, err)
			}
			i++
		}
	})
	b.Run("DueEndpoints", func(b *testing.B) {
		for b.Loop() {
			if eps, err := s.DueEndpoints(ctx); err != nil || len(eps) != 1000 {
				b.Fatal(len(eps), err)
			}
		}
	})
	b.Run("CountPending", func(b *testing.B) {
		for b.Loop() {
			if fresh, retry, err := s.CountPending(ctx); err != nil || fresh != 1000 || retry != 1000000 {
				b.Fatal(fresh, retry, err)
			}
		}
	})
	b.Run("Publish100", func(b *testing.B) {
		sub := subscription.Subscription{ID: "sub_1", EndpointID: "ep_0001"}
		var seq int
		start := time.Now()
		for b.Loop() {
			seq++
			if _, err := s.Publish(ctx, drivertest.BenchEvents(fmt.Sprintf("b%d", seq), 100, sub, time.Now()), store.PublishOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "deliveries/s")
	})
}

// BenchmarkCleanup measures the retention clean-up: rounds of 1,000 events,
// each with one delivered delivery and its attempt, deleted.
func BenchmarkCleanup(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "cleanup.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sub := subscription.Subscription{ID: "sub_bench", Name: "bench", URL: "http://127.0.0.1:1/h", EndpointID: s.EndpointID("", "http://127.0.0.1:1/h"),
		EventTypes: []string{"bench.event"}, State: "active", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.CreateSubscription(ctx, sub); err != nil {
		b.Fatal(err)
	}
	lease := store.Lease{Owner: "bench", Until: time.Now().Add(time.Hour)}
	fill := func(n int) {
		for i := 0; i < n; i += 100 {
			now := time.Now()
			evs := drivertest.BenchEvents(fmt.Sprintf("c%d-%d", b.N, i), 100, sub, now)
			outs := make([]store.Outcome, len(evs))
			for j := range evs {
				evs[j].Deliveries[0].Claimed = true
				outs[j] = store.Outcome{Attempt: delivery.Attempt{DeliveryID: evs[j].Deliveries[0].ID, Number: 1, StartedAt: now,
					Duration: time.Millisecond, StatusCode: 200, Outcome: "http_200"},
					Status: delivery.StatusDelivered, Attempts: 1, RoundAttempts: 1, DeliveredAt: now, LeaseOwner: lease.Owner}
			}
			if _, err := s.Publish(ctx, evs, store.PublishOptions{Lease: lease}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Record(ctx, outs); err != nil {
				b.Fatal(err)
			}
		}
	}
	const perOp = 10_000
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fill(perOp)
		b.StartTimer()
		deleted := 0
		for {
			n, err := s.Cleanup(ctx, time.Now().Add(time.Hour), 1000)
			if err != nil {
				b.Fatal(err)
			}
			deleted += n
			if n < 1000 {
				break
			}
		}
		if deleted != perOp {
			b.Fatalf("deleted %d, want %d", deleted, perOp)
		}
	}
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
}
