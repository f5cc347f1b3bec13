// Package postgres is Herald's store for several processes ("nodes")
// sharing one PostgreSQL database: store.Store through
// github.com/jackc/pgx/v5 and a pgxpool connection pool.
//
// # Schema and migrations
//
// The schema is embedded (migrations/*.sql) and applied by Open, or by
// Migrate alone, under a session advisory lock keyed by the schema's name:
// nodes that start together apply each migration exactly once. The
// schema_version table records what was applied; a schema newer than this
// build is refused. Everything lives in the first schema of the connection's
// search_path, so several deployments (or tests) can share one database in
// separate schemas: put `search_path=NAME` in the URL's query.
//
// # Durability and group commit
//
// Every write returns only after its transaction commits (with the server's
// default synchronous_commit = on, after the WAL is flushed). Publish and
// Record, the hot path, are group-committed (DESIGN §4 invariant 7): calls
// queue on a bounded channel and Options.Writers goroutines each take every
// request already queued (up to Options.MaxBatch requests) and write them
// all in one transaction with set-based statements: one multi-row INSERT of
// events and deliveries over unnest(...) arrays, one UPDATE and one attempt
// upsert per group of outcomes. If that shared transaction fails on a
// request's data, each request of the batch runs again alone, so one bad
// call fails only itself; deadlocks and serialization failures are retried.
// Other writes run directly on the pool, each in its own transaction.
//
// Dedup of (source, id) holds across nodes through the unique index: an
// insert that meets another transaction's uncommitted copy of an event waits
// for it and then reports a duplicate. A batch inserts its events in key
// order, so two nodes publishing overlapping events never deadlock.
//
// # Leases and multi-node claims
//
// A delivery is leased while lease_until is set: held by lease_owner until
// lease_until, Unix milliseconds. Unlike the SQLite store, where a lease
// lasts until released, a lease here expires by time: ClaimDue(now) takes
// pending deliveries that are unleased or whose lease_until < now, locking
// candidates with FOR UPDATE SKIP LOCKED, so concurrent claimers on any
// number of nodes never get the same delivery and a dead node's work is
// taken over once its leases expire. A holder must therefore finish (Record
// or Release) before its lease ends, or extend it with ExtendLeases (which
// also tells it which deliveries it still holds); Release gives back only
// the leases its owner still holds. Clocks of the nodes must agree to well
// within a lease. Leases left by an earlier run of a node are not cleared
// at Open: they expire like any other. A zero Lease.Until is stored as
// "never expires", as in SQLite; nodes should not use it.
//
// Record with Outcome.LeaseOwner set changes the state only while that
// owner still holds the lease, so a node whose lease expired and was taken
// over cannot overwrite the new holder's state; its attempt is still logged.
//
// # Shared endpoint health and roles
//
// Endpoint health is shared by the nodes. ModifyEndpoints is a
// read-modify-write under row locks (SELECT ... FOR UPDATE in ID order, one
// transaction), so concurrent changes from several nodes never get lost;
// TakeProbe is one conditional UPDATE, so exactly one node sends a due
// probe. TryLead keeps cluster-wide roles in the leaders table with one
// atomic upsert; a role's term is judged by the caller's now, so here too
// the clocks must agree.
//
// ClaimDue and Redeliver compare leases with the now they are given.
// DueEndpoints and NextDue take no time, so they compare with
// Options.Clock: a delivery whose lease has expired by that clock counts as
// due again, at its next_attempt_at (which lies in the past for a delivery
// that was claimed); one whose lease has not expired is not counted.
//
// # Limits
//
// Times are kept to the millisecond (attempt durations to the microsecond,
// subscription timeouts to the millisecond); the Unix epoch itself reads back
// as the zero time. Text columns hold valid UTF-8 without NUL bytes: an
// attempt's Error and Outcome and a delivery's LastOutcome and
// DeadLetterReason are cleaned to that (invalid bytes become U+FFFD, NULs are
// dropped); event identifiers, types and subjects that are not valid UTF-8
// make their Publish call fail. With 1,000,000 pending deliveries
// (BenchmarkBacklog1M; plans pinned by TestQueryPlans), ClaimDue and NextDue
// are index range scans of the lane indexes that also step over the
// endpoint's leased deliveries (bounded by the nodes' in-memory windows):
// about 2 ms to claim and release 100, 0.06 ms for NextDue; DueEndpoints
// costs a few index seeks per endpoint with pending deliveries (16 ms for
// 1,000); CountPending counts the whole backlog (about 70 ms).
// DeleteSubscription and Redrive change all their rows in one statement.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/store"
)

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// Logger receives warnings (isolated or retried write batches, outcomes
	// for unknown deliveries) and the migration notice. Nil discards them.
	Logger *slog.Logger
	// Clock is the time DueEndpoints and NextDue compare leases with (the
	// other methods take the time as an argument). Default clock.Real{}.
	// Give it the dispatcher's clock.
	Clock clock.Clock
	// MaxConns is the size of the connection pool. Default
	// max(8, 2×GOMAXPROCS), and always at least Writers+2.
	MaxConns int
	// StatementTimeout bounds every statement on the pool's connections
	// (the server's statement_timeout; it overrides one given in the URL).
	// Default 60s; negative leaves the URL's or the server's setting.
	// Migrations run without it.
	StatementTimeout time.Duration
	// Writers is the number of group-commit transactions that may be in
	// flight at once. Default 2.
	Writers int
	// MaxBatch caps how many Publish and Record calls share one transaction.
	// Default 256.
	MaxBatch int
	// MaxBatchRows stops adding calls to a transaction once it holds this
	// many events and outcomes. Default 20,000.
	MaxBatchRows int
	// QueueSize is the capacity of the group-commit queue; callers block (or
	// give up with their context) while it is full. Default 4096.
	QueueSize int
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Writers <= 0 {
		o.Writers = 2
	}
	if o.MaxConns <= 0 {
		o.MaxConns = max(8, 2*runtime.GOMAXPROCS(0))
	}
	o.MaxConns = max(o.MaxConns, o.Writers+2)
	if o.StatementTimeout == 0 {
		o.StatementTimeout = 60 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.MaxBatchRows <= 0 {
		o.MaxBatchRows = 20_000
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
}

// Store is store.Store on a PostgreSQL database. Create it with Open.
type Store struct {
	pool  *pgxpool.Pool
	log   *slog.Logger
	clock clock.Clock
	opts  Options

	reqs    chan *request
	writers sync.WaitGroup

	// mu orders Close against queueing: write holds it shared while
	// queueing, Close exclusively while marking the store closed, so no
	// request is queued after reqs is closed.
	mu     sync.RWMutex
	closed atomic.Bool

	commits  atomic.Int64
	served   atomic.Int64
	isolated atomic.Int64
	retried  atomic.Int64
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url, a PostgreSQL URL
// (postgres://user@host:5432/db?sslmode=disable&search_path=herald) or
// keyword/value string, applies the embedded migrations (see Migrate),
// opens the connection pool and starts the group-commit writers. Close
// releases it. Leases left by earlier runs are kept: they expire by time.
func Open(ctx context.Context, url string, opts Options) (_ *Store, err error) {
	opts.setDefaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	cfg.MaxConns = int32(opts.MaxConns)
	rp := cfg.ConnConfig.RuntimeParams
	if _, ok := rp["application_name"]; !ok {
		rp["application_name"] = "herald"
	}
	if err := migrateConfig(ctx, cfg.ConnConfig, opts.Logger); err != nil {
		return nil, err
	}
	if opts.StatementTimeout > 0 {
		rp["statement_timeout"] = strconv.FormatInt(max(opts.StatementTimeout.Milliseconds(), 1), 10)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	s := &Store{
		pool:  pool,
		log:   opts.Logger,
		clock: opts.Clock,
		opts:  opts,
		reqs:  make(chan *request, opts.QueueSize),
	}
	s.writers.Add(opts.Writers)
	for range opts.Writers {
		go s.writer()
	}
	return s, nil
}

// Stats describes the group-commit writers' work since Open.
type Stats struct {
	// Commits is the number of group-commit transactions committed.
	Commits int64
	// Requests is the number of Publish and Record calls answered
	// (committed or failed). Requests / Commits is the mean batch size.
	Requests int64
	// Isolated counts batches that failed on one call's data and were run
	// again call by call.
	Isolated int64
	// Retried counts transactions run again after a deadlock or a
	// serialization failure.
	Retried int64
}

// Stats returns the writers' counters.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Requests: s.served.Load(),
		Isolated: s.isolated.Load(), Retried: s.retried.Load()}
}

// Pool returns the connection pool (for metrics and administration).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping reports whether the store can serve requests: ErrClosed after Close,
// else whether a connection answers.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.err(s.pool.Ping(ctx))
}

