package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// These tests pin what lets Herald run behind a connection pooler such as
// PgBouncer in transaction pool mode: no start-up parameter beyond the
// URL's and application_name, the statement timeout set per transaction,
// and the migration lock held only inside transactions.

// TestPoolConfigStartupParams: the pool's connections send no
// statement_timeout start-up parameter (PgBouncer refuses it) and set
// nothing per session; the URL's parameters are passed on as given.
func TestPoolConfigStartupParams(t *testing.T) {
	for _, url := range []string{
		"postgres://herald@127.0.0.1:6432/herald?sslmode=disable&search_path=h1",
		"host=127.0.0.1 port=6432 user=herald dbname=herald sslmode=disable search_path=h1",
	} {
		opts := Options{StatementTimeout: 5 * time.Second}
		opts.setDefaults()
		cfg, err := poolConfig(url, opts)
		if err != nil {
			t.Fatal(err)
		}
		rp := cfg.ConnConfig.RuntimeParams
		if v, ok := rp["statement_timeout"]; ok {
			t.Errorf("%s: start-up parameter statement_timeout=%q sent", url, v)
		}
		if rp["application_name"] != "herald" || rp["search_path"] != "h1" || len(rp) != 2 {
			t.Errorf("%s: start-up parameters %v, want application_name=herald and the URL's search_path=h1", url, rp)
		}
		if cfg.AfterConnect != nil || cfg.PrepareConn != nil {
			t.Errorf("%s: the pool sets connections up per session", url)
		}
		if int(cfg.MaxConns) != opts.MaxConns {
			t.Errorf("%s: MaxConns %d, want %d", url, cfg.MaxConns, opts.MaxConns)
		}
	}
	cfg, err := poolConfig("postgres://h@127.0.0.1/h?application_name=mine", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ConnConfig.RuntimeParams["application_name"]; got != "mine" {
		t.Errorf("application_name = %q, want the URL's", got)
	}
}

func TestBeginSQL(t *testing.T) {
	for _, c := range []struct {
		timeout time.Duration
		want    string
	}{
		{60 * time.Second, "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 60000"},
		{1500 * time.Microsecond, "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 1"},
		{time.Microsecond, "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 1"},
		{-1, "BEGIN ISOLATION LEVEL READ COMMITTED"},
	} {
		if got := beginSQL(c.timeout); got != c.want {
			t.Errorf("beginSQL(%v) = %q, want %q", c.timeout, got, c.want)
		}
	}
}

// showTimeout returns SHOW statement_timeout inside one of the store's
// transactions.
func showTimeout(t *testing.T, s *Store) string {
	t.Helper()
	var got string
	if err := s.inTx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SHOW statement_timeout`).Scan(&got)
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestStatementTimeoutPerTransaction: the timeout is in force inside every
// kind of transaction the store runs, and nowhere else: a pooled connection
// outside a transaction has the server's setting, and not from the client.
func TestStatementTimeoutPerTransaction(t *testing.T) {
	ctx := context.Background()
	dbURL := freshSchema(t)
	s := openAt(t, dbURL, Options{StatementTimeout: 1234 * time.Millisecond})
	if got := showTimeout(t, s); got != "1234ms" {
		t.Errorf("in inTx: statement_timeout = %q, want 1234ms", got)
	}
	var got string
	err := s.tx(ctx, func(tx pgx.Tx) error { return tx.QueryRow(ctx, `SHOW statement_timeout`).Scan(&got) })
	if err != nil || got != "1234ms" {
		t.Errorf("in tx (the driver's reads): statement_timeout = %q, %v; want 1234ms", got, err)
	}
	all, err := queryAll(ctx, s.backend, func(sc scanner) (v string, err error) {
		err = sc.Scan(&v)
		return
	}, `SELECT current_setting('statement_timeout')`)
	if err != nil || len(all) != 1 || all[0] != "1234ms" {
		t.Errorf("in queryAll: statement_timeout = %q, %v; want 1234ms", all, err)
	}
	// The group-commit writers' transactions.
	tx, err := s.pool.BeginTx(ctx, s.txOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SHOW statement_timeout`).Scan(&got); err != nil || got != "1234ms" {
		t.Errorf("in a writer's transaction: statement_timeout = %q, %v; want 1234ms", got, err)
	}
	_ = tx.Rollback(ctx)

	// Outside a transaction every pooled connection has the server's own
	// setting, not one sent at start-up (source "client") or set by a
	// session SET (source "session").
	var conns []*pgxpool.Conn
	for range 3 {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		var setting, source string
		if err := c.QueryRow(ctx, `SELECT setting, source FROM pg_settings WHERE name = 'statement_timeout'`).Scan(&setting, &source); err != nil {
			t.Fatal(err)
		}
		if source == "client" || source == "session" || setting == "1234" {
			t.Errorf("outside a transaction: statement_timeout = %s from %s, want the server's", setting, source)
		}
		c.Release()
	}

	// It is enforced, in every kind of transaction.
	short := openAt(t, dbURL, Options{StatementTimeout: 50 * time.Millisecond})
	canceled := func(what string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" {
			t.Errorf("%s: pg_sleep(2) with a 50ms timeout = %v, want query_canceled (57014)", what, err)
		}
	}
	canceled("inTx", short.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT pg_sleep(2)`)
		return err
	}))
	canceled("tx", short.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT pg_sleep(2)`)
		return err
	}))
	_, err = queryAll(ctx, short.backend, func(sc scanner) (int, error) { return 0, nil }, `SELECT pg_sleep(2)`)
	canceled("queryAll", err)

	// A negative timeout leaves the server's setting.
	none := openAt(t, dbURL, Options{StatementTimeout: -1})
	if got := showTimeout(t, none); got != "0" {
		t.Errorf("StatementTimeout -1: statement_timeout = %q, want the server's 0", got)
	}
}

