// Package postgres is Herald's store for several processes ("nodes")
// sharing one PostgreSQL database: store.Store through
// github.com/jackc/pgx/v5 and a pgxpool connection pool.
//
// # Schema and migrations
//
// The schema is embedded (migrations/*.sql) and applied by Open, or by
// Migrate alone, each migration in a transaction that first takes a
// transaction-level advisory lock keyed by the schema's name: nodes that
// start together apply each migration exactly once, and the lock goes with
// the transaction, so none is left behind on a pooled server connection.
// The schema_version table records what was applied; a schema newer than
// this build is refused. Everything lives in the first schema of the
// connection's search_path, so several deployments (or tests) can share one
// database in separate schemas: put `search_path=NAME` in the URL's query
// (a start-up parameter, which PgBouncer refuses unless it is listed in its
// ignore_startup_parameters, and then drops: behind PgBouncer set it on the
// role instead, ALTER ROLE ... SET search_path = NAME).
//
// # Statement timeout and connection poolers
//
// Options.StatementTimeout is set with SET LOCAL statement_timeout at the
// start of every transaction the store runs, and every statement the store
// runs is in such a transaction (single statements too: they are wrapped in
// one). It is neither a start-up parameter, which PgBouncer refuses
// ("unsupported startup parameter: statement_timeout"), nor a session SET on
// each new connection (pgxpool's AfterConnect): behind a bouncer in
// transaction pool mode a client connection's transactions each run on
// whichever server connection is free, so a session setting would be made on
// one server connection, stay there for that connection's other clients
// (such as a migration, which wants none), and be missing from the other
// server connections this store's later transactions run on. A transaction
// is what every pool mode keeps on one server connection, and SET LOCAL lasts
// exactly until its end, so the timeout holds in every pool mode and without
// a bouncer alike. BEGIN and the SET LOCAL go in one simple-protocol query,
// so a transaction costs no extra round trip for it; a single statement costs
// two more (BEGIN, COMMIT) than it would on its own. The engine's
// transactions (the writers', the claims', every write) send them in one
// batch with their first statement (tx.go): one round trip fewer.
//
// # Durability and group commit
//
// Every write returns only after its transaction commits (with the server's
// default synchronous_commit = on, after the WAL is flushed). Publish and
// Record, the hot path, are group-committed by the engine's writer
// (internal/store/engine/writer.go): calls queue on a bounded channel and
// Options.Writers goroutines each take the requests already queued (up to
// Options.MaxBatch requests) and write them all in one transaction with
// set-based statements over unnest(...) arrays: an INSERT of the events
// and one of their deliveries, an UPDATE per round of outcomes, then their
// attempts, rollups and dead letters' deliveries in one round trip. If
// that shared transaction fails on a request's data, each request of the
// batch runs again alone, so one bad call fails only itself; deadlocks and
// serialization failures are retried. Other writes run in a transaction
// of their own on the caller's goroutine.
//
// Dedup of (account, source, id) holds across nodes through the unique
// index: an insert that meets another transaction's uncommitted copy of an
// event waits for it and then reports a duplicate. A batch inserts its
// events in key order, so two nodes publishing overlapping events never
// deadlock.
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
// the leases its owner still holds.
// A claim that leased deliveries with an ordering key also tries each key's
// transaction-level advisory lock (never waiting for it) and checks them
// again before it commits (engine/claims_keys.go), so no two deliveries of one key are
// leased at once, on any nodes. Clocks of the nodes must agree to well
// within a lease. Leases left by an earlier run of a node are not cleared
// at Open: they expire like any other. A zero Lease.Until is stored as
// "never expires", as in SQLite; nodes should not use it.
//
// Record with Outcome.LeaseOwner set changes the state only while that
// owner still holds the lease, so a node whose lease expired and was taken
// over cannot overwrite the new holder's state; its attempt is still logged.
//
// # Queued deliveries and locks
//
// A pull subscription's deliveries, and a deactivated push subscription's,
// are queued: consumers Receive them, locking each under a token until a
// time, and Settle the locks (queue.go). Locks are columns of the delivery
// rows (lock_token, lock_until; next_attempt_at moves to the lock's end),
// so they hold across nodes and restarts, and expire by time like leases:
// Receive locks candidates FOR UPDATE SKIP LOCKED, so two nodes never lock
// one delivery under two live tokens, and Settle applies only while the
// token's lock_until is after the now it is given. Deliveries that became
// receivable are announced to every node with NOTIFY (Options.OnQueued;
// changes.go). A Record outcome under the queue failure policy deactivates
// its subscription, and ReactivateSubscription undoes it, as subscription
// writes (states.go).
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
// about 2 ms to claim and release 100, 0.2 ms for NextDue (half of it the
// round trips of its own transaction's BEGIN and COMMIT); DueEndpoints
// costs a few index seeks per endpoint with pending deliveries (16 ms for
// 1,000); CountPending counts the whole backlog (about 70 ms), which
// CountBacklog does not: it reads at most its limit of entries of each
// partial index (TestBacklogPlans), however large the backlog; nor does
// CountPendingOf, a seek per endpoint into each lane's index and at most
// its limit of entries in all (TestPendingOfPlans).
// DeleteSubscription and Redrive change all their rows in one statement.
// Receive is a range scan of the subscription's entries of the partial
// index of queued deliveries from its earliest due, and a primary-key
// update per delivery; Settle a primary-key update per token; NextAt one
// index seek; CountQueued counts the queued deliveries' index entries.
// ReactivateSubscription and a deactivation change all of a subscription's
// queued (or pending) deliveries in one statement.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// DefaultStatementTimeout is Options.StatementTimeout's default.
const DefaultStatementTimeout = 60 * time.Second

