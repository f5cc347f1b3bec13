package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/storetest"
)

// TestUpgradeFromV1 opens a schema written by the first release (its
// migration applied as that release did) and checks that everything in it
// is kept and works.
func TestUpgradeFromV1(t *testing.T) {
	url := pgtest.SchemaURL(t)
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(v1),
		`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`,
		`INSERT INTO schema_version VALUES (1, '0001_init.sql', 0)`,
		storetest.V1Data,
	} {
		if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("writing the version-1 schema: %v", err)
		}
	}
	conn.Close(ctx)
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckUpgradeFromV1(t, s)
}
