package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-events/herald/internal/store/storetest"
)

// TestUpgradeFromV1 opens a data file written by the first release's schema
// (its migration applied as that release did) and checks that everything in
// it is kept and works.
func TestUpgradeFromV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(v1),
		`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
		`INSERT INTO schema_version VALUES (1, '0001_init.sql', 0)`,
		storetest.V1Data,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("writing the version-1 database: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckUpgradeFromV1(t, s)
}
