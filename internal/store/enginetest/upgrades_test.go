package enginetest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/migrate"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// Each driver's database written at an earlier schema version (its
// migrations, read from the driver's directory, applied as that release
// did) holding data, then opened with this build.

// versionStatements returns the statements that write the schema of
// version in the driver of dir (../sqlite, ../postgres), recording each
// migration in schema_version (created by create), followed by data.
func versionStatements(t *testing.T, dir, create string, version int, data string) []string {
	t.Helper()
	ms, err := migrate.LoadMigrations(os.DirFS(dir), "migrations")
	if err != nil {
		t.Fatal(err)
	}
	qs := []string{create}
	for _, m := range ms[:version] {
		qs = append(qs, m.SQL, fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, '%s', 0)`, m.Version, m.Name))
	}
	return append(qs, data)
}

// writeSQLite writes an SQLite file at version holding data and returns
// its path.
func writeSQLite(t *testing.T, version int, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "herald.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range versionStatements(t, "../sqlite",
		`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`, version, data) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("writing the version-%d database: %v", version, err)
		}
	}
	return path
}

// writePostgres writes a fresh PostgreSQL schema at version holding data
// and returns its URL.
func writePostgres(t *testing.T, version int, data string) string {
	t.Helper()
	url := pgtest.SchemaURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range versionStatements(t, "../postgres",
		`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`, version, data) {
		if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("writing the version-%d schema: %v", version, err)
		}
	}
	return url
}

// TestUpgrade opens databases written at each earlier schema version and
// checks that everything in them is kept and works.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		RunUpgrades(t, func(t *testing.T, version int, data string) store.Store {
			s, err := sqlite.Open(context.Background(), writeSQLite(t, version, data), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
	t.Run("Postgres", func(t *testing.T) {
		pgtest.BaseURL(t)
		RunUpgrades(t, func(t *testing.T, version int, data string) store.Store {
			return openPostgres(t, writePostgres(t, version, data), postgres.Options{})
		})
		// Version 21 left deliveries no index on a column an update
		// changes (its updates may be HOT), with room on its pages for
		// them, and moved those indexes to open_deliveries, which holds
		// the deliveries not delivered.
		t.Run("FromV20Indexes", func(t *testing.T) {
			s := openPostgres(t, writePostgres(t, OpenDeliveriesFrom, OpenDeliveriesData), postgres.Options{})
			ctx := context.Background()
			rows, err := s.Pool().Query(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'deliveries'`)
			if err != nil {
				t.Fatal(err)
			}
			defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || len(defs) != 5 {
				t.Fatalf("the indexes of deliveries after the upgrade: %q, %v; want 5", defs, err)
			}
			for _, def := range defs {
				for _, col := range []string{"status", "attempts", "next_attempt_at", "lease_until", "endpoint_id"} {
					if strings.Contains(def, col) {
						t.Errorf("index of deliveries after the upgrade names %s: %s", col, def)
					}
				}
			}
			var opts []string
			if err := s.Pool().QueryRow(ctx, `SELECT reloptions FROM pg_class WHERE oid = 'deliveries'::regclass`).Scan(&opts); err != nil || !slices.Contains(opts, "fillfactor=50") {
				t.Errorf("the options of deliveries after the upgrade: %q, %v; want fillfactor=50", opts, err)
			}
			var missing, extra int
			err = s.Pool().QueryRow(ctx, `SELECT
				(SELECT COUNT(*) FROM deliveries AS d WHERE d.status <> 'delivered' AND NOT EXISTS (SELECT 1 FROM open_deliveries AS o
					WHERE o.id = d.id AND o.status = d.status AND o.endpoint_id = d.endpoint_id AND o.next_attempt_at = d.next_attempt_at)),
				(SELECT COUNT(*) FROM open_deliveries AS o WHERE NOT EXISTS (SELECT 1 FROM deliveries AS d WHERE d.id = o.id AND d.status <> 'delivered'))`).Scan(&missing, &extra)
			if err != nil || missing != 0 || extra != 0 {
				t.Errorf("open_deliveries after the upgrade: %d deliveries not delivered without their row, %d rows of none, %v; want 0, 0", missing, extra, err)
			}
		})
	})
}

// unJSONDelivery makes schema 10's re-keying fail: a subscription whose
// delivery options are not JSON.
const unJSONDelivery = `UPDATE subscriptions SET delivery = 'not JSON' WHERE id = 'sub_v10x';`

// TestEndpointRekeyIsAtomic: a schema-10 database the re-keying fails on
// (a subscription whose delivery options are not JSON) is left as it was:
// schema 10, no key, the old IDs. Once the row is mended, the upgrade
// goes through.
func TestEndpointRekeyIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("SQLite", func(t *testing.T) {
		path := writeSQLite(t, 10, V10Data+unJSONDelivery)
		if _, err := sqlite.Open(ctx, path, sqlite.Options{}); err == nil || !strings.Contains(err.Error(), "0011_endpoint_key.sql") {
			t.Fatalf("Open of a database the re-keying fails on: %v", err)
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var version, keys int
		var ep string
		if err := db.QueryRow(`SELECT MAX(version), (SELECT COUNT(*) FROM sqlite_master WHERE name = 'installation_keys'),
		(SELECT endpoint_id FROM subscriptions WHERE id = 'sub_v10') FROM schema_version`).Scan(&version, &keys, &ep); err != nil {
			t.Fatal(err)
		}
		if version != 10 || keys != 0 || ep != "ep_80xd22q4hn06sbmty17h" {
			t.Fatalf("after a failed re-keying: schema %d, %d key tables, sub_v10 on %s; want 10, none, its old ID", version, keys, ep)
		}
		if _, err := db.Exec(`UPDATE subscriptions SET delivery = '{}' WHERE id = 'sub_v10x'`); err != nil {
			t.Fatal(err)
		}
		s, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkRekeyed(t, s)
	})
	t.Run("Postgres", func(t *testing.T) { checkPostgresRekeyAtomic(t) })
}

// checkPostgresRekeyAtomic is TestEndpointRekeyIsAtomic on PostgreSQL.
func checkPostgresRekeyAtomic(t *testing.T) {
	ctx := context.Background()
	url := writePostgres(t, 10, V10Data+unJSONDelivery)
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
	checkRekeyed(t, openPostgres(t, url, postgres.Options{}))
}

// checkRekeyed checks that sub_v10 is on its keyed endpoint ID.
func checkRekeyed(t *testing.T, s store.Store) {
	t.Helper()
	sub, err := s.GetSubscription(context.Background(), "sub_v10")
	if err != nil || sub.EndpointID != s.EndpointID("", sub.URL) {
		t.Fatalf("sub_v10 after the upgrade: %+v, %v", sub, err)
	}
}
