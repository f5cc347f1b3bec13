package enginetest

import (
	"testing"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// BenchmarkSQLite runs Bench on SQLite stores.
func BenchmarkSQLite(b *testing.B) {
	Bench(b, BenchStore{
		Open: func(tb testing.TB) store.Store { return openSQLite(tb, sqlite.Options{}) },
		Commits: func(s store.Store) (calls, commits int64) {
			st := s.(*sqlite.Store).Stats()
			return st.Requests, st.Commits
		},
	})
}

// BenchmarkPostgres runs Bench on PostgreSQL stores, each on a fresh
// schema analyzed as autovacuum would (pgtest.AutoAnalyze).
func BenchmarkPostgres(b *testing.B) {
	pgtest.BaseURL(b)
	Bench(b, BenchStore{
		Open: func(tb testing.TB) store.Store {
			url := pgtest.SchemaURL(tb)
			s := openPostgres(tb, url, postgres.Options{})
			pgtest.AutoAnalyze(tb, url)
			return s
		},
		Commits: func(s store.Store) (calls, commits int64) {
			st := s.(*postgres.Store).Stats()
			return st.Requests, st.Commits
		},
	})
}
