package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
)

// benchEvents returns n events of one delivery each, with a 1 KiB payload.
func benchEvents(prefix string, n int, sub store.Subscription, now time.Time) []store.NewEvent {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = 'x'
	}
	evs := make([]store.NewEvent, n)
	for i := range evs {
		evs[i] = store.NewEvent{
			ID: fmt.Sprintf("%s-%d", prefix, i), Source: "bench", Type: "bench.event",
			Payload: payload, PublishedAt: now,
			Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", now), SubscriptionID: sub.ID, EndpointID: sub.EndpointID}},
		}
	}
	return evs
}

func benchStore(b *testing.B) (*Store, store.Subscription) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	now := time.Now()
	sub := store.Subscription{ID: ids.New("sub_", now), Name: "bench", URL: "http://127.0.0.1:1/hook",
		EndpointID: store.EndpointID("http://127.0.0.1:1/hook"), CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSubscription(ctx, sub); err != nil {
		b.Fatal(err)
	}
	return s, sub
}

// BenchmarkPublish100 publishes 100 events with one delivery each per
// operation, from one goroutine (one commit per call) and from many (calls
// share commits), and reports durable deliveries per second.
func BenchmarkPublish100(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s, sub := benchStore(b)
		ctx := context.Background()
		var seq int
		b.ResetTimer()
		start := time.Now()
		for b.Loop() {
			seq++
			evs := benchEvents(fmt.Sprintf("s%d", seq), 100, sub, time.Now())
			if _, err := s.Publish(ctx, evs, store.PublishOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "deliveries/s")
	})
	b.Run("parallel", func(b *testing.B) {
		s, sub := benchStore(b)
		ctx := context.Background()
		var seq atomic.Int64
		b.SetParallelism(8)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				evs := benchEvents(fmt.Sprintf("p%d", seq.Add(1)), 100, sub, time.Now())
				if _, err := s.Publish(ctx, evs, store.PublishOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "deliveries/s")
	})
}

// BenchmarkPublish1 publishes one event with one delivery per operation from
// many goroutines: group commit makes them share transactions.
func BenchmarkPublish1(b *testing.B) {
	s, sub := benchStore(b)
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			evs := benchEvents(fmt.Sprintf("o%d", seq.Add(1)), 1, sub, time.Now())
			if _, err := s.Publish(ctx, evs, store.PublishOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
}

// BenchmarkBacklog1M measures the due loader's queries with 1,000,000
// pending retries spread over 1,000 endpoints (plus 1,000 fresh deliveries),
// the DESIGN §6 backlog. Filling the database takes about a minute.
func BenchmarkBacklog1M(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "backlog.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	err = s.write(ctx, func(w *writer) error {
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
		sub := store.Subscription{ID: "sub_1", EndpointID: "ep_0001"}
		var seq int
		start := time.Now()
		for b.Loop() {
			seq++
			if _, err := s.Publish(ctx, benchEvents(fmt.Sprintf("b%d", seq), 100, sub, time.Now()), store.PublishOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "deliveries/s")
	})
}
