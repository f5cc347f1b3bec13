package postgres

import (
	"context"
	"embed"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/engine"
)

// Store is store.Store on a PostgreSQL database: the engine
// (internal/store/engine) over this package's driver, and what the
// package still implements itself. Create it with Open.
type Store struct {
	*engine.Store
	*backend
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url, a PostgreSQL URL
// (postgres://user@host:5432/db?sslmode=disable&search_path=herald) or
// keyword/value string, applies the embedded migrations (see Migrate),
// opens the connection pool and starts the group-commit writers. Close
// releases it. Leases left by earlier runs are kept: they expire by time.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	b, err := openBackend(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return &Store{Store: engine.New(pgDriver{b}, engine.Options{
		Logger: b.log, OnQueued: b.opts.OnQueued, MaxSubscriptionsPerAccount: b.opts.MaxSubscriptionsPerAccount,
		EndpointKey: b.key, Clock: b.clock, Capabilities: capabilities,
	}), backend: b}, nil
}

// Close implements store.Store: the engine's writer stops, then the
// backend closes the pool.
func (s *Store) Close() error { return s.Store.Close() }

// Stats returns the writers' counters (and the claims run again after a
// conflict, in Retried).
func (s *Store) Stats() Stats {
	st := s.Store.WriterStats()
	return Stats{Commits: st.Commits, Requests: st.Requests, Isolated: st.Isolated,
		Retried: st.Retried + s.backend.retried.Load()}
}

//go:embed queries/*.sql
var queryFiles embed.FS

// queries are the driver's statements (queries/*.sql), by name.
var queries = driver.MustParseQueries(queryFiles, "queries")

// pgDriver is driver.Driver on b's pool: every statement in a transaction
// begun with the statement timeout (tx); the engine runs the writes, again
// after a deadlock or serialization failure (Retryable).
type pgDriver struct{ b *backend }

func (d pgDriver) Reader() driver.Executor { return readExec{d.b} }

// Snapshot runs fn in a read-only REPEATABLE READ transaction whose
// statements are planned for their arguments (listOpts: the lists' best
// plans depend on them, and a snapshot is never on the hot path).
func (d pgDriver) Snapshot(ctx context.Context, fn func(driver.Executor) error) error {
	return d.b.readTx(ctx, d.b.listOpts, func(tx pgx.Tx) error { return fn(txExec{tx}) })
}

// Begin implements driver.Driver: a transaction on a connection of the
// pool, begun with the statement timeout (see the package comment) in the
// round trip of its first statements (pgTx).
func (d pgDriver) Begin(ctx context.Context) (driver.Tx, error) {
	if err := d.b.checkOpen(); err != nil {
		return nil, err
	}
	return &pgTx{pool: d.b.pool, begin: d.b.beginStmts}, nil
}

// GroupCommit implements driver.Driver: Options.Writers writers; a large
// publish is written alone by a writer other than the first.
func (d pgDriver) GroupCommit() driver.GroupCommit {
	o := d.b.opts
	var timeout time.Duration
	if o.StatementTimeout > 0 {
		timeout = 5 * o.StatementTimeout
	}
	return driver.GroupCommit{Writers: o.Writers, MaxBatch: o.MaxBatch, QueueSize: o.QueueSize,
		MaxBatchRows: o.MaxBatchRows, LargeRows: o.LargeRows, Timeout: timeout, CountsInApply: true}
}

// Retryable implements driver.Driver: a serialization failure or a
// deadlock.
func (pgDriver) Retryable(err error) bool { return retryable(err) }

// Refused implements driver.Driver: an error PostgreSQL returned, but not
// one of a server going away (isUnavailable).
func (pgDriver) Refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && !isUnavailable(err)
}

// WriteErr implements driver.Driver (backend.err).
func (d pgDriver) WriteErr(err error) error { return d.b.err(err) }

// readExec runs each statement in a transaction of its own.
type readExec struct{ b *backend }

func (r readExec) Exec(ctx context.Context, q driver.Query, args ...any) (n int64, err error) {
	if err := r.b.checkOpen(); err != nil {
		return 0, err
	}
	err = r.b.tx(ctx, func(tx pgx.Tx) error {
		n, err = txExec{tx}.Exec(ctx, q, args...)
		return err
	})
	return n, r.b.err(err)
}

func (r readExec) Query(ctx context.Context, q driver.Query, each func(driver.Row) error, args ...any) error {
	if err := r.b.checkOpen(); err != nil {
		return err
	}
	return r.b.err(r.b.tx(ctx, func(tx pgx.Tx) error { return txExec{tx}.Query(ctx, q, each, args...) }))
}

func (r readExec) QueryRow(ctx context.Context, q driver.Query, args ...any) driver.Row {
	return lazyRow{r, ctx, q, args}
}

// lazyRow runs its statement when it is scanned, in a transaction of its
// own.
type lazyRow struct {
	r    readExec
	ctx  context.Context
	q    driver.Query
	args []any
}

func (l lazyRow) Scan(dest ...any) error {
	if err := l.r.b.checkOpen(); err != nil {
		return err
	}
	return l.r.b.err(l.r.b.tx(l.ctx, func(tx pgx.Tx) error {
		return txExec{tx}.QueryRow(l.ctx, l.q, l.args...).Scan(dest...)
	}))
}

// txExec runs statements in a transaction.
type txExec struct{ tx pgx.Tx }

func (t txExec) Exec(ctx context.Context, q driver.Query, args ...any) (int64, error) {
	text, err := queries.SQL(q)
	if err != nil {
		return 0, err
	}
	tag, err := t.tx.Exec(ctx, text, bind(args)...)
	return tag.RowsAffected(), err
}

func (t txExec) Query(ctx context.Context, q driver.Query, each func(driver.Row) error, args ...any) error {
	text, err := queries.SQL(q)
	if err != nil {
		return err
	}
	rows, err := t.tx.Query(ctx, text, bind(args)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (t txExec) QueryRow(ctx context.Context, q driver.Query, args ...any) driver.Row {
	text, err := queries.SQL(q)
	if err != nil {
		return errRow{err}
	}
	return noRows{t.tx.QueryRow(ctx, text, bind(args)...)}
}

// noRows reports pgx's "no rows" as driver.ErrNoRows.
type noRows struct{ r pgx.Row }

func (n noRows) Scan(dest ...any) error {
	err := n.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.ErrNoRows
	}
	return err
}

// errRow is a row whose Scan fails with err.
type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

// bind returns args as PostgreSQL takes them: a FreeText column cleaned
// to valid UTF-8 without NUL bytes (cleanText).
func bind(args []any) []any {
	for i, a := range args {
		if ft, ok := a.(driver.FreeText); ok {
			clean := make([]string, len(ft))
			for k, s := range ft {
				clean[k] = cleanText(s)
			}
			args[i] = clean
		}
	}
	return args
}

// Ping implements driver.Driver (backend.ping).
func (d pgDriver) Ping(ctx context.Context) error { return d.b.ping(ctx) }

// Close implements driver.Driver (backend.Close).
func (d pgDriver) Close() error { return d.b.Close() }
