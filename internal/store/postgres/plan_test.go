package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/engine"
	"github.com/herald-events/herald/internal/subscription"
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

// fillKeyed writes, straight in SQL, 20,000 keyed deliveries pending on
// ep_0007 (sub_k, 1,000 keys, 20 each), half fresh and half retries, due
// among fill's: the claims' head checks must seek the ordering indexes.
func fillKeyed(t testing.TB, ctx context.Context, tx pgx.Tx) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO events (id, source, type, subject, published_at, payload)
		 SELECT 'evt-k-' || i, '/keyed', 'keyed', '', 1000, '\x00'::bytea FROM generate_series(1, 20000) AS i`,
		`INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start, next_attempt_at, created_at, ordering_key)
		 SELECT 'dlv_k_' || lpad(seq::text, 24, '0'), 'sub_k', 'ep_0007', seq, 'pending', seq % 2, 1000, 10000000 + seq % 20000, 1000, 'k' || (seq % 1000)
		 FROM events WHERE source = '/keyed'`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// queuedNow is a time at which fillQueued's deliveries are all receivable.
const queuedNow = int64(30_000_000)

// fillQueued writes, straight in SQL, perSub queued deliveries of each of
// subs pull subscriptions sub_q_0…, with their events, due one per
// millisecond from 20,000,000 ms on (after the times fill's plans are
// checked at), half of them locked until then (an expired lock).
func fillQueued(t testing.TB, ctx context.Context, tx pgx.Tx, subs, perSub int) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO events (id, source, type, subject, published_at, payload)
		 SELECT 'evt-q-' || i, '/queued', 'queued', '', 1000, '\x00'::bytea FROM generate_series(1, $1::int * $2::int) AS i`,
		`INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, round_start, next_attempt_at,
		     created_at, receives, lock_token, lock_until)
		 SELECT 'dlv_q_' || lpad(seq::text, 24, '0'), 'sub_q_' || (seq % $1), '', seq, 'queued', 1000, 20000000 + seq, 1000,
		        seq % 2, CASE WHEN seq % 2 = 1 THEN 'dlv_q.token' ELSE '' END, CASE WHEN seq % 2 = 1 THEN 20000000 + seq ELSE 0 END
		 FROM events WHERE source = '/queued' AND $2::int > 0`,
	} {
		if _, err := tx.Exec(ctx, q, subs, perSub); err != nil {
			t.Fatal(err)
		}
	}
}

// fillStats writes a day of rollups of 10 accounts' 5 subscriptions each
// (72,000 rows), to minute 10,000,000.
func fillStats(t *testing.T, ctx context.Context, tx pgx.Tx) {
	t.Helper()
	if _, err := tx.Exec(ctx, `INSERT INTO delivery_stats (minute, account_id, subscription_id, endpoint_id, delivered)
		SELECT 10000000 - m * 60000, 'acc_' || s % 10, 'sub_' || s, 'ep_' || s, 1
		FROM generate_series(0, 1439) AS m, generate_series(0, 49) AS s`); err != nil {
		t.Fatal(err)
	}
}

