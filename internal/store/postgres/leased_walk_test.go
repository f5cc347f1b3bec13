package postgres

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// freshWalk matches the plan line of a claim's walk of the fresh lane's
// open rows (an index scan, or on a table this small a sequential one),
// with the rows it passed on to the join with deliveries.
var freshWalk = regexp.MustCompile(`Scan .*on open_deliveries o \(actual rows=(\d+) loops=1\)`)

// TestClaimWalkSkipsLeasesOnOpenRows: a lane whose head holds 2,000
// deliveries leased to a node (what a backlog leaves there: the
// deliveries held in memory) before 10 that are not. ClaimDue skips the
// leased ones on their open rows, which carry the lease
// (migrations/0021_open_deliveries.sql): the walk passes on to the join
// with deliveries only those it may claim, where reading every leased
// delivery's row made the walk cost twice what it did before the open
// rows (docs/benchmarks.md, "Issue 36: the lease renewal").
func TestClaimWalkSkipsLeasesOnOpenRows(t *testing.T) {
	ctx := context.Background()
	_, conn := migratedConn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, q := range []string{
		`INSERT INTO events (id, source, type, subject, published_at, payload)
		 SELECT 'evt-w-' || i, '/walk', 'walk', '', 1000, '\x00'::bytea FROM generate_series(1, 2010) AS i`,
		`INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
		     next_attempt_at, created_at, lease_owner, lease_until)
		 SELECT 'dlv_w_' || lpad(seq::text, 24, '0'), 'sub_w', 'ep_w', seq, 'pending', 0, 1000, 1000 + seq, 1000,
		        CASE WHEN seq <= 2000 THEN 'other-node' ELSE '' END, CASE WHEN seq <= 2000 THEN 9000000 ELSE 0 END
		 FROM events WHERE source = '/walk'`,
		`ANALYZE deliveries; ANALYZE open_deliveries`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	q := queries["ClaimDue"]
	for i, v := range []string{"'ep_w'", "5000000", "10", "'this-node'", "5030000"} {
		q = strings.ReplaceAll(q, "$"+strconv.Itoa(i+1), v)
	}
	plan := explainAnalyze(t, ctx, tx, q)
	m := freshWalk.FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("ClaimDue does not walk open_deliveries_fresh:\n%s", plan)
	}
	if n, _ := strconv.Atoi(m[1]); n > 10 {
		t.Errorf("ClaimDue's walk passed %d open rows to the join past 2,000 leased ones; want the 10 not leased:\n%s", n, plan)
	}
	var claimed int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM deliveries WHERE lease_owner = 'this-node'`).Scan(&claimed); err != nil || claimed != 10 {
		t.Errorf("claimed %d, %v; want the 10 deliveries not leased", claimed, err)
	}
}
