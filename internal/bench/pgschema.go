package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store/postgres"
)

// isPostgres reports whether a --store value names a PostgreSQL database.
func isPostgres(store string) bool { return postgres.Opens(store) }

// freshSchema creates an empty schema herald_bench_<random> in the database
// at base, so that each scenario starts on an empty store, and returns the
// URL selecting it and a function that drops it.
func freshSchema(ctx context.Context, base string) (string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "herald_bench_" + hex.EncodeToString(b[:])
	if err := pgExec(ctx, base, "CREATE SCHEMA "+name); err != nil {
		return "", nil, fmt.Errorf("creating schema %s: %w", name, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = pgExec(ctx, base, "DROP SCHEMA "+name+" CASCADE")
	}
	return u.String(), drop, nil
}

func pgExec(ctx context.Context, dbURL, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// schemaOf returns the search_path of a URL made by freshSchema ("" when
// there is none).
func schemaOf(schemaURL string) string {
	u, err := url.Parse(schemaURL)
	if err != nil {
		return ""
	}
	return u.Query().Get("search_path")
}

// pgSchemaBytes returns the size on disk of the tables of a schema in the
// database at base (pg_total_relation_size: each table with its indexes
// and TOAST).
func pgSchemaBytes(ctx context.Context, base, schema string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = $1 AND c.relkind IN ('r', 'm', 'p')`, schema).Scan(&n)
	return n, err
}