// TestQueryPlans pins the plans of the due loader's queries: scans of the
// partial lane indexes (of open_deliveries), never a scan of the deliveries
// table or of open_deliveries, both as
// planned for the given values and as a generic plan (pgx prepares its
// statements, and PostgreSQL may switch a prepared statement to a generic
// plan after five runs). CountPending is left out: it counts the whole
// backlog, and where (as here) nearly every delivery is pending a table scan
// is the right plan; so is CountQueued (TestListPlans checks it where, as
// usual, few deliveries are queued).
func TestQueryPlans(t *testing.T) {
	ctx := context.Background()
	_, conn := migratedConn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	fill(t, ctx, tx, 100, 500)       // 50,000 retries, 100 fresh
	fillQueued(t, ctx, tx, 10, 2000) // 20,000 queued
	fillStats(t, ctx, tx)
	fillKeyed(t, ctx, tx)
	if _, err := tx.Exec(ctx, `ANALYZE deliveries; ANALYZE open_deliveries; ANALYZE events; ANALYZE delivery_stats`); err != nil {
		t.Fatal(err)
	}
	const now, lease = int64(10000000 + 20000), int64(1 << 60)
	for _, tc := range []struct {
		name string
		sql  string
		args []any
		want []string
	}{
		// The fresh lane: an index scan, or, with as few rows as here (one
		// an endpoint), a bitmap scan of them and their sort.
		{"ClaimDue", queries["ClaimDue"], []any{"ep_0007", now, 100, "node", lease},
			[]string{"open_deliveries_fresh", "Index Scan using open_deliveries_retry", "Index Scan using deliveries_pkey", "Index Scan using events_pkey", "using open_deliveries_ordering on", "using open_deliveries_ordering_leased on"}},
		// The re-check of the keyed deliveries a claim leased: each by
		// key, its key's head and leases by seeks (engine/claims_keys.go).
		{"ClaimDue key re-check", queries["ClaimKeyRecheck"], []any{[]string{"dlv_k_1", "dlv_k_2"}, now},
			[]string{"Index Scan using deliveries_pkey", "using open_deliveries_ordering on", "using open_deliveries_ordering_leased on"}},
		// The dead-lettered deliveries of the dead letters ClaimDue
		// claimed, by key.
		{"ClaimDue dead letters", queries["ClaimDeadLetters"], []any{[]string{"dlv_1", "dlv_2"}},
			[]string{"Index Scan using deliveries_pkey", "Index Scan using events_pkey"}},
		{"NextDue", queries["NextDue"], []any{"ep_0007", now},
			[]string{"Scan using open_deliveries_fresh on", "Scan using open_deliveries_retry on", "using open_deliveries_ordering on", "using open_deliveries_ordering_leased on"}},
		{"DueEndpoints", queries["DueEndpoints"], []any{now},
			[]string{"Index Only Scan using open_deliveries_fresh", "Index Only Scan using open_deliveries_retry"}},
		{"Release", queries["ReleaseLeases"], []any{[]string{"dlv_1", "dlv_2"}, "node"}, []string{"Index Scan using deliveries_pkey"}},
		{"ExtendLeases", queries["ExtendLeases"], []any{[]string{"dlv_1", "dlv_2"}, "node", lease}, []string{"Index Scan using deliveries_pkey"}},
		// Receive: the subscription's receivable deliveries in due order
		// from the partial index (here, 2,000 narrow open rows, the planner
		// may read them through a bitmap and sort them; a larger set is
		// read in index order, which the LIMIT ends), then each one's
		// update by its key.
		{"Receive", queries["Receivable"], []any{"sub_q_7", queuedNow, 100}, []string{"open_deliveries_queued"}},
		{"Receive (lock)", queries["LockReceived"], []any{[]string{"dlv_1.a", "dlv_2.b"}, lease},
			[]string{"Index Scan using deliveries_pkey", "Index Scan using events_pkey"}},
		{"Receive (end)", queries["EndReceived"], []any{[]string{"dlv_1", "dlv_2"}, "dropped", "TimeToLiveExceeded"},
			[]string{"Index Scan using deliveries_pkey", "Index Scan using events_pkey"}},
		{"NextAt", queries["NextQueued"], []any{"sub_q_7"}, []string{"Scan using open_deliveries_queued on"}},
		// Record: each outcome's delivery by key, whatever the round's
		// statement; a dead letter's delivery joins the event by key too.
		// The rollups: added to by key (the primary key, the upsert's
		// arbiter), read per account by delivery_stats_account, deleted
		// oldest first by the primary key.
		{"Record (counted)", queries["ApplyCountedOutcomes"], countedPlanArgs(now), []string{"Index Scan using deliveries_pkey", "Conflict Arbiter Indexes: delivery_stats_pkey"}},
		{"Record (dead letter's delivery)", queries["InsertDeadLetterCopies"], []any{[]string{"dlv_c1"}, []int64{now}, []string{"dlv_1"}},
			[]string{"Index Scan using deliveries_pkey", "Index Scan using events_pkey"}},
		{"Record (missing deliveries)", queries["MissingDeliveries"], []any{[]string{"dlv_1", "dlv_2"}}, []string{"Index Only Scan using deliveries_pkey"}},
		{"Publish (stored events)", queries["EventSeqs"], []any{[]string{"acc_7"}, []string{"evt_1"}, []string{"/s"}}, []string{"Index Scan using events_"}},
		{"Settle", queries["SettleAcknowledge"], []any{"sub_q_7", queuedNow, []string{"dlv_1", "dlv_2"}, []string{"dlv_1.a", "dlv_2.b"}},
			[]string{"Index Scan using deliveries_pkey"}},
		{"Settle (stats)", queries["AddAcknowledgedStats"], []any{[]string{"dlv_1", "dlv_2"}, now},
			[]string{"Index Scan using deliveries_pkey", "Conflict Arbiter Indexes: delivery_stats_pkey"}},
		{"DeliveryStats", queries["DeliveryStats"], []any{int64(60000), now - 3600000, now, "", "", "acc_7"},
			[]string{"delivery_stats_account", "Index Cond: ((account_id = "}},
		// GET /v1/endpoints?state=: endpoints_account, the state a filter.
		{"ListEndpoints (state)", endpointsByState, endpointsByStateArgs, []string{"Index Scan using endpoints_account", "Filter: (state = "}},
		{"DeleteOldStats", queries["DeleteOldStats"], []any{now - 3600000, 1000}, []string{"Tid Scan on delivery_stats", "Index Scan using delivery_stats_pkey"}},
	} {
		for _, mode := range []string{"auto", "force_generic_plan"} {
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			plan := explain(t, ctx, tx, tc.sql, tc.args)
			if testing.Verbose() {
				t.Logf("%s (%s):\n%s", tc.name, mode, plan)
			}
			for _, w := range tc.want {
				if !strings.Contains(plan, w) {
					t.Errorf("%s (%s): plan lacks %q:\n%s", tc.name, mode, w, plan)
				}
			}
			if scansDeliveries(plan) {
				t.Errorf("%s (%s): scans the deliveries table:\n%s", tc.name, mode, plan)
			}
		}
	}
}

