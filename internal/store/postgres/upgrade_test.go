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
	url := writeVersion(t, version, data)
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// writeVersion writes a fresh schema at an earlier schema version holding
// data and returns its URL.
func writeVersion(t *testing.T, version int, data string) string {
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
	return url
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

// TestEndpointRekeyIsAtomic: a schema-10 database the re-keying fails on
// (a subscription whose delivery options are not JSON) is left as it was:
// schema 10, no key, the old IDs. Once the row is mended, the upgrade
// goes through.
func TestEndpointRekeyIsAtomic(t *testing.T) {
	ctx := context.Background()
	url := writeVersion(t, 10, storetest.V10Data+`UPDATE subscriptions SET delivery = 'not JSON' WHERE id = 'sub_v10x';`)
	if _, err := postgres.Open(ctx, url, postgres.Options{}); err == nil || !strings.Contains(err.Error(), "0011_endpoint_key.sql") {
		t.Fatalf("Open of a schema the re-keying fails on: %v", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var version int
	var keys *string
	var ep string
	if err := conn.QueryRow(ctx, `SELECT MAX(version), to_regclass('installation_keys')::text,
		(SELECT endpoint_id FROM subscriptions WHERE id = 'sub_v10') FROM schema_version`).Scan(&version, &keys, &ep); err != nil {
		t.Fatal(err)
	}
	if version != 10 || keys != nil || ep != "ep_80xd22q4hn06sbmty17h" {
		t.Fatalf("after a failed re-keying: schema %d, key table %v, sub_v10 on %s; want 10, none, its old ID", version, keys, ep)
	}
	if _, err := conn.Exec(ctx, `UPDATE subscriptions SET delivery = '{}' WHERE id = 'sub_v10x'`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if sub, err := s.GetSubscription(ctx, "sub_v10"); err != nil || sub.EndpointID != s.EndpointID("", sub.URL) {
		t.Fatalf("sub_v10 after the upgrade: %+v, %v", sub, err)
	}
}