// DefaultConnectTimeout bounds each connection attempt (the pool's, the
// change feed's, the migrations') when the URL sets no connect_timeout:
// a server that is unreachable, its packets dropped rather than refused,
// then fails calls as store.ErrUnavailable within seconds instead of
// after the system's TCP retries (about two minutes on Linux).
const DefaultConnectTimeout = 5 * time.Second

// defaultWriters is Options.Writers' default.
const defaultWriters = 2

// MinMaxConns is the smallest pool the default Writers leave room in: a
// smaller MaxConns is raised to it.
const MinMaxConns = defaultWriters + 2

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
	// StatementTimeout bounds every statement the store runs (the server's
	// statement_timeout, set with SET LOCAL in each of its transactions; it
	// overrides one given in the URL or set on the role). Default 60s;
	// negative leaves the URL's, the role's or the server's setting.
	// Migrations run without a timeout.
	StatementTimeout time.Duration
	// Writers is the number of group-commit transactions that may be in
	// flight at once. Default 2.
	Writers int
	// MaxBatch caps how many Publish and Record calls share one transaction.
	// Default 256.
	MaxBatch int
	// MaxBatchRows stops adding calls to a transaction once it holds this
	// many events, deliveries and outcomes. Default 40,000.
	MaxBatchRows int
	// LargeRows makes a Publish of more rows (events and deliveries) a
	// large one: it is written in a transaction of its own, never with
	// other calls, and only by a writer other than the first (the only
	// one, when Writers is 1), so that the first is always free for the
	// other calls: a publish never waits for another's fan-out to commit.
	// Large publishes wait for each other in arrival order. Default 1,000.
	LargeRows int
	// QueueSize is the capacity of the group-commit queue; callers block (or
	// give up with their context) while it is full. Default 4096.
	QueueSize int
	// OnQueued, when set, is called with the IDs of subscriptions whose
	// deliveries became receivable, or changed when they will be, on this
	// node or another: a Publish that wrote queued deliveries, a Record
	// that queued some (a deactivation's included), a Settle that released
	// some. This node's commits call it right after the commit, on the
	// goroutine of the store method that committed (Publish's, Record's,
	// Settle's caller's), each ID once per call; other nodes' commits reach it
	// through LISTEN, one ID per call, on the listener's goroutine (and so
	// do this node's, again: a change may be heard twice). It must not
	// block: hand the IDs to another goroutine. Notifications missed while
	// the listener reconnects are not replayed, so waiting consumers need a
	// timer of their own too (see changes.go).
	OnQueued func(subscriptionIDs []string)
	// MaxSubscriptionsPerAccount is the most subscriptions one account may
	// hold: CreateSubscription refuses one more with a
	// *store.SubscriptionLimitError. 0 (the default) sets no limit. Give
	// every node sharing a database the same one: each applies its own.
	MaxSubscriptionsPerAccount int
}

