// Package driver is what the store engine (internal/store/engine) asks of
// an SQL database: statements named by a Query, run inside transactions,
// over rows the engine scans itself. A driver (internal/store/sqlite,
// internal/store/postgres) holds only its dialect's statements, in
// queries/*.sql files under the same names, and the mechanisms of its
// database (connections, transactions, the classification of its errors);
// every rule of what to read and write, and in which order, is the
// engine's.
//
// Both drivers take the same arguments for a Query, in the same order, and
// return the same columns: times as Unix milliseconds (int64), text as
// string, bytes as []byte, counts as int64. A list of values is passed as
// a Go slice ([]string, []int64); the SQLite driver binds it as a JSON
// array (read with json_each), PostgreSQL as an array.
//
// A driver may offer more than this package asks; the engine declares
// those optional interfaces beside the code that looks for them:
// engine.Pipeliner (an Executor that sends several statements in one round
// trip) and engine.ClaimHook (a test hook into a claim) in
// engine/claims_keys.go, engine.SeekReader (a Reader planned with index
// scans only) in engine/claims.go.
package driver

import (
	"context"
	"database/sql"
)

// Query names a statement in a driver's queries/*.sql files.
type Query string

// ErrNoRows is what Row.Scan returns when the statement returned no row
// (test with errors.Is).
var ErrNoRows = sql.ErrNoRows

// Row is one row of a result: Scan copies its columns into dest, in order.
type Row interface {
	Scan(dest ...any) error
}

// Executor runs statements: on its own (a driver's Reader), or inside a
// transaction (Write, Snapshot). Errors are classified as the store
// contract asks (store.ErrUnavailable, store.ErrClosed).
type Executor interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, q Query, args ...any) (int64, error)
	// Query runs a statement and calls each for every row it returns, in
	// order, stopping at the first error each returns.
	Query(ctx context.Context, q Query, each func(Row) error, args ...any) error
	// QueryRow runs a statement expected to return at most one row; its
	// Scan returns ErrNoRows when there is none.
	QueryRow(ctx context.Context, q Query, args ...any) Row
}

// Driver is one database, opened. Reads outside a transaction go to
// Reader; the engine runs every write inside Write.
type Driver interface {
	// Reader runs each statement alone (read-only).
	Reader() Executor
	// Snapshot runs fn in a read-only transaction: every statement in it
	// reads the same snapshot of the database.
	Snapshot(ctx context.Context, fn func(x Executor) error) error
	// Write runs fn in a write transaction and commits it when fn returns
	// nil. fn may run more than once (a transaction retried after a
	// conflict, or a group commit run again without a failed request), so
	// it must set its results anew on every run. On SQLite every write
	// transaction is the one writer's (a request of its group commit); on
	// PostgreSQL it runs on the pool, retried a few times after a
	// deadlock or serialization failure.
	Write(ctx context.Context, fn func(x Executor) error) error
}
