package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
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

// TestUpgrade opens databases written at each earlier schema version and
// checks that everything in them is kept and works.
func TestUpgrade(t *testing.T) {
	storetest.RunUpgrades(t, func(t *testing.T, version int, data string) store.Store { return openUpgraded(t, version, data) })
	// Until RunUpgrades runs it for every store.
	// Version 10 made the indexes by status partial.
	t.Run("FromV9Indexes", func(t *testing.T) {
		s := openUpgraded(t, 9, storetest.V9Data)
		for _, name := range []string{"deliveries_subscription_status", "deliveries_account_status"} {
			var def string
			err := s.Pool().QueryRow(context.Background(),
				`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, name).Scan(&def)
			if err != nil || !strings.HasSuffix(def, "WHERE (status <> 'delivered'::text)") {
				t.Errorf("index %s after the upgrade: %q, %v; want it partial, WHERE status <> 'delivered'", name, def, err)
			}
		}
	})
}