// traced records each statement a connection starts with the connection's
// transaction status at that moment.
type traced struct {
	mu    sync.Mutex
	stmts []string
}

func (tr *traced) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	tr.stmts = append(tr.stmts, fmt.Sprintf("%c %s", conn.PgConn().TxStatus(), strings.Join(strings.Fields(data.SQL), " ")))
	tr.mu.Unlock()
	return ctx
}

func (tr *traced) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestMigrateOnlyInTransactions: every statement of a migration runs inside
// a transaction, whose start sets no statement timeout; the lock is the
// transaction-level advisory lock; and nothing is held by the session
// afterwards. Behind a bouncer in transaction pool mode, statements outside
// a transaction may each land on another server connection, and a session
// lock taken on one stays there.
func TestMigrateOnlyInTransactions(t *testing.T) {
	ctx := context.Background()
	dbURL := freshSchema(t)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tr := &traced{}
	cfg.Tracer = tr
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a fresh schema, then an up-to-date one
		if _, _, _, err := runMigrations(ctx, conn, ms); err != nil {
			t.Fatal(err)
		}
	}
	var locked bool
	for _, st := range tr.stmts {
		status, sql, _ := strings.Cut(st, " ")
		switch {
		case strings.HasPrefix(sql, "BEGIN"):
			if status != "I" || sql != migrateTx.BeginQuery {
				t.Errorf("begin %q in status %s, want %q outside a transaction", sql, status, migrateTx.BeginQuery)
			}
		case status != "T":
			t.Errorf("statement outside a transaction (status %s): %.80s", status, sql)
		}
		if strings.Contains(sql, "pg_advisory_lock") || strings.Contains(sql, "unlock") {
			t.Errorf("session-level advisory lock: %.80s", sql)
		}
		locked = locked || strings.Contains(sql, "pg_advisory_xact_lock")
	}
	if !locked {
		t.Errorf("no pg_advisory_xact_lock among %q", tr.stmts)
	}
	var held int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&held); err != nil || held != 0 {
		t.Errorf("advisory locks held by the session after migrating: %d, %v", held, err)
	}
}

// TestMigrateWaitsForLock: migrating waits while another session holds the
// schema's migration lock, such as an earlier build (which took the same key
// as a session lock), and proceeds once it is released.
func TestMigrateWaitsForLock(t *testing.T) {
	ctx := context.Background()
	dbURL := freshSchema(t)
	holder, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	const key = `hashtextextended('herald.migrate:' || current_schema(), 0)`
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = Migrate(short, dbURL, nil)
	cancel()
	if err == nil {
		t.Fatal("Migrate went ahead while the migration lock was held")
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, dbURL, nil); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := holder.QueryRow(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("schema version %d, %v; want %d", v, err, SchemaVersion())
	}
}