// Close stops accepting calls, waits for queued writes to commit, and closes
// the pool (waiting for calls in progress). Later calls return
// store.ErrClosed; Close itself may be called again and returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil
	}
	s.closed.Store(true)
	s.mu.Unlock()
	close(s.reqs) // no write can be queueing now: they check closed under mu
	s.writers.Wait()
	s.pool.Close()
	return nil
}

// checkOpen returns ErrClosed after Close.
func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// err turns the errors of a pool closed under a running call into
// ErrClosed.
func (s *Store) err(err error) error {
	if err != nil && s.closed.Load() && !errors.Is(err, pgx.ErrNoRows) && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("%w (%v)", store.ErrClosed, err)
	}
	return err
}

// inTx runs fn in a transaction on the pool and commits it, retrying the
// whole transaction a few times on a deadlock or serialization failure.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	for try := 0; ; try++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || try >= maxRetries || !retryable(err) {
			return s.err(err)
		}
		s.retried.Add(1)
		backoff(try)
	}
}

const maxRetries = 8

// retryable reports whether err is a transient conflict between
// transactions (the whole transaction was rolled back and may run again).
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" // serialization_failure, deadlock_detected
	}
	return errors.Is(err, errRetry)
}

// errRetry asks for a batch to run again (a row it depended on changed
// between two of its statements).
var errRetry = errors.New("concurrent change; retry")

func backoff(try int) {
	time.Sleep(time.Duration(1+try*try) * time.Millisecond)
}

// pgCode returns the SQLSTATE and constraint of a PostgreSQL error.
func pgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}