// Descriptors is how many file descriptors a Store opened with o holds
// at most: a connection for each of its pool's MaxConns, and the change
// feed's own.
func (o Options) Descriptors() int {
	o.setDefaults()
	return o.MaxConns + 1
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Writers <= 0 {
		o.Writers = defaultWriters
	}
	if o.MaxConns <= 0 {
		o.MaxConns = max(8, 2*runtime.GOMAXPROCS(0))
	}
	o.MaxConns = max(o.MaxConns, o.Writers+2)
	if o.StatementTimeout == 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.MaxBatchRows <= 0 {
		o.MaxBatchRows = 40_000
	}
	if o.LargeRows <= 0 {
		o.LargeRows = 1000
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
}

// backend is what this package still implements of store.Store itself
// (see internal/store/engine), and the database it opens.
type backend struct {
	pool  *pgxpool.Pool
	log   *slog.Logger
	clock clock.Clock
	opts  Options
	key   endpoint.Key // the schema's, read at Open

	// txOpts begins every transaction but the engine's: BEGIN and SET
	// LOCAL statement_timeout in one query (see the package comment);
	// beginStmts begin the engine's (pgTx sends them with its first
	// statement): the same, and customPlans.
	txOpts     pgx.TxOptions
	beginStmts []string
	// snapOpts begins a read-only REPEATABLE READ transaction: its queries
	// read one snapshot. listOpts begins readPage's: the same, with every
	// query planned for its arguments (see readPage). seekOpts begins
	// CountBacklog's: the same, planned without table scans, bitmaps or
	// sorts (indexSeeksOnly).
	snapOpts pgx.TxOptions
	listOpts pgx.TxOptions
	seekOpts pgx.TxOptions
	// notify names this store's schema on the change channel (see
	// changes.go); feed tells the process of other nodes' changes.
	schema string
	feed   *changeFeed

	closed atomic.Bool
	// retried counts claims run again after a conflict (claim.go).
	retried atomic.Int64

	// claimStep, set by tests only (before the first claim), is called at
	// the steps of a claim that leased keyed deliveries (engine.ClaimHook), in
	// the claim's goroutine: a test holds a claim there.
	claimStep func(step string)
}

// openBackend is Open's backend.
func openBackend(ctx context.Context, url string, opts Options) (_ *backend, err error) {
	opts.setDefaults()
	cfg, err := poolConfig(url, opts)
	if err != nil {
		return nil, err
	}
	if err := migrateConfig(ctx, cfg.ConnConfig, opts.Logger); err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	snapBegin := strings.Replace(beginSQL(opts.StatementTimeout), readCommitted, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 1)
	s := &backend{
		pool:       pool,
		log:        opts.Logger,
		clock:      opts.Clock,
		opts:       opts,
		txOpts:     pgx.TxOptions{BeginQuery: beginSQL(opts.StatementTimeout)},
		beginStmts: append(beginStatements(opts.StatementTimeout), customPlans),
		snapOpts:   pgx.TxOptions{BeginQuery: snapBegin},
		listOpts:   pgx.TxOptions{BeginQuery: snapBegin + "; " + customPlans},
		seekOpts:   pgx.TxOptions{BeginQuery: snapBegin + "; " + indexSeeksOnly},
	}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&s.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: read the current schema: %w", err)
	}
	var key []byte
	if err := pool.QueryRow(ctx, sqlrow.EndpointKeySQL).Scan(&key); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: read the endpoint key: %w", err)
	}
	if s.key, err = endpoint.KeyFrom(key); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	s.feed = startChangeFeed(cfg.ConnConfig.Copy(), s.schema, opts.OnQueued, opts.Logger)
	return s, nil
}