// TestConcurrentMigrateSteps: several sessions migrating a fresh schema
// through several steps at once apply each step exactly once, in order,
// although the lock is released between steps. A step run twice would fail
// (CREATE TABLE without IF NOT EXISTS), as would one run out of order.
func TestConcurrentMigrateSteps(t *testing.T) {
	ctx := context.Background()
	dbURL := freshSchema(t)
	ms := []migration{
		{Version: 1, Name: "0001_a.sql", SQL: `CREATE TABLE a (n int); INSERT INTO a VALUES (1)`},
		{Version: 2, Name: "0002_b.sql", SQL: `CREATE TABLE b (n int); INSERT INTO a VALUES (2)`},
		{Version: 3, Name: "0003_c.sql", SQL: `CREATE TABLE c (n int); INSERT INTO a VALUES (3); SELECT pg_sleep(0.05)`},
		{Version: 4, Name: "0004_d.sql", SQL: `CREATE TABLE d (n int); INSERT INTO a VALUES (4)`},
	}
	const sessions = 6
	applied := make([]int, sessions)
	errs := make([]error, sessions)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, dbURL)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close(ctx)
			<-start
			var to int
			_, to, applied[i], errs[i] = runMigrations(ctx, conn, ms)
			if errs[i] == nil && to != len(ms) {
				errs[i] = fmt.Errorf("left version %d, want %d", to, len(ms))
			}
		})
	}
	close(start)
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		total += applied[i]
	}
	t.Logf("migrations applied per session: %v", applied)
	if total != len(ms) {
		t.Errorf("sessions applied %v migrations, %d in all; want %d", applied, total, len(ms))
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var order string
	if err := conn.QueryRow(ctx, `SELECT string_agg(n::text, ',' ORDER BY n) FROM a`).Scan(&order); err != nil || order != "1,2,3,4" {
		t.Errorf("steps ran %q, %v; want 1,2,3,4", order, err)
	}
	var versions string
	if err := conn.QueryRow(ctx, `SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_version`).Scan(&versions); err != nil || versions != "1,2,3,4" {
		t.Errorf("schema_version %q, %v; want 1,2,3,4", versions, err)
	}
}

// TestReadCommittedWhateverTheDefault: on a connection whose
// default_transaction_isolation is serializable, the store's read-write
// transactions still run at READ COMMITTED (beginSQL), which the claim's
// ordering key check (engine/claims_keys.go) depends on.
func TestReadCommittedWhateverTheDefault(t *testing.T) {
	dbURL := freshSchema(t)
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	s := openAt(t, dbURL+sep+"default_transaction_isolation=serializable", Options{StatementTimeout: time.Second})
	var def, got string
	if err := s.pool.QueryRow(context.Background(), `SHOW default_transaction_isolation`).Scan(&def); err != nil || def != "serializable" {
		t.Fatalf("the connection's default = %q, %v; want serializable (the test's premise)", def, err)
	}
	if err := s.inTx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SHOW transaction_isolation`).Scan(&got)
	}); err != nil {
		t.Fatal(err)
	}
	if got != "read committed" {
		t.Errorf("in inTx: transaction_isolation = %q, want read committed", got)
	}
}

// TestEngineTransactionsPlanForTheirArguments: the engine's transactions
// plan every statement for its arguments (customPlans), so no generic
// plan cached while a table was nearly empty outlives its growth; the
// other transactions keep the server's setting.
func TestEngineTransactionsPlanForTheirArguments(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, freshSchema(t), Options{StatementTimeout: time.Second})
	for range 2 { // the second on a connection the first gave back
		var got string
		if err := s.inTx(ctx, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&got)
		}); err != nil || got != "force_custom_plan" {
			t.Fatalf("in the engine's transaction: plan_cache_mode = %q, %v; want force_custom_plan", got, err)
		}
	}
	var got string
	if err := s.tx(ctx, func(tx pgx.Tx) error { return tx.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&got) }); err != nil || got != "auto" {
		t.Errorf("in tx (the driver's reads): plan_cache_mode = %q, %v; want the server's auto", got, err)
	}
}

// inTx runs fn in a write transaction of the engine's (driver Begin: the
// store's transaction options), again after a conflict.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.Store.Write(ctx, func(x driver.Executor) error {
		t := x.(*pgTx)
		if err := t.open(ctx, func(*pgx.Batch) error { return nil }); err != nil { // only the BEGIN
			return err
		}
		return fn(t.tx)
	})
}
