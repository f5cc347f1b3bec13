// Package pgtest gives tests a fresh, empty PostgreSQL schema on the server
// named by HERALD_TEST_POSTGRES_URL. Without that variable a test is skipped,
// except under CI (CI=true), where PostgreSQL tests must run and fail instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the variable naming the test database.
const EnvURL = "HERALD_TEST_POSTGRES_URL"

// BaseURL returns HERALD_TEST_POSTGRES_URL, skipping the test (or, under CI,
// failing it) when it is unset.
func BaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(EnvURL + " is unset: PostgreSQL tests must run under CI")
		}
		t.Skip(EnvURL + " is unset: PostgreSQL tests skipped")
	}
	return u
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
// keyword/value form.
func WithSearchPath(t testing.TB, base, schema string) string {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatalf("%s: %v", EnvURL, err)
		}
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
