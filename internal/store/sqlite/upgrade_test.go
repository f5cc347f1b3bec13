package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-events/herald/internal/store/migrate"
	"github.com/herald-events/herald/internal/store/storetest"
)

// openUpgraded writes a data file at an earlier schema version (its
// migrations applied as that release did) holding data, and opens it with
// this build.
func openUpgraded(t *testing.T, version int, data string) *Store {
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
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestUpgradeFromV1 opens a data file written by the first release's schema
// and checks that everything in it is kept and works.
func TestUpgradeFromV1(t *testing.T) {
	storetest.CheckUpgradeFromV1(t, openUpgraded(t, 1, storetest.V1Data))
}

// TestUpgradeFromV2 opens a data file at schema version 2, with endpoints
// left behind, and checks that those go and the rest is kept.
func TestUpgradeFromV2(t *testing.T) {
	storetest.CheckUpgradeFromV2(t, openUpgraded(t, 2, storetest.V2Data))
}
