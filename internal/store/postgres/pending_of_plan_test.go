package postgres

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// pendingOfLimit is the limit TestPendingOfPlans counts to: below what
// its two endpoints hold together (501 each), above what one holds.
const pendingOfLimit = 701

// pendingOfEndpoints are the endpoints TestPendingOfPlans counts, of the
// 100 fill writes.
var pendingOfEndpoints = []string{"ep_0003", "ep_0042"}

// TestPendingOfPlans pins CountPendingOf's plan: each endpoint is a
// seek into each lane's partial index (open_deliveries_fresh,
// open_deliveries_retry) under a Limit, never a scan of the table, a
// bitmap scan or a sort, with the statistics of a table never analyzed
// and with fresh ones, as planned for its values and as a generic plan.
// Run (EXPLAIN ANALYZE) over 50,100 pending deliveries, the index scans
// return at most the limit in all, and the store's count is the limit;
// counting one endpoint (501 pending) gives its exact count.
func TestPendingOfPlans(t *testing.T) {
	ctx := context.Background()
	conn, s := filledStore(t, func(tx pgx.Tx) {
		fill(t, ctx, tx, 100, 500) // 100 endpoints, each 500 retries and 1 fresh
	})
	inSeekPlans(t, ctx, conn, s, func(tx pgx.Tx, stats string) {
		forPlanModes(t, ctx, tx, func(mode string) {
			checkNamedPlan(t, ctx, tx, "CountPendingOf", []any{pendingOfEndpoints, pendingOfLimit}, stats+", "+mode, []string{
				"Limit", "Scan using open_deliveries_fresh on", "Scan using open_deliveries_retry on",
				"!Seq Scan on open_deliveries", "!Sort", "!Bitmap Heap Scan on open_deliveries"})
		})
		checkPendingOfRows(t, ctx, tx, stats)
	}, func(stats string) {
		if n, err := s.CountPendingOf(ctx, pendingOfEndpoints, pendingOfLimit); err != nil || n != pendingOfLimit {
			t.Errorf("CountPendingOf (%s) = %d, %v; want the limit %d", stats, n, err, pendingOfLimit)
		}
		if n, err := s.CountPendingOf(ctx, pendingOfEndpoints[:1], pendingOfLimit); err != nil || n != 501 {
			t.Errorf("CountPendingOf (%s) of one endpoint = %d, %v; want 501", stats, n, err)
		}
	})
}

// scanLoops matches an index scan's line of EXPLAIN ANALYZE: the index,
// the rows it returned a loop (on average) and its loops.
var scanLoops = regexp.MustCompile(`Scan using (open_deliveries_\w+) on .*actual rows=([\d.]+) loops=(\d+)`)

// checkPendingOfRows runs CountPendingOf's statement under EXPLAIN ANALYZE
// in tx: its index scans are of the two lanes' indexes, and return at most
// pendingOfLimit entries in all (give or take the rounding of a loop's
// average).
func checkPendingOfRows(t *testing.T, ctx context.Context, tx pgx.Tx, stats string) {
	t.Helper()
	q := strings.ReplaceAll(queries["CountPendingOf"], "$1", "ARRAY['"+strings.Join(pendingOfEndpoints, "','")+"']")
	plan := explainAnalyze(t, ctx, tx, strings.ReplaceAll(q, "$2", strconv.Itoa(pendingOfLimit)))
	if testing.Verbose() {
		t.Logf("CountPendingOf (%s), run:\n%s", stats, plan)
	}
	scans := scanLoops.FindAllStringSubmatch(plan, -1)
	if len(scans) != 2 {
		t.Fatalf("CountPendingOf (%s): %d index scans, want 2:\n%s", stats, len(scans), plan)
	}
	var read float64
	loops := 0
	for _, m := range scans {
		rows, _ := strconv.ParseFloat(m[2], 64)
		n, _ := strconv.Atoi(m[3])
		read += rows * float64(n)
		loops += n
	}
	if read > float64(pendingOfLimit+loops) {
		t.Errorf("CountPendingOf (%s): the index scans returned %.0f entries, over the limit %d:\n%s", stats, read, pendingOfLimit, plan)
	}
}