// scansDeliveries reports whether plan reads deliveries or their open
// rows whole (a sequential or bitmap heap scan).
func scansDeliveries(plan string) bool {
	return strings.Contains(plan, "Seq Scan on deliveries") || strings.Contains(plan, "Bitmap Heap Scan on deliveries") ||
		strings.Contains(plan, "Seq Scan on open_deliveries")
}

// migratedConn connects to a fresh schema migrated to the current
// version; the connection is closed when the test ends.
func migratedConn(t *testing.T) (dbURL string, conn *pgx.Conn) {
	t.Helper()
	dbURL = freshSchema(t)
	if err := Migrate(context.Background(), dbURL, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return dbURL, conn
}

// endpointsByState and endpointsByStateArgs are ListEndpoints' rows query
// of one account's disabled endpoints, with its arguments and limit.
var endpointsByState, endpointsByStateArgs = queries["ListEndpoints"], []any{"acc_7", "", string(health.Disabled), 100}

// recordPlanArgs are the arguments of (SQLite's) ApplyOutcomes for two
// outcomes, the first of ApplyCountedOutcomes'.
var recordPlanArgs = []any{[]string{"dlv_1", "dlv_2"}, []string{"delivered", "dead_lettered"}, []int64{1, 3}, []int64{1, 3},
	[]int64{0, 1000}, []int64{0, 0}, []int64{2000, 2000}, []int64{200, 400}, []string{"http_200", "http_400"},
	[]string{"", "NonRetriableStatus"}, []int64{2001, 0}, []string{"node", "node"}}

// countedPlanArgs are the arguments of ApplyCountedOutcomes for
// recordPlanArgs' two outcomes, both counted in the minute at now.
func countedPlanArgs(now int64) []any {
	// counted, minute, delivered, failed, dead_lettered, bucket
	return append(recordPlanArgs[:len(recordPlanArgs):len(recordPlanArgs)], []int64{1, 1}, []int64{now, now},
		[]int64{1, 0}, []int64{0, 1}, []int64{0, 1}, []int64{3, 9})
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
		case []int64:
			ns := make([]string, len(v))
			for j, n := range v {
				ns[j] = fmt.Sprint(n)
			}
			lits[i] = "ARRAY[" + strings.Join(ns, ",") + "]::int8[]"
		case []int32:
			ns := make([]string, len(v))
			for j, n := range v {
				ns[j] = fmt.Sprint(n)
			}
			lits[i] = "ARRAY[" + strings.Join(ns, ",") + "]::int4[]"
		case []int16:
			ns := make([]string, len(v))
			for j, n := range v {
				ns[j] = fmt.Sprint(n)
			}
			lits[i] = "ARRAY[" + strings.Join(ns, ",") + "]::int2[]"
		default:
			lits[i] = fmt.Sprint(v)
		}
	}
	q := "EXPLAIN (COSTS OFF) EXECUTE plan_q"
	if len(lits) > 0 {
		q += "(" + strings.Join(lits, ", ") + ")"
	}
	return planOf(t, ctx, tx, q)
}

// explainAnalyze runs query (its parameters written in) under EXPLAIN
// ANALYZE in tx and returns the plan with the rows each node returned.
func explainAnalyze(t *testing.T, ctx context.Context, tx pgx.Tx, query string) string {
	t.Helper()
	return planOf(t, ctx, tx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+query)
}

