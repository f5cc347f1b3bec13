package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/migrate"
	"github.com/herald-events/herald/internal/store/storetest"
)

// openUpgraded writes a data file at an earlier schema version (its
// migrations applied as that release did) holding data, and opens it with
// this build.
func openUpgraded(t *testing.T, version int, data string) *Store {
	t.Helper()
	s, err := Open(context.Background(), writeVersion(t, version, data), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// writeVersion writes a data file at an earlier schema version holding
// data and returns its path.
func writeVersion(t *testing.T, version int, data string) string {
	t.Helper()
	ms, err := migrate.LoadMigrations(os.DirFS("."), "migrations")
	if err != nil {
		t.Fatal(err)
	}
	qs := []string{`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`}
	for _, m := range ms[:version] {
		qs = append(qs, m.SQL, fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, '%s', 0)`, m.Version, m.Name))
	}
	path := filepath.Join(t.TempDir(), "herald.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(qs, data) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("writing the version-%d database: %v", version, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUpgrade opens databases written at each earlier schema version and
// checks that everything in them is kept and works.
func TestUpgrade(t *testing.T) {
	storetest.RunUpgrades(t, func(t *testing.T, version int, data string) store.Store { return openUpgraded(t, version, data) })
}
