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
// A rows statement writes or reads many rows at once: its arguments are
// columns, slices of one length (n rows), and FreeText for text from
// outside; a nil []string is a column of NULLs of any length (a column
// that is mostly empty costs nothing then). PostgreSQL reads them with
// unnest (which pads a NULL array with NULLs); SQLite's statement holds
// one row of parameters marked /*rows*/, which the driver repeats for up
// to 32 rows a statement, running it as often as the rows need (its
// returned rows come in order).
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
	"errors"
	"time"
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
// Reader; every write runs in a transaction begun with Begin, by the
// engine's writer (internal/store/engine/writer.go) or, on a driver whose
// GroupCommit is not Exclusive, by the engine's caller goroutine.
type Driver interface {
	// Reader runs each statement alone (read-only).
	Reader() Executor
	// Snapshot runs fn in a read-only transaction: every statement in it
	// reads the same snapshot of the database.
	Snapshot(ctx context.Context, fn func(x Executor) error) error
	// Begin begins a write transaction. On a driver whose GroupCommit is
	// Exclusive only the engine's one writer goroutine calls it, and never
	// while another of its transactions is open.
	Begin(ctx context.Context) (Tx, error)
	// GroupCommit is how the engine's writer shares this database's
	// transactions out.
	GroupCommit() GroupCommit
	// Retryable reports whether err, met in a transaction, was a conflict
	// with another transaction (a deadlock, a serialization failure): the
	// transaction was rolled back and may run again as it was.
	Retryable(err error) bool
	// Refused reports whether err, met in a transaction, was the database
	// refusing a statement for the data it was given (a duplicate key,
	// text it cannot store): the other writes of a group commit may then
	// succeed without the one that caused it. Not a database gone away.
	Refused(err error) bool
	// Ping reports whether the database can serve requests
	// (store.ErrUnavailable when not, with why).
	Ping(ctx context.Context) error
	// Close closes the database, once the engine has stopped writing.
	Close() error
	// WriteErr classifies the error a write is answered with (nil too):
	// store.ErrUnavailable, store.ErrClosed. The driver may note it (SQLite
	// reports the store away from Ping until a write commits again).
	WriteErr(err error) error
}

// Tx is a write transaction (Driver.Begin).
type Tx interface {
	Executor
	// Commit commits the transaction. Its error wraps ErrRolledBack when
	// the transaction was certainly rolled back (its writes may run
	// again); any other leaves the outcome unknown.
	Commit(ctx context.Context) error
	// Rollback rolls the transaction back.
	Rollback(ctx context.Context) error
	// Writes counts the statements run in the transaction that may have
	// changed rows: a write that failed before its count moved changed
	// nothing, and the rest of the transaction may go on without it.
	Writes() int64
}

// ErrRolledBack marks a failed Commit after which nothing was written.
var ErrRolledBack = errors.New("transaction rolled back")

// GroupCommit is what the engine's writer needs to know of a database.
type GroupCommit struct {
	// Writers is how many write transactions may be open at once (the
	// writer's goroutines): SQLite 1, PostgreSQL its Options.Writers.
	Writers int
	// Exclusive: every write transaction of the store is the writer's,
	// the engine's other writes included (SQLite's one write connection).
	Exclusive bool
	// Staged: a large publish is written in steps of transactions of at
	// most MaxBatchRows rows, each after a batch of the other requests
	// (SQLite, engine/staged.go); else by a writer other than the first,
	// alone.
	Staged bool
	// MaxBatch caps the requests of one transaction; QueueSize the
	// requests waiting for a writer.
	MaxBatch, QueueSize int
	// MaxBatchRows stops a batch taking requests once it holds this many
	// rows (events, deliveries, outcomes; 1 for another write).
	MaxBatchRows int
	// LargeRows makes a publish of more rows a large one (see Staged).
	LargeRows int
	// Timeout bounds each of the writer's transactions (0: none).
	Timeout time.Duration
	// Linger, when positive, lets a busy writer wait for more requests
	// before a batch of fewer than LingerBelow: at most Linger, and only
	// while more keep arriving (engine/linger.go). 0: never waits.
	Linger      time.Duration
	LingerBelow int
	// CountsInApply: the database adds an UPDATE's rollups in the same
	// statement (a data-modifying CTE: PostgreSQL). The engine then applies
	// outcomes with ApplyCountedOutcomes and logs their attempts in the
	// same round trip; else it adds the rollups itself (AddStats).
	CountsInApply bool
}

// FreeText is a column of text from outside the store (an error message,
// an outcome): PostgreSQL stores it cleaned to valid UTF-8 without NUL
// bytes, SQLite as it is.
type FreeText []string