// planOf runs an EXPLAIN statement in tx and returns its lines.
func planOf(t *testing.T, ctx context.Context, tx pgx.Tx, explain string) string {
	t.Helper()
	rows, err := tx.Query(ctx, explain)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// fillAccounts writes, straight in SQL, n events with one delivery each,
// spread over the accounts acc_0…acc_9 as in a database with one large
// tenant: 91% of them in acc_0, 1% in each other account. An account's
// deliveries go to its subscriptions sub_<account>_0…9 (whose rows, like
// those of the endpoints, are not written); 90% are delivered, 5% pending
// and 5% dead-lettered.
func fillAccounts(t testing.TB, ctx context.Context, tx pgx.Tx, n int) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO accounts (id, name, settings, created_at, updated_at)
		 SELECT 'acc_' || a, 'account ' || a, '{}', 1000, 1000 FROM generate_series(0, 9) AS a`,
		`INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
		 SELECT CASE WHEN i % 100 < 90 THEN 'acc_0' ELSE 'acc_' || (i % 10) END,
		        'evt-' || i, '/bench', 'bench', '', 1000, '\x00'::bytea
		 FROM generate_series(1, $1::int) AS i`,
		`INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts,
		     round_start, next_attempt_at, created_at)
		 SELECT 'dlv_' || lpad(seq::text, 26, '0'), account_id, 'sub_' || account_id || '_' || (seq / 100 % 10),
		        'ep_' || account_id || '_' || (seq / 100 % 10), seq,
		        CASE seq / 100 % 20 WHEN 0 THEN 'pending' WHEN 1 THEN 'dead_lettered' ELSE 'delivered' END,
		        1, 1000, 1000, 1000
		 FROM events`,
		`ANALYZE accounts; ANALYZE events; ANALYZE deliveries; ANALYZE open_deliveries`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{n}
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListPlans pins the plans of the lists of deliveries and dead letters
// filtered by account, as the store plans them (readPage: for their
// arguments): the lists of a small account seek its indexes in list
// order, those of a large one may read the newest deliveries instead, and
// none scans the deliveries table or sorts. A status other than delivered
// seeks the partial indexes of the deliveries not delivered
// (0010_status_indexes.sql), in generic plans too (the status is a literal:
// statusRows); status delivered reads (subscription_id, id) or
// (account_id, id) newest first with a filter.
func TestListPlans(t *testing.T) {
	dbURL := freshSchema(t)
	s := openAt(t, dbURL, Options{})
	ctx := context.Background()
	// The pages' transactions (the driver's Snapshot) plan for the
	// arguments.
	var mode string
	err := pgDriver{s.backend}.Snapshot(ctx, func(x driver.Executor) error {
		return x.(txExec).tx.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&mode)
	})
	if err != nil || mode != "force_custom_plan" {
		t.Fatalf("plan_cache_mode in Snapshot = %q, %v; want force_custom_plan", mode, err)
	}

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
	fillAccounts(t, ctx, tx, 100_000)
	// Some of acc_3's and acc_0's are queued (1 in 50 of their endpoints'
	// deliveries), some dropped (1 in 50 of the others).
	if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'queued' WHERE status = 'delivered' AND event_seq % 50 = 7;
		UPDATE deliveries SET status = 'dropped' WHERE status = 'delivered' AND event_seq % 50 = 8;
		ANALYZE deliveries; ANALYZE open_deliveries`); err != nil {
		t.Fatal(err)
	}
	lp := listPlans{t: t, ctx: ctx, tx: tx}
	for _, c := range deliveryListPlans {
		lp.check("ListDeliveries "+c.name, "force_custom_plan", c.f, false, c.want)
		if c.generic != nil {
			lp.check("ListDeliveries "+c.name, "force_generic_plan", c.f, false, c.generic)
		}
	}
	// CountQueued reads a partial index of queued deliveries (and, until a
	// vacuum has marked their pages all-visible, as here, their rows).
	if plan := explain(t, ctx, tx, queries["CountQueued"], nil); !strings.Contains(plan, "on open_deliveries_queued") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("CountQueued: plan does not count a queued index:\n%s", plan)
	}
	for _, c := range deadLetterListPlans {
		// ListDeadLetters' filter.
		f := store.DeliveryFilter{AccountID: c.f.AccountID, SubscriptionID: c.f.SubscriptionID, Status: delivery.StatusDeadLettered}
		lp.check("ListDeadLetters "+c.name, "force_custom_plan", f, true, c.want)
		lp.check("ListDeadLetters "+c.name, "force_generic_plan", f, true, c.want[:1])
	}
	for _, c := range statusWritePlans {
		lp.checkWrite(c.name, c.sql, c.args, c.want)
	}
	lp.checkRestart()
}

