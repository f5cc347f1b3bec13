package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store/migrate"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/storetest"
)

// openUpgraded writes a fresh schema at an earlier schema version (its
// migrations applied as that release did) holding data, and opens it with
// this build.
func openUpgraded(t *testing.T, version int, data string) *postgres.Store {
	t.Helper()
	url := pgtest.SchemaURL(t)
	ms, err := migrate.LoadMigrations(os.DirFS("."), "migrations")
	if err != nil {
		t.Fatal(err)
	}
	qs := []string{`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`}
	for _, m := range ms[:version] {
		qs = append(qs, m.SQL, fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, '%s', 0)`, m.Version, m.Name))
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(qs, data) {
		if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("writing the version-%d schema: %v", version, err)
		}
	}
	conn.Close(ctx)
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestUpgradeFromV1 opens a schema written by the first release and checks
// that everything in it is kept and works.
func TestUpgradeFromV1(t *testing.T) {
	storetest.CheckUpgradeFromV1(t, openUpgraded(t, 1, storetest.V1Data))
}

// TestUpgradeFromV2 opens a schema at version 2, with endpoints left
// behind, and checks that those go and the rest is kept.
func TestUpgradeFromV2(t *testing.T) {
	storetest.CheckUpgradeFromV2(t, openUpgraded(t, 2, storetest.V2Data))
}
