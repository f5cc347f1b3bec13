package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// fill writes, straight in SQL, perEndpoint pending retries on each of
// `endpoints` endpoints ep_0000…, due one per millisecond from 10,000,000 ms
// on (round robin over the endpoints), plus one fresh delivery per endpoint
// due at 1,000 ms. Their subscriptions and endpoint rows do not exist: the
// due queries do not read them.
func fill(t testing.TB, ctx context.Context, tx pgx.Tx, endpoints, perEndpoint int) {
	t.Helper()
	total := endpoints * (perEndpoint + 1)
	for _, q := range []string{
		`INSERT INTO events (id, source, type, subject, published_at, payload)
		 SELECT 'evt-' || i, '/bench', 'bench', '', 1000, '\x00'::bytea FROM generate_series(1, $1::int) AS i
		 WHERE $2::int > 0`,
		// The first endpoints*perEndpoint events get a pending retry, the
		// last endpoints a fresh delivery.
		`INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts,
		     round_start, next_attempt_at, created_at)
		 SELECT 'dlv_' || lpad(seq::text, 26, '0'), 'sub_' || (seq % $2), 'ep_' || lpad((seq % $2)::text, 4, '0'), seq, 'pending',
		        CASE WHEN seq <= $1 - $2 THEN 1 ELSE 0 END, 1000,
		        CASE WHEN seq <= $1 - $2 THEN 10000000 + seq ELSE 1000 END, 1000
		 FROM events`,
	} {
		if _, err := tx.Exec(ctx, q, total, endpoints); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQueryPlans pins the plans of the due loader's queries: index scans of
// the partial lane indexes, never a scan of the deliveries table, both as
// planned for the given values and as a generic plan (pgx prepares its
// statements, and PostgreSQL may switch a prepared statement to a generic
// plan after five runs). CountPending is left out: it counts the whole
// backlog, and where (as here) every delivery is pending a table scan is the
// right plan.
func TestQueryPlans(t *testing.T) {
	dbURL := freshSchema(t)
	if err := Migrate(context.Background(), dbURL, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	fill(t, ctx, tx, 100, 500) // 50,000 retries, 100 fresh
	if _, err := tx.Exec(ctx, `ANALYZE deliveries; ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	const now, lease = int64(10000000 + 20000), int64(1 << 60)
	for _, tc := range []struct {
		name string
		sql  string
		args []any
		want []string
	}{
		{"ClaimDue", claimSQL, []any{"ep_0007", now, 100, "node", lease},
			[]string{"Index Scan using deliveries_fresh", "Index Scan using deliveries_retry", "Index Scan using deliveries_pkey", "Index Scan using events_pkey"}},
		{"NextDue", nextDueSQL, []any{"ep_0007", now},
			[]string{"Index Scan using deliveries_fresh", "Index Scan using deliveries_retry"}},
		{"DueEndpoints", dueEndpointsSQL, []any{now},
			[]string{"Index Only Scan using deliveries_fresh", "Index Only Scan using deliveries_retry", "Index Scan using deliveries_fresh", "Index Scan using deliveries_retry"}},
		{"Release", releaseSQL, []any{[]string{"dlv_1", "dlv_2"}, "node"}, []string{"Index Scan using deliveries_pkey"}},
		{"ExtendLeases", extendSQL, []any{[]string{"dlv_1", "dlv_2"}, "node", lease}, []string{"Index Scan using deliveries_pkey"}},
	} {
		for _, mode := range []string{"auto", "force_generic_plan"} {
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			plan := explain(t, ctx, tx, tc.sql, tc.args)
			for _, w := range tc.want {
				if !strings.Contains(plan, w) {
					t.Errorf("%s (%s): plan lacks %q:\n%s", tc.name, mode, w, plan)
				}
			}
			if strings.Contains(plan, "Seq Scan on deliveries") || strings.Contains(plan, "Bitmap Heap Scan on deliveries") {
				t.Errorf("%s (%s): scans the deliveries table:\n%s", tc.name, mode, plan)
			}
		}
	}
}

// explain returns the plan of query as prepared with args (so that
// plan_cache_mode applies).
func explain(t *testing.T, ctx context.Context, tx pgx.Tx, query string, args []any) string {
	t.Helper()
	if _, err := tx.Conn().Prepare(ctx, "plan_q", query); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Conn().Deallocate(ctx, "plan_q"); err != nil {
			t.Fatal(err)
		}
	}()
	// EXPLAIN EXECUTE takes its parameters as literals.
	lits := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			lits[i] = "'" + v + "'"
		case []string:
			lits[i] = "ARRAY['" + strings.Join(v, "','") + "']"
		default:
			lits[i] = fmt.Sprint(v)
		}
	}
	q := "EXPLAIN (COSTS OFF) EXECUTE plan_q"
	if len(lits) > 0 {
		q += "(" + strings.Join(lits, ", ") + ")"
	}
	rows, err := tx.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