// listPlans explains queries in TestListPlans' transaction, on its
// 100,000 deliveries.
type listPlans struct {
	t   *testing.T
	ctx context.Context
	tx  pgx.Tx
}

// listCursor is the cursor of the pages listPlans explains.
const listCursor = "dlv_00000000000000000000090000"

// check explains the page statements of a list of the deliveries f
// selects after listCursor (engine.DeliveryPage, composed by the driver
// from its queries), with their events when withEvent, in plan_cache_mode
// mode. want holds what the plans must show and, prefixed with "!", what
// they must not.
func (lp listPlans) check(name, mode string, f store.DeliveryFilter, withEvent bool, want []string) {
	lp.t.Helper()
	if _, err := lp.tx.Exec(lp.ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
		lp.t.Fatal(err)
	}
	f.Page.Cursor = listCursor
	sizes, rows, args := engine.DeliveryPage(f, withEvent)
	for _, q := range []struct {
		what  string
		name  driver.Query
		limit int
	}{{"sizes", sizes, 101}, {"rows", rows, 100}} {
		sql, err := queries.SQL(q.name)
		if err != nil {
			lp.t.Fatal(err)
		}
		plan := explain(lp.t, lp.ctx, lp.tx, sql, append(args[:len(args):len(args)], q.limit))
		if testing.Verbose() {
			lp.t.Logf("%s (%s, %s):\n%s", name, q.what, mode, plan)
		}
		checkPlan(lp.t, fmt.Sprintf("%s (%s, %s)", name, q.what, mode), plan, want)
	}
}

// checkWrite explains a statement that changes a subscription's
// deliveries in a custom and a generic plan: each must show want.
func (lp listPlans) checkWrite(name, sql string, args []any, want string) {
	lp.t.Helper()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := lp.tx.Exec(lp.ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
			lp.t.Fatal(err)
		}
		plan := explain(lp.t, lp.ctx, lp.tx, sql, args)
		if testing.Verbose() {
			lp.t.Logf("%s (%s):\n%s", name, mode, plan)
		}
		checkPlan(lp.t, fmt.Sprintf("%s (%s)", name, mode), plan, []string{want})
	}
}

// checkRestart: the restart of a redrive of all of a subscription's dead
// letters (the 4,550 of sub_acc_0_1, as its look returns them) seeks each
// one by the primary key, as planned for them and as a generic plan.
func (lp listPlans) checkRestart() {
	lp.t.Helper()
	rows, err := lp.tx.Query(lp.ctx, queries["RedriveAllLook"], "sub_acc_0_1")
	if err != nil {
		lp.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) < 4000 {
		lp.t.Fatalf("the dead letters of sub_acc_0_1: %d, %v; want 4,550", len(ids), err)
	}
	lp.checkWrite("Redrive (all: restart)", queries["RestartDeliveries"], []any{statusWriteAt, ids}, "Index Scan using deliveries_pkey")
}

// neverDelivered is what a plan of a list of delivered deliveries must not
// show: their status is in no partial index.
const neverDelivered = "!open_deliveries_subscription"

// deliveryListPlans are the delivery lists TestListPlans explains, with
// what their plans must show (want: custom plans, the store's, readPage's;
// generic: where the status is in the indexes of open_deliveries, whose
// partial indexes' predicate the literal status proves in any plan). The lists of
// sub_acc_3_4 (about 100 deliveries) may read its few rows through a
// bitmap and sort them (so may those of the event's); those of larger sets
// must read an index in list order.
// planSince and planBefore are the plans' time range: the millisecond of
// every fillAccounts delivery, whose IDs ('dlv_' and digits) begin with
// the time 0 (ids.New), so that the range holds them all, as a range of a
// busy hour does.
var planSince, planBefore = time.UnixMilli(0), time.UnixMilli(1)

