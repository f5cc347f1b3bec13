package enginetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// The conformance suite runs on the engine over each driver: SQLite on a
// file of the test's own, PostgreSQL on a fresh schema of the database
// HERALD_TEST_POSTGRES_URL names (skipped without it outside CI:
// pgtest). The checks of several nodes sharing one database run on
// PostgreSQL only, the only shared store.
//
// Every test here runs in parallel with the others (t.Parallel), each on
// stores of its own: the PostgreSQL ones mostly wait for the server, and
// side by side the four runs of the suite keep both of a small machine's
// cores busy where one after the other they left one idle between a
// group's last tests (a group's tests run in parallel, its groups in turn).

// openSQLite opens the engine over a new SQLite file, closed when tb ends.
func openSQLite(tb testing.TB, opts sqlite.Options) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "herald.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// openPostgres opens the engine over the schema dbURL names, closed when
// tb ends.
func openPostgres(tb testing.TB, dbURL string, opts postgres.Options) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), dbURL, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	Run(t, func(t *testing.T) store.Store { return openSQLite(t, sqlite.Options{}) })
}

// TestSQLiteStaged runs the suite on a store that writes every publish of
// more than one row (an event, a delivery) in staged steps
// (internal/store/engine/staged.go): what a staged publish does must be
// what the suite asks of any publish.
func TestSQLiteStaged(t *testing.T) {
	t.Parallel()
	Run(t, func(t *testing.T) store.Store { return openSQLite(t, sqlite.Options{MaxTxRows: 1}) })
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	pgtest.BaseURL(t)
	Run(t, func(t *testing.T) store.Store { return openPostgres(t, pgtest.SchemaURL(t), postgres.Options{}) })
}

// TestPostgresLarge runs the suite with every publish of more than one row
// a large one, written alone by the second writer (postgres.Options.LargeRows).
func TestPostgresLarge(t *testing.T) {
	t.Parallel()
	pgtest.BaseURL(t)
	Run(t, func(t *testing.T) store.Store {
		return openPostgres(t, pgtest.SchemaURL(t), postgres.Options{LargeRows: 1})
	})
}

// TestSubscriptionLimit: CheckSubscriptionLimit with a limit of 8 on one
// SQLite store, and on three PostgreSQL nodes sharing one schema, where
// creates racing through all of them still stop at 8.
func TestSubscriptionLimit(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		CheckSubscriptionLimit(t, 8, openSQLite(t, sqlite.Options{MaxSubscriptionsPerAccount: 8}))
	})
	t.Run("Postgres", func(t *testing.T) {
		dbURL := pgtest.SchemaURL(t)
		opts := postgres.Options{MaxSubscriptionsPerAccount: 8}
		CheckSubscriptionLimit(t, 8, openPostgres(t, dbURL, opts), openPostgres(t, dbURL, opts), openPostgres(t, dbURL, opts))
	})
}

// TestKeyLeasesExclusive: CheckKeyLeasesExclusive on one SQLite store (its
// claims, redelivers and records all go through the one writer) and on
// two PostgreSQL nodes sharing one schema.
func TestKeyLeasesExclusive(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) { CheckKeyLeasesExclusive(t, openSQLite(t, sqlite.Options{})) })
	t.Run("Postgres", func(t *testing.T) {
		dbURL := pgtest.SchemaURL(t)
		CheckKeyLeasesExclusive(t, openPostgres(t, dbURL, postgres.Options{}), openPostgres(t, dbURL, postgres.Options{}))
	})
}

// TestNodes runs the checks of several nodes on PostgreSQL nodes sharing
// one schema: claims and receives disjoint, the job limit (4) and the
// accounts' job turns held whichever node claims.
func TestNodes(t *testing.T) {
	t.Parallel()
	nodes := func(t *testing.T, n int) []store.Store {
		dbURL := pgtest.SchemaURL(t)
		var ns []store.Store
		for range n {
			ns = append(ns, openPostgres(t, dbURL, postgres.Options{}))
		}
		return ns
	}
	t.Run("ClaimsDisjoint", func(t *testing.T) { CheckClaimsDisjoint(t, nodes(t, 2)...) })
	t.Run("ReceivesDisjoint", func(t *testing.T) { CheckReceivesDisjoint(t, nodes(t, 2)...) })
	t.Run("JobLimit", func(t *testing.T) { CheckJobLimit(t, 4, nodes(t, 3)...) })
	t.Run("JobTurns", func(t *testing.T) { CheckJobTurns(t, nodes(t, 2)...) })
}
