package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"fmt"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/engine"
)

// Store is store.Store on one SQLite file: the engine
// (internal/store/engine) over this package's driver, and what the
// package still implements itself. Create it with Open.
type Store struct {
	*engine.Store
	*backend
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it and its parent directory if needed) the database
// at path, makes its directory and files private (see makePrivate),
// applies the embedded schema migrations, deletes what a publish the
// previous run did not finish wrote (staged.go), clears every lease left
// by a previous run, and starts the writer. Close releases it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	b, err := openBackend(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	eng := engine.New(sqliteDriver{b}, engine.Options{
		Logger: b.log, OnQueued: b.onQueued, MaxSubscriptionsPerAccount: b.maxSubs,
		EndpointKey: b.key, Capabilities: capabilities,
	})
	b.write = eng.Write
	return &Store{Store: eng, backend: b}, nil
}

// Close implements store.Store: the engine's writer stops, then the
// backend closes the database.
func (s *Store) Close() error { return s.Store.Close() }

//go:embed queries/*.sql
var queryFiles embed.FS

// queries are the driver's statements (queries/*.sql), by name.
var queries = positional(driver.MustParseQueries(queryFiles, "queries"))

// sqliteDriver is driver.Driver on b's connections: reads on the read
// pool, writes on the one write connection (writeconn.go), in the
// transactions of the engine's writer.
type sqliteDriver struct{ b *backend }

func (d sqliteDriver) Reader() driver.Executor { return readExec{d.b} }

func (d sqliteDriver) Snapshot(ctx context.Context, fn func(driver.Executor) error) error {
	return d.b.readErr(d.b.readTx(ctx, func(tx *sql.Tx) error { return fn(txExec{tx}) }))
}

// Begin implements driver.Driver: a transaction on the one write
// connection, which only the engine's writer goroutine holds.
func (d sqliteDriver) Begin(context.Context) (driver.Tx, error) {
	if err := d.b.w.begin(); err != nil {
		return nil, err
	}
	return d.b.w, nil
}

// GroupCommit implements driver.Driver: one writer, which every write
// goes through, staging the publishes larger than MaxTxRows.
func (d sqliteDriver) GroupCommit() driver.GroupCommit {
	o := d.b.opts
	return driver.GroupCommit{Writers: 1, Exclusive: true, Staged: true, MaxBatch: o.MaxBatch,
		QueueSize: o.QueueSize, MaxBatchRows: o.MaxTxRows, LargeRows: o.MaxTxRows,
		Linger: max(o.Linger, 0), LingerBelow: o.LingerBelow}
}

// Retryable implements driver.Driver: the one writer meets no other.
func (sqliteDriver) Retryable(error) bool { return false }

// Refused implements driver.Driver: any failed statement may be one
// request's fault (a full disk fails each request alone as it did
// together).
func (sqliteDriver) Refused(err error) bool { return err != nil }

// WriteErr implements driver.Driver: a full disk or a failing file is
// store.ErrUnavailable, and marks the store away (noteWrite).
func (d sqliteDriver) WriteErr(err error) error {
	err = unavailable(err)
	d.b.noteWrite(err)
	return err
}

// bind returns args as the SQLite driver binds them: a slice of strings
// or integers as a JSON array (read with json_each).
func bind(args []any) ([]any, error) {
	for i, a := range args {
		switch a.(type) {
		case []string, []int64:
			b, err := json.Marshal(a)
			if err != nil {
				return nil, fmt.Errorf("argument %d: %w", i+1, err)
			}
			args[i] = string(b)
		}
	}
	return args, nil
}

// readExec runs statements on the read pool.
type readExec struct{ b *backend }

func (r readExec) Exec(ctx context.Context, q driver.Query, args ...any) (int64, error) {
	return 0, fmt.Errorf("store driver: %s: a write outside a write transaction", q)
}

func (r readExec) Query(ctx context.Context, q driver.Query, each func(driver.Row) error, args ...any) error {
	text, err := queries.SQL(q)
	if err != nil {
		return err
	}
	if args, err = bind(args); err != nil {
		return err
	}
	rows, err := r.b.readQuery(ctx, text, args...)
	if err != nil {
		return err
	}
	return r.b.readErr(eachRow(rows, each))
}

func (r readExec) QueryRow(ctx context.Context, q driver.Query, args ...any) driver.Row {
	text, err := queries.SQL(q)
	if err == nil {
		args, err = bind(args)
	}
	if err != nil {
		return row{err: err}
	}
	return readRow{r.b, r.b.readRow(ctx, text, args...)}
}

// readRow classifies the error of a read (readErr).
type readRow struct {
	b *backend
	r row
}

func (r readRow) Scan(dest ...any) error { return r.b.readErr(r.r.Scan(dest...)) }

// eachRow calls each for every row of rows and closes them.
func eachRow(rows *sql.Rows, each func(driver.Row) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// txExec runs statements in a read-only transaction (Snapshot).
type txExec struct{ tx *sql.Tx }

func (t txExec) Exec(ctx context.Context, q driver.Query, args ...any) (int64, error) {
	return 0, fmt.Errorf("store driver: %s: a write in a read-only transaction", q)
}

func (t txExec) Query(ctx context.Context, q driver.Query, each func(driver.Row) error, args ...any) error {
	text, err := queries.SQL(q)
	if err != nil {
		return err
	}
	if args, err = bind(args); err != nil {
		return err
	}
	rows, err := t.tx.QueryContext(ctx, text, args...)
	if err != nil {
		return err
	}
	return eachRow(rows, each)
}

func (t txExec) QueryRow(ctx context.Context, q driver.Query, args ...any) driver.Row {
	text, err := queries.SQL(q)
	if err == nil {
		args, err = bind(args)
	}
	if err != nil {
		return row{err: err}
	}
	return t.tx.QueryRowContext(ctx, text, args...)
}

// Ping implements driver.Driver (backend.ping).
func (d sqliteDriver) Ping(ctx context.Context) error { return d.b.ping(ctx) }

// Close implements driver.Driver (backend.Close).
func (d sqliteDriver) Close() error { return d.b.Close() }