// poolConfig parses url and applies opts (with defaults set) to the pool's
// configuration, with DefaultConnectTimeout unless the URL sets
// connect_timeout. The connections' start-up parameters are the URL's (pgx
// sends its unknown query parameters, such as search_path, as such) plus
// application_name=herald unless the URL names one; nothing else, so that a
// bouncer accepts them: the statement timeout is set per transaction.
func poolConfig(url string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	cfg.MaxConns = int32(opts.MaxConns)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	rp := cfg.ConnConfig.RuntimeParams
	if _, ok := rp["application_name"]; !ok {
		rp["application_name"] = "herald"
	}
	return cfg, nil
}

// beginSQL returns the query that begins each of the store's transactions
// but the engine's (pgTx): beginStatements sent together as one
// simple-protocol query (pgx sends a query without arguments so), in one
// round trip.
func beginSQL(timeout time.Duration) string {
	return strings.Join(beginStatements(timeout), "; ")
}

// beginStatements are the statements that begin a read-write
// transaction: BEGIN and, for a positive timeout, SET LOCAL
// statement_timeout (whole milliseconds, at least 1).
func beginStatements(timeout time.Duration) []string {
	if timeout <= 0 {
		return []string{readCommitted}
	}
	return []string{readCommitted, "SET LOCAL statement_timeout = " + strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)}
}

// customPlans plans each statement of a transaction for its arguments
// and the tables as they are, never with a cached generic plan. The
// engine's transactions (tx.go) run with it: a generic plan is cached
// after a statement's fifth run, and one made while a table was nearly
// empty (a new deployment's first seconds; autovacuum analyses a table
// only about once a minute) joins the outcomes' rows to a sequential scan
// of deliveries, a plan whose cost grows with the table times the batch
// (seconds a statement at 40,000 deliveries). Planning costs each
// statement a fraction of a millisecond of the server's CPU. The lists'
// snapshots (listOpts) use it for the same reason.
const customPlans = "SET LOCAL plan_cache_mode = force_custom_plan"

// readCommitted begins the store's read-write transactions at READ
// COMMITTED whatever the server's default_transaction_isolation says: the
// store's statements are written for it (each statement reads its own
// snapshot; the ordering key check in engine/claims_keys.go depends on it).
const readCommitted = "BEGIN ISOLATION LEVEL READ COMMITTED"

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

// Pool returns the connection pool (for metrics and administration).
func (s *backend) Pool() *pgxpool.Pool { return s.pool }

// readTx runs fn in a read-only transaction begun with opts (snapOpts or
// listOpts).
func (s *backend) readTx(ctx context.Context, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.err(pgx.BeginTxFunc(ctx, s.pool, opts, fn))
}

// ping reports whether the store can serve requests: ErrClosed after Close,
// else whether a connection answers.
func (s *backend) ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.err(s.pool.Ping(ctx))
}

// Close closes the pool (waiting for calls in progress), once the
// engine's writers have stopped (engine.Store.Close). Later calls return
// store.ErrClosed; Close itself may be called again and returns nil.
func (s *backend) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.feed.stop()
	s.pool.Close()
	return nil
}

// checkOpen returns ErrClosed after Close.
func (s *backend) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// err turns the errors of a pool closed under a running call into
// ErrClosed, and marks those of a server away store.ErrUnavailable
// (unavailable.go).
func (s *backend) err(err error) error {
	if err != nil && s.closed.Load() && !errors.Is(err, pgx.ErrNoRows) && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("%w (%v)", store.ErrClosed, err)
	}
	return unavailable(err)
}

// tx runs fn in a transaction on the pool, begun with the statement timeout
// in force, and commits it if fn returns nil (else rolls it back and returns
// fn's error). It does not retry. Every statement of the store runs in such
// a transaction (the writers begin theirs the same way): a statement run on
// the pool outside one would run without the timeout. Its error is
// classified (unavailable.go).
func (s *backend) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return unavailable(pgx.BeginTxFunc(ctx, s.pool, s.txOpts, fn))
}

const maxRetries = 8

// retryable reports whether err is a transient conflict between
// transactions (the whole transaction was rolled back and may run again).
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") // serialization_failure, deadlock_detected
}

func backoff(try int) {
	time.Sleep(time.Duration(1+try*try) * time.Millisecond)
}
