package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// isPostgres reports whether a --store value names a PostgreSQL database.
func isPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

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
