package postgres

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
)

// backlogPlanLimit is the limit TestBacklogPlans counts to: well below
// each of the counted sets (100 fresh, 50,000 retries, 20,000 queued),
// except the fresh lane's, which it counts whole.
const backlogPlanLimit = 1001

// TestBacklogPlans pins CountBacklog's plan: each of its three counts is
// a scan of its partial index (open_deliveries_fresh, open_deliveries_retry,
// open_deliveries_queued) under a Limit, never a scan of the table or a sort,
// with the statistics of a table never analyzed (as on a cluster without
// autovacuum) and with fresh ones, as planned for the limit and as a
// generic plan. Run (EXPLAIN ANALYZE), each index scan returns at most the
// limit: the count reads a bounded number of entries however many
// deliveries wait.
func TestBacklogPlans(t *testing.T) {
	ctx := context.Background()
	conn, s := filledStore(t, func(tx pgx.Tx) {
		fill(t, ctx, tx, 100, 500)       // 50,000 retries, 100 fresh
		fillQueued(t, ctx, tx, 10, 2000) // 20,000 queued
	})
	inSeekPlans(t, ctx, conn, s, func(tx pgx.Tx, stats string) {
		forPlanModes(t, ctx, tx, func(mode string) {
			checkNamedPlan(t, ctx, tx, "CountBacklog", []any{backlogPlanLimit}, stats+", "+mode, []string{
				"Limit", "Scan using open_deliveries_fresh on", "Scan using open_deliveries_retry on", "Scan using open_deliveries_queued on",
				"!Sort", "!Bitmap Heap Scan on open_deliveries"})
		})
		checkBacklogRows(t, ctx, tx, stats)
	}, func(stats string) {
		if b, err := s.CountBacklog(ctx, backlogPlanLimit); err != nil || b != (store.Backlog{Fresh: 100, Retry: backlogPlanLimit, Queued: backlogPlanLimit}) {
			t.Errorf("CountBacklog (%s) = %+v, %v; want 100, %d, %d", stats, b, err, backlogPlanLimit, backlogPlanLimit)
		}
	})
}

// filledStore returns a connection to a fresh migrated schema that fill
// wrote in one transaction, and a store open on it.
func filledStore(t *testing.T, fill func(tx pgx.Tx)) (*pgx.Conn, *Store) {
	t.Helper()
	dbURL, conn := migratedConn(t)
	err := pgx.BeginFunc(context.Background(), conn, func(tx pgx.Tx) error {
		fill(tx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return conn, openAt(t, dbURL, Options{})
}

// checkNamedPlan checks the plan of the store's query name, prepared in
// tx with args, against want (checkPlan), logging it when verbose; label
// says how it was planned.
func checkNamedPlan(t *testing.T, ctx context.Context, tx pgx.Tx, name driver.Query, args []any, label string, want []string) {
	t.Helper()
	plan := explain(t, ctx, tx, queries[name], args)
	if testing.Verbose() {
		t.Logf("%s (%s):\n%s", name, label, plan)
	}
	checkPlan(t, string(name)+" ("+label+")", plan, want)
}

// inSeekPlans calls inTx with a transaction begun as the store's
// SeekReader begins its own (seekOpts), then, once it is rolled back,
// after; twice: with the statistics of tables never analyzed (as on a
// cluster without autovacuum), then after ANALYZE.
func inSeekPlans(t *testing.T, ctx context.Context, conn *pgx.Conn, s *Store, inTx func(tx pgx.Tx, stats string), after func(stats string)) {
	t.Helper()
	for _, stats := range []string{"never analyzed", "analyzed"} {
		if stats == "analyzed" {
			if _, err := conn.Exec(ctx, `ANALYZE deliveries; ANALYZE open_deliveries`); err != nil {
				t.Fatal(err)
			}
		}
		tx, err := conn.BeginTx(ctx, s.seekOpts)
		if err != nil {
			t.Fatal(err)
		}
		inTx(tx, stats)
		_ = tx.Rollback(ctx)
		after(stats)
	}
}

// forPlanModes calls fn in tx planned as for its arguments ("auto") and
// as a generic plan (pgx prepares statements; PostgreSQL may switch to a
// generic plan after five runs).
func forPlanModes(t *testing.T, ctx context.Context, tx pgx.Tx, fn func(mode string)) {
	t.Helper()
	for _, mode := range []string{"auto", "force_generic_plan"} {
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		fn(mode)
	}
}

// scanRows matches an index scan's line of EXPLAIN ANALYZE: the index
// and the rows it returned.
var scanRows = regexp.MustCompile(`Scan using (open_deliveries_\w+) on .*actual rows=(\d+) loops=1`)

// checkBacklogRows runs CountBacklog's statement under EXPLAIN ANALYZE in tx: each
// of the three index scans returns at most backlogPlanLimit rows.
func checkBacklogRows(t *testing.T, ctx context.Context, tx pgx.Tx, stats string) {
	t.Helper()
	plan := explainAnalyze(t, ctx, tx, strings.ReplaceAll(queries["CountBacklog"], "$1", strconv.Itoa(backlogPlanLimit)))
	scans := scanRows.FindAllStringSubmatch(plan, -1)
	if len(scans) != 3 {
		t.Fatalf("CountBacklog (%s): %d index scans, want 3:\n%s", stats, len(scans), plan)
	}
	for _, m := range scans {
		if n, _ := strconv.Atoi(m[2]); n > backlogPlanLimit {
			t.Errorf("CountBacklog (%s): the scan of %s returned %d rows, over the limit %d:\n%s", stats, m[1], n, backlogPlanLimit, plan)
		}
	}
}
