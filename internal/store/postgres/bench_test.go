package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

func benchStore(b *testing.B, opts Options) (*Store, store.Subscription) {
	ctx := context.Background()
	s := openAt(b, freshSchema(b), opts)
	now := time.Now()
	sub := store.Subscription{ID: ids.New("sub_", now), Name: "bench", URL: "http://127.0.0.1:1/hook",
		EndpointID: store.EndpointID("http://127.0.0.1:1/hook"), CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSubscription(ctx, sub); err != nil {
		b.Fatal(err)
	}
	return s, sub
}

// BenchmarkPublish100 publishes 100 events with one delivery each per
// operation, from one goroutine (one commit per call) and from 8 per CPU
// (calls share group commits), and reports durable deliveries per second
// (DESIGN §6: at least 5,000 on PostgreSQL).
func BenchmarkPublish100(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s, sub := benchStore(b, Options{})
		ctx := context.Background()
		var seq int
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
		s, sub := benchStore(b, Options{})
		ctx := context.Background()
		var seq atomic.Int64
		b.SetParallelism(8)
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
		st := s.Stats()
		b.ReportMetric(float64(st.Requests)/float64(max(st.Commits, 1)), "calls/commit")
	})
}

// BenchmarkPublish1 publishes one event with one delivery per operation from
// many goroutines: group commit makes them share transactions.
func BenchmarkPublish1(b *testing.B) {
	s, sub := benchStore(b, Options{})
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(64)
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
	st := s.Stats()
	b.ReportMetric(float64(st.Requests)/float64(max(st.Commits, 1)), "calls/commit")
}

// BenchmarkRecord1 records one outcome per call from many goroutines, as
// the dispatcher does after each attempt.
func BenchmarkRecord1(b *testing.B) {
	s, sub := benchStore(b, Options{})
	ctx := context.Background()
	now := time.Now()
	var all []string
	for i := 0; i < 200; i++ {
		evs := benchEvents(fmt.Sprintf("r%d", i), 100, sub, now)
		for j := range evs {
			evs[j].Deliveries[0].Claimed = true
			all = append(all, evs[j].Deliveries[0].ID)
		}
		if _, err := s.Publish(ctx, evs, store.PublishOptions{Lease: store.Lease{Owner: "bench", Until: now.Add(time.Hour)}}); err != nil {
			b.Fatal(err)
		}
	}
	var seq atomic.Int64
	b.SetParallelism(64)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			id := all[int(n)%len(all)]
			o := store.Outcome{Attempt: store.AttemptRecord{DeliveryID: id, Number: int(n), StartedAt: now,
				Duration: time.Millisecond, StatusCode: 503, Outcome: "http_503"},
				Status: store.StatusPending, Attempts: 1, RoundAttempts: 1, FirstFailure: now, NextAttemptAt: now.Add(time.Minute)}
			if err := s.Record(ctx, []store.Outcome{o}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "outcomes/s")
}

// BenchmarkBacklog1M measures the due loader's queries with 1,000,000
// pending retries spread over 1,000 endpoints (plus 1,000 fresh deliveries),
// the DESIGN §6 backlog. Filling the schema takes about a minute.
func BenchmarkBacklog1M(b *testing.B) {
	ctx := context.Background()
	dbURL := freshSchema(b)
	if err := Migrate(ctx, dbURL, nil); err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		fill(b, ctx, tx, 1000, 1000)
		return nil
	})
	if err == nil {
		_, err = conn.Exec(ctx, `VACUUM ANALYZE deliveries`)
	}
	conn.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("filled in %v", time.Since(start))
	s := openAt(b, dbURL, Options{})
	lease := store.Lease{Owner: "bench", Until: time.UnixMilli(1 << 50)}

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
