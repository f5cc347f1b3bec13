package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/drivertest"
	"github.com/herald-events/herald/internal/subscription"
)

// BenchmarkBacklog1M measures the due loader's queries with 1,000,000
// pending retries spread over 1,000 endpoints (plus 1,000 fresh deliveries),
// the backlog of the budget in docs/benchmarks.md. Filling the schema takes about a minute.
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