var deliveryListPlans = []struct {
	name    string
	f       store.DeliveryFilter
	want    []string
	generic []string
}{
	{"small account", store.DeliveryFilter{AccountID: "acc_3"},
		[]string{"Index Scan Backward using deliveries_account on", "!Sort"}, nil},
	{"small account, status", store.DeliveryFilter{AccountID: "acc_3", Status: delivery.StatusPending},
		[]string{"Scan Backward using open_deliveries_account", "!Sort"}, []string{"open_deliveries_account"}},
	{"small account, dead-lettered", store.DeliveryFilter{AccountID: "acc_3", Status: delivery.StatusDeadLettered},
		[]string{"Scan Backward using open_deliveries_account", "!Sort"}, []string{"open_deliveries_account"}},
	{"small account, dropped", store.DeliveryFilter{AccountID: "acc_3", Status: delivery.StatusDropped},
		[]string{"Scan Backward using open_deliveries_account", "!Sort"}, []string{"open_deliveries_account"}},
	{"small account, queued", store.DeliveryFilter{AccountID: "acc_3", Status: delivery.StatusQueued},
		[]string{"Scan Backward using open_deliveries_account", "!Sort"}, []string{"open_deliveries_account"}},
	// Delivered deliveries are in no partial index: the account's
	// deliveries (or all, for a large account) newest first, filtered.
	{"small account, delivered", store.DeliveryFilter{AccountID: "acc_3", Status: delivery.StatusDelivered},
		[]string{"Index Scan Backward using deliveries_account on", "!open_deliveries_account", "!Sort"}, nil},
	{"large account", store.DeliveryFilter{AccountID: "acc_0"},
		[]string{"Index Scan Backward using deliveries_", "!Sort"}, nil},
	{"large account, status", store.DeliveryFilter{AccountID: "acc_0", Status: delivery.StatusDeadLettered},
		[]string{"Scan Backward using open_deliveries_account", "!Sort"}, []string{"open_deliveries_account"}},
	{"large account, pending", store.DeliveryFilter{AccountID: "acc_0", Status: delivery.StatusPending},
		[]string{"Scan Backward using open_deliveries_account", "!Sort"}, []string{"open_deliveries_account"}},
	{"large account, delivered", store.DeliveryFilter{AccountID: "acc_0", Status: delivery.StatusDelivered},
		[]string{"Index Scan Backward using deliveries_", "!open_deliveries_account", "!Sort"}, nil},
	{"account, subscription", store.DeliveryFilter{AccountID: "acc_3", SubscriptionID: "sub_acc_3_4"},
		[]string{"deliveries_subscription"}, nil},
	{"account, subscription, status", store.DeliveryFilter{AccountID: "acc_3", SubscriptionID: "sub_acc_3_4", Status: delivery.StatusPending},
		[]string{"open_deliveries_subscription"}, []string{"open_deliveries_subscription"}},
	{"account, subscription, dead-lettered", store.DeliveryFilter{AccountID: "acc_3", SubscriptionID: "sub_acc_3_4", Status: delivery.StatusDeadLettered},
		[]string{"open_deliveries_subscription"}, []string{"open_deliveries_subscription"}},
	{"account, subscription, delivered", store.DeliveryFilter{AccountID: "acc_3", SubscriptionID: "sub_acc_3_4", Status: delivery.StatusDelivered},
		[]string{"deliveries_subscription", neverDelivered, "!open_deliveries_account"}, nil},
	{"large subscription", store.DeliveryFilter{AccountID: "acc_0", SubscriptionID: "sub_acc_0_4"},
		[]string{"Index Scan Backward using deliveries_", "!Sort"}, nil},
	{"large subscription, pending", store.DeliveryFilter{AccountID: "acc_0", SubscriptionID: "sub_acc_0_4", Status: delivery.StatusPending},
		[]string{"Scan Backward using open_deliveries_subscription", "!Sort"}, []string{"open_deliveries_subscription"}},
	// About 160 queued or dropped deliveries each, narrow open rows that
	// the planner may read through a bitmap and sort.
	{"large subscription, queued", store.DeliveryFilter{AccountID: "acc_0", SubscriptionID: "sub_acc_0_4", Status: delivery.StatusQueued},
		[]string{"on open_deliveries_queued", "!deliveries_account"}, nil},
	{"large subscription, dropped", store.DeliveryFilter{AccountID: "acc_0", SubscriptionID: "sub_acc_0_4", Status: delivery.StatusDropped},
		[]string{"on open_deliveries_subscription"}, []string{"open_deliveries_subscription"}},
	{"large subscription, dead-lettered", store.DeliveryFilter{AccountID: "acc_0", SubscriptionID: "sub_acc_0_4", Status: delivery.StatusDeadLettered},
		[]string{"Scan Backward using open_deliveries_subscription", "!Sort"}, []string{"open_deliveries_subscription"}},
	{"large subscription, delivered", store.DeliveryFilter{AccountID: "acc_0", SubscriptionID: "sub_acc_0_4", Status: delivery.StatusDelivered},
		[]string{"Index Scan Backward using deliveries_", neverDelivered, "!open_deliveries_account", "!Sort"}, nil},
	// A subscription without its account (tools and tests).
	{"subscription, delivered", store.DeliveryFilter{SubscriptionID: "sub_acc_0_4", Status: delivery.StatusDelivered},
		[]string{"Index Scan Backward using deliveries_", neverDelivered, "!Sort"}, nil},
	{"subscription, dead-lettered", store.DeliveryFilter{SubscriptionID: "sub_acc_0_4", Status: delivery.StatusDeadLettered},
		[]string{"Scan Backward using open_deliveries_subscription", "!Sort"}, []string{"open_deliveries_subscription"}},
	// A subscription's ordering key: deliveries_ordering_all, newest first.
	{"account, subscription, ordering key", store.DeliveryFilter{AccountID: "acc_3", SubscriptionID: "sub_acc_3_4", OrderingKey: "k"},
		[]string{"Index Scan Backward using deliveries_ordering_all", "!Sort"}, []string{"deliveries_ordering_all"}},
	{"account, event", store.DeliveryFilter{AccountID: "acc_3", EventID: "evt-93"},
		[]string{"Index Scan using events_id_source_account_key", "Index Scan using deliveries_event"}, nil},
	// A time range (Since, Before) is a range of the index's last
	// column, the ID: the same seeks, over the range.
	{"small account, time", store.DeliveryFilter{AccountID: "acc_3", Since: planSince, Before: planBefore},
		[]string{"Index Scan Backward using deliveries_account on", "Index Cond: ((account_id = 'acc_3'::text) AND (id >= ", "!Sort"}, nil},
	{"large account, dead-lettered, time", store.DeliveryFilter{AccountID: "acc_0", Status: delivery.StatusDeadLettered, Since: planSince, Before: planBefore},
		[]string{"Scan Backward using open_deliveries_account", "(id >= ", "!Sort"}, []string{"open_deliveries_account"}},
	{"account, subscription, failed, time", store.DeliveryFilter{AccountID: "acc_3", SubscriptionID: "sub_acc_3_4", Status: delivery.StatusPending, Before: planBefore},
		[]string{"open_deliveries_subscription", "(id < "}, []string{"open_deliveries_subscription"}},
	// The queued deliveries of one URL (the API's list by endpoint).
	{"small account, endpoint, queued", store.DeliveryFilter{AccountID: "acc_3", EndpointID: "ep_acc_3_4", Status: delivery.StatusQueued},
		[]string{"Scan Backward using open_deliveries_queued_endpoint"}, nil},
	{"large account, endpoint, queued", store.DeliveryFilter{AccountID: "acc_0", EndpointID: "ep_acc_0_4", Status: delivery.StatusQueued},
		[]string{"on open_deliveries_queued_endpoint"}, nil},
}

