package backends_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/store"
	_ "github.com/herald-events/herald/internal/store/backends"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// TestValues: the values --store takes are "sqlite" and postgres:// and
// postgresql:// URLs, as herald serve has always taken them; anything
// else is refused with the message herald serve has always given.
func TestValues(t *testing.T) {
	for value, want := range map[string]string{
		"sqlite": sqlite.Name, "postgres://u@h:5432/db?sslmode=disable": postgres.Name, "postgresql://h/db": postgres.Name,
	} {
		if b, err := store.Parse(value); err != nil || b.Name != want {
			t.Errorf("Parse(%q) = %q, %v; want %s", value, b.Name, err, want)
		}
	}
	for _, value := range []string{"", "SQLite", "sqlite:", "sqlite:///tmp/h.db", "./herald.db", "Postgres://h/db", "postgres:h/db", "mysql://u@h/db"} {
		var unknown *store.UnknownURLError
		if b, err := store.Parse(value); !errors.As(err, &unknown) {
			t.Errorf("Parse(%q) = %q, %v; want an *UnknownURLError", value, b.Name, err)
		}
	}
	_, err := store.Parse("mysql://u:hunter2@h/db")
	if want := `"mysql://u:xxxxx@h/db": want sqlite or a postgres:// URL`; err == nil || err.Error() != want {
		t.Errorf("unknown URL: %v; want %s", err, want)
	}
}

// TestPostgresOpens: postgres.Opens is true for the backend's URLs, also
// malformed ones, and false for every other value.
func TestPostgresOpens(t *testing.T) {
	for value, want := range map[string]bool{
		"postgres://h/db": true, "postgresql://h/db": true, "postgres://u:p@h:port/db": true,
		"sqlite": false, "": false, "host=h dbname=db": false, "mysql://h/db": false,
	} {
		if got := postgres.Opens(value); got != want {
			t.Errorf("postgres.Opens(%q) = %v, want %v", value, got, want)
		}
	}
}

// TestOpenSQLite: "sqlite" opens the embedded store on herald.db in
// DataDir, with the capabilities the backend registered.
func TestOpenSQLite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := store.Open(context.Background(), "sqlite", store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*sqlite.Store); !ok {
		t.Fatalf("opened a %T", s)
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); err != nil {
		t.Fatalf("no database file: %v", err)
	}
	b, _ := store.Parse("sqlite")
	if s.Capabilities() != b.Capabilities {
		t.Errorf("capabilities %+v, registered %+v", s.Capabilities(), b.Capabilities)
	}
	if got, want := b.Descriptors(store.Options{MaxConns: 500}), (sqlite.Options{}).Descriptors(); got != want {
		t.Errorf("descriptors %d, want %d", got, want)
	}
	// The file is one process's: a second store on it fails, naming the backend.
	if _, err := store.Open(context.Background(), "sqlite", store.Options{DataDir: dir}); err == nil ||
		!strings.HasPrefix(err.Error(), "opening the SQLite store: ") {
		t.Errorf("a second store on the file: %v", err)
	}
}

// TestOpenPostgres: a postgres:// URL opens the PostgreSQL store, with the
// capabilities the backend registered and the pool it is given.
func TestOpenPostgres(t *testing.T) {
	u := pgtest.SchemaURL(t)
	s, err := store.Open(context.Background(), u, store.Options{MaxConns: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pg, ok := s.(*postgres.Store)
	if !ok {
		t.Fatalf("opened a %T", s)
	}
	if got := pg.Pool().Config().MaxConns; got != 5 {
		t.Errorf("pool of %d connections, want 5", got)
	}
	b, _ := store.Parse(u)
	if s.Capabilities() != b.Capabilities {
		t.Errorf("capabilities %+v, registered %+v", s.Capabilities(), b.Capabilities)
	}
	if got, want := b.Descriptors(store.Options{MaxConns: 500}), (postgres.Options{MaxConns: 500}).Descriptors(); got != want {
		t.Errorf("descriptors %d, want %d", got, want)
	}
}
