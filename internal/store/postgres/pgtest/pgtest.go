// Package pgtest gives tests a fresh, empty PostgreSQL schema on the server
// named by HERALD_TEST_POSTGRES_URL. Without that variable a test is skipped,
// except under CI (CI=true), where PostgreSQL tests must run and fail instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the variable naming the test database.
const EnvURL = "HERALD_TEST_POSTGRES_URL"

// BaseURL returns HERALD_TEST_POSTGRES_URL, skipping the test (or, under CI,
// failing it) when it is unset. The first skip in a test binary also says
// so in one line that `go test ./...` shows without -v (see noteSkipped).
func BaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(EnvURL + " is unset: PostgreSQL tests must run under CI")
		}
		skipped.Do(noteSkipped)
		t.Skip(EnvURL + " is unset: PostgreSQL tests skipped")
	}
	return u
}

var skipped sync.Once

// noteSkipped writes one line saying that this package's PostgreSQL tests
// are skipped and how to run them. go test keeps a passing package's output
// to itself unless -v is given, so the line goes to the terminal (/dev/tty)
// when there is one, and to stderr otherwise.
func noteSkipped() {
	line := skipNote()
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if _, err := io.WriteString(tty, line); err == nil {
			return
		}
	}
	fmt.Fprint(os.Stderr, line)
}

// SchemaURL creates an empty schema herald_test_<random>, drops it when the
// test ends, and returns a URL whose search_path selects it.
func SchemaURL(t testing.TB) string {
	t.Helper()
	base := BaseURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "herald_test_" + hex.EncodeToString(b[:])
	if err := exec(base, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		if err := exec(base, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", name, err)
		}
	})
	return WithSearchPath(t, base, name)
}

// WithSearchPath returns base with its search_path set to schema, in URL or
// keyword/value form: a URL has a scheme (postgres://), the keyword/value
// form (host=… dbname=…) has none.
func WithSearchPath(t testing.TB, base, schema string) string {
	if u, err := url.Parse(base); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return base + " search_path=" + schema
}

func exec(dbURL, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// skipNote is noteSkipped's line.
func skipNote() string {
	return fmt.Sprintf("%s: PostgreSQL tests skipped (%s is unset; to run them: %s='postgres://USER@HOST:5432/DB?sslmode=disable' go test ./...)\n",
		packageDir(), EnvURL, EnvURL)
}

// packageDir is the directory of the package under test (go test runs its
// tests there), relative to the module's root when it can be found.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Base(os.Args[0])
	}
	for root := wd; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			if rel, err := filepath.Rel(root, wd); err == nil {
				return "./" + filepath.ToSlash(rel)
			}
			return wd
		}
		up := filepath.Dir(root)
		if up == root {
			return wd
		}
		root = up
	}
}

// AutoAnalyze analyzes, until tb ends, each table of the schema at dbURL
// that autovacuum would analyze: one with more than 50 + 10% of its rows
// changed since it was last analyzed, looked for every 100 ms (autovacuum's
// default threshold, at a shorter nap than its minute). A production
// server runs autovacuum, whose ANALYZE keeps the planner's statistics
// current and so renews the plans PostgreSQL caches for the store's
// prepared statements; a test server may not (CI's has autovacuum = off),
// and a benchmark starts from an empty schema, so without it the writers
// would keep generic plans made for nearly empty tables (a sequential scan
// of deliveries in every Record) however large the tables grow.
func AutoAnalyze(tb testing.TB, dbURL string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close(context.Background())
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `SELECT s.relname FROM pg_stat_user_tables AS s JOIN pg_class AS c ON c.oid = s.relid
WHERE s.schemaname = current_schema() AND s.n_mod_since_analyze > 50 + 0.1 * GREATEST(c.reltuples, 0)`)
			if err != nil {
				return
			}
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return
			}
			for _, n := range names {
				if _, err := conn.Exec(ctx, "ANALYZE "+pgx.Identifier{n}.Sanitize()); err != nil {
					return
				}
			}
		}
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
}