// deadLetterListPlans are the dead-letter lists TestListPlans explains,
// with what their plans must show (the generic plans, the first).
var deadLetterListPlans = []struct {
	name string
	f    store.DeadLetterFilter
	want []string
}{
	{"small account", store.DeadLetterFilter{AccountID: "acc_3"}, []string{"Scan Backward using open_deliveries_account", "!Sort"}},
	{"large account", store.DeadLetterFilter{AccountID: "acc_0"}, []string{"Scan Backward using open_deliveries_account", "!Sort"}},
	{"subscription", store.DeadLetterFilter{AccountID: "acc_3", SubscriptionID: "sub_acc_3_4"}, []string{"open_deliveries_subscription"}},
	{"large subscription", store.DeadLetterFilter{AccountID: "acc_0", SubscriptionID: "sub_acc_0_4"},
		[]string{"Scan Backward using open_deliveries_subscription", "!Sort"}},
}

// statusWriteAt is the time statusWritePlans' statements are given.
const statusWriteAt = int64(5000)

// statusWritePlans are the statements that change a subscription's
// deliveries of some statuses: they seek its entries of the partial index
// of those statuses, in the generic plans they run with as in custom ones.
// $2 (or $1, or $4) is the subscription.
var statusWritePlans = []struct {
	name string
	sql  string
	args []any
	want string
}{
	// A redrive's look (then its restart: checkRestartPlan).
	{"Redrive (all)", queries["RedriveAllLook"], []any{"sub_acc_0_4"}, "open_deliveries_subscription"},
	// By ids: each id sought in the subscription's (the account's)
	// deliveries (the ids a condition of the index scan, the status a
	// filter on those few rows, not a filter over all of them).
	{"Redrive (ids)", queries["RedriveIDsLook"], []any{"sub_acc_0_4", []string{"dlv_00000000000000000000000001", "dlv_00000000000000000000000002"}},
		"AND (id = ANY ("},
	{"RedriveIDs", queries["RedriveAccountIDsLook"], []any{"acc_0", []string{"dlv_00000000000000000000000001", "dlv_00000000000000000000000002"}},
		"AND (id = ANY ("},
	// A recover job's batch: the subscription's deliveries of one status
	// after the cursor, in id order.
	{"RecoverBatch", queries["RecoverLook"], []any{"sub_acc_0_4", "dead_lettered", "", "", "dlv_1", int64(100)}, "open_deliveries_subscription"},
	{"UpdateSubscription (move deliveries)", queries["MoveSubscriptionDeliveries"], []any{"ep_new", "sub_acc_0_4"}, "open_deliveries_subscription"},
	{"UpdateSubscription (move dead letters)", queries["MoveSubscriptionDeadLetters"], []any{"ep_new", "sub_acc_0_4"}, "open_deliveries_subscription"},
	{"UpdateSubscription (drop dead letters)", queries["DropSubscriptionDeadLetters"], []any{"gone", "sub_acc_0_4"}, "open_deliveries_subscription"},
	{"DeleteSubscription", queries["DropSubscriptionDeliveries"], []any{"gone", "sub_acc_0_4"}, "open_deliveries_subscription"},
	{"Record (deactivate: queue pending)", queries["QueuePendingDeliveries"], []any{statusWriteAt, "sub_acc_0_4"}, "open_deliveries_subscription"},
	{"ReactivateSubscription", queries["UnqueueSubscriptionDeliveries"], []any{statusWriteAt, "ep_a", "ep_b", "sub_acc_0_4"}, "Index Scan on open_deliveries_queued"},
}

// checkPlan checks that plan shows each of want and, for each prefixed
// with "!", does not show the rest, and that it never scans the whole
// deliveries table.
func checkPlan(t *testing.T, name, plan string, want []string) {
	t.Helper()
	for _, w := range want {
		if strings.HasPrefix(w, "!") {
			if strings.Contains(plan, w[1:]) {
				t.Errorf("%s: plan has %q:\n%s", name, w[1:], plan)
			}
		} else if !strings.Contains(plan, w) {
			t.Errorf("%s: plan lacks %q:\n%s", name, w, plan)
		}
	}
	if strings.Contains(plan, "Seq Scan on deliveries") || strings.Contains(plan, "Seq Scan on open_deliveries") {
		t.Errorf("%s: scans the deliveries table:\n%s", name, plan)
	}
}

// subscriptionCols are every column of subscriptions (TestCatalogChangesPlan
// copies rows with them).
const subscriptionCols = `id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason`

// TestCatalogChangesPlan: the catalog's read of the subscriptions changed
// since a version reads the version index, not the table (and the lookup
// of a subscription by name its unique index), with statistics
// that predate the subscriptions (none here: never analyzed, as between
// two autovacuum runs after many creates), planned for its values and as a
// generic plan. Bounded below only, it read all 5,000 subscriptions.
func TestCatalogChangesPlan(t *testing.T) {
	dbURL := freshSchema(t)
	s := openAt(t, dbURL, Options{})
	ctx := context.Background()
	now := time.Now()
	if err := s.CreateSubscription(ctx, subscription.Subscription{ID: "sub_0", Name: "s", DeliveryMode: subscription.ModePull,
		EventTypes: []string{"x"}, State: "active", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	copied := strings.NewReplacer("id,", "id || i,", "name,", "name || i,", "version", "version + i").Replace(subscriptionCols)
	if _, err := conn.Exec(ctx, `INSERT INTO subscriptions (`+subscriptionCols+`) SELECT `+copied+
		` FROM subscriptions, generate_series(1, 5000) AS i`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, mode := range []string{"auto", "force_generic_plan"} {
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct{ name, sql, index string }{
			{"changed", queries["ChangedSubscriptions"], "subscriptions_version"},
			{"deleted", queries["DeletedSubscriptions"], "subscription_tombstones_version"},
		} {
			plan := explain(t, ctx, tx, q.sql, []any{int64(4990), int64(5001)})
			if !strings.Contains(plan, q.index) || strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s): want a scan of %s, not of the table:\n%s", q.name, mode, q.index, plan)
			}
		}
		// GET /v1/subscriptions?name= on the same 5,000: the
		// (account_id, name) unique index.
		plan := explain(t, ctx, tx, queries["SubscriptionByName"], []any{"acc_default", "s42"})
		if !strings.Contains(plan, "subscriptions_account_name_key") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("SubscriptionByName (%s): want a scan of subscriptions_account_name_key:\n%s", mode, plan)
		}
	}
}
