// Package sqlite is Herald's embedded store: store.Store on one SQLite file,
// through modernc.org/sqlite (pure Go, no cgo).
//
// # Durability
//
// The database runs in WAL mode with synchronous=FULL, so a commit returns
// only once the WAL is fsynced. Publish, Record and every other write return
// only after their own data is committed.
//
// A full disk or a failing file (SQLITE_FULL, SQLITE_IOERR, ...) fails the
// writes it meets as store.ErrUnavailable, having committed nothing of
// theirs; reads go on; Ping reports the store away until the disk has room
// and a small write commits again, and the same Store then works as before
// (unavailable.go).
//
// # Writes: one writer, group commit
//
// One goroutine, the engine's writer (internal/store/engine/writer.go),
// owns the single write connection (writeconn.go). Write methods queue a
// request on a bounded channel (Options.QueueSize) and wait; the writer runs
// every request already queued, up to Options.MaxBatch, in one transaction
// with one commit. A request that fails after writing rolls the
// transaction back and the others run again. Statements are prepared once
// on the write connection and reused. ModifyEndpoints, TakeProbe, TryLead, ExtendLeases
// and CreateFirstKey run on the writer too, which serialises them with every
// other write (that is their lock). Reads (Get*, List*, KeyByHash,
// AuthVersion, NextDue, DueEndpoints, CountPending, CountQueued) use a
// separate pool of query-only connections and never wait for the writer; in
// WAL mode they see the last committed state.
//
// # One process per file
//
// A database file belongs to one process at a time: Open takes an exclusive
// lock on "<path>.lock" (advisory flock on Unix) and fails while another Store
// holds it. Because of that, a lease in this store never expires by time: it
// lasts until Record, Release, Redeliver, DeleteSubscription or Redrive ends
// it, and Open clears every lease left by a previous run (that process is
// gone, so its in-memory work is void and at-least-once delivery requires the
// deliveries to be claimable again).
//
// # Queued deliveries and locks
//
// The locks consumers hold on queued deliveries (Receive, Settle) are
// different: they are rows that end at their time (lock_until), because
// their holders are outside this process. Open leaves them alone, so a
// consumer's lock outlives a restart and its token still settles the
// delivery. Receive and Settle run on the writer, which orders every lock
// (two receives never lock one delivery at once). Options.OnQueued tells
// the process when deliveries become receivable, so that it can wake
// consumers waiting for them.
//
// # Limits
//
// Times are kept to the millisecond (attempt durations to the microsecond,
// subscription timeouts to the millisecond); the instant of the Unix epoch
// itself reads back as the zero time. With 1,000,000 pending retries,
// ClaimDue, NextDue and DueEndpoints remain index seeks (plans are pinned by
// TestQueryPlans; see BenchmarkBacklog1M), while CountPending reads both lane
// indexes whole (about 50 ms). Receive, its NextAt and the queued list of
// an endpoint are index seeks too; CountQueued reads the queued deliveries'
// index whole. CountBacklog reads at most its limit of entries of each
// lane's and the queued deliveries' partial indexes (TestBacklogPlan);
// CountPendingOf a seek per endpoint into each lane's index, at most its
// limit of entries in all, and the pending leased deliveries
// (TestPendingOfPlan).
// DeleteSubscription, Redrive, ReactivateSubscription and a
// deactivation change all the rows they concern in one write, which holds
// the writer in proportion to their number. The database is never
// VACUUMed: Cleanup frees pages for reuse but the file does not shrink.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	storedriver "github.com/herald-events/herald/internal/store/driver"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// Logger receives warnings (aborted write batches, leases cleared at
	// Open). Nil discards them.
	Logger *slog.Logger
	// MaxBatch caps how many write requests share one transaction.
	// Default 512.
	MaxBatch int
	// QueueSize is the capacity of the write queue; writers block (or give up
	// with their context) while it is full. Default 4096.
	QueueSize int
	// ReadConns is the size of the read connection pool. Default
	// max(4, GOMAXPROCS).
	ReadConns int
	// BusyTimeout is how long a connection waits for a lock held by another
	// connection before failing. Default 5s.
	BusyTimeout time.Duration
	// CacheKiB is the page cache of the write connection in KiB; each read
	// connection gets a quarter of it. Default 32768 (32 MiB).
	CacheKiB int
	// OnQueued, when set, is called after a commit that made deliveries of
	// these subscriptions receivable, or changed when they will be: a
	// Publish that wrote queued deliveries, a Record that queued some
	// (the deliveries a deactivation queued included), a Settle that
	// released some. Each ID is given once per call. It is called on the
	// goroutine of the store method that committed, after the commit and
	// never while a lock of the store is held; it must not block (hand the
	// IDs to another goroutine), since the method's caller waits for it.
	OnQueued func(subscriptionIDs []string)
	// MaxTxRows bounds the rows (events and deliveries) of the publishes
	// one transaction writes: a batch takes no more Publish calls once the
	// next would pass it, and a Publish with more is written in steps of
	// at most this many, a batch of the other requests between two steps
	// (staged.go). So a publish waits for at most one step of another's
	// fan-out. Default 500.
	MaxTxRows int
	// Linger is the longest the writer, once busy, waits for more write
	// requests before it commits a batch of fewer than LingerBelow, and it
	// waits only while more keep arriving (internal/store/engine/linger.go):
	// fewer commits under a stream of small writes, no wait under a light
	// load. Default 1ms; negative: never. LingerBelow defaults to 16.
	Linger      time.Duration
	LingerBelow int
	// MaxSubscriptionsPerAccount is the most subscriptions one account may
	// hold: CreateSubscription refuses one more with a
	// *store.SubscriptionLimitError. 0 (the default) sets no limit.
	MaxSubscriptionsPerAccount int
}

// Descriptors is how many file descriptors a Store opened with o holds
// at most: the database, its WAL and its shared-memory index for the write
// connection and for each of the ReadConns read connections, and the lock
// file.
func (o Options) Descriptors() int {
	o.setDefaults()
	return 3*(1+o.ReadConns) + 1
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.ReadConns <= 0 {
		o.ReadConns = max(4, runtime.GOMAXPROCS(0))
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.CacheKiB <= 0 {
		o.CacheKiB = 32 << 10
	}
	if o.MaxTxRows <= 0 {
		o.MaxTxRows = 500
	}
	if o.Linger == 0 {
		o.Linger = time.Millisecond
	}
	if o.LingerBelow <= 0 {
		o.LingerBelow = 16
	}
}

// backend is what this package still implements of store.Store itself (see internal/store/engine), and the database it opens.
type backend struct {
	path     string
	log      *slog.Logger
	onQueued func([]string)
	maxSubs  int // Options.MaxSubscriptionsPerAccount

	opts    Options
	writeDB *sql.DB
	readDB  *sql.DB
	w       *writeConn
	// write runs a write of the engine's (engine.Store.Write): the probe
	// of a store marked away (unavailable.go).
	write func(ctx context.Context, fn func(x storedriver.Executor) error) error
	lock  *os.File
	key   endpoint.Key // the installation's, read at Open

	closed atomic.Bool
	// away holds the error of the last write that failed as
	// store.ErrUnavailable, nil since one committed (noteWrite).
	away atomic.Pointer[error]

	readMu    sync.Mutex
	readStmts map[string]*sql.Stmt
}

// openBackend opens (creating it and its parent directory if needed) the database
// at path, makes its directory and files private (see makePrivate),
// applies the embedded schema migrations, deletes what a publish the
// previous run did not finish wrote (staged.go) and clears every lease
// left by a previous run. Close releases it.
func openBackend(ctx context.Context, path string, opts Options) (_ *backend, err error) {
	opts.setDefaults()
	if path == "" || strings.Contains(path, "?") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("sqlite store: %q is not a plain file path", path)
	}
	if err := makePrivate(path); err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	s := &backend{path: path, opts: opts, log: opts.Logger, onQueued: opts.OnQueued, maxSubs: opts.MaxSubscriptionsPerAccount, readStmts: map[string]*sql.Stmt{}}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	if s.lock, err = lockFile(path + ".lock"); err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	if err := s.openWriter(ctx, opts); err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	if err := s.prepareFile(ctx); err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	if err := s.openReaders(ctx, opts); err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	return s, nil
}

// openWriter opens the write connection (WAL, synchronous=FULL: see the
// package comment).
func (s *backend) openWriter(ctx context.Context, opts Options) (err error) {
	s.writeDB, err = sql.Open("sqlite", dsn(s.path,
		fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()),
		"journal_mode(wal)",
		"synchronous(full)",
		"foreign_keys(off)",
		"temp_store(memory)",
		"journal_size_limit(67108864)",
		fmt.Sprintf("cache_size(-%d)", opts.CacheKiB),
	))
	if err != nil {
		return err
	}
	s.writeDB.SetMaxOpenConns(1)
	s.writeDB.SetMaxIdleConns(1)
	s.writeDB.SetConnMaxLifetime(0)
	s.writeDB.SetConnMaxIdleTime(0)
	conn, err := s.writeDB.Conn(ctx)
	if err != nil {
		return err
	}
	s.w = newWriteConn(conn)
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not WAL (is the file system local?)", mode)
	}
	return nil
}

// prepareFile readies the file on the write connection for this run: applies
// the schema migrations, reads the endpoint key, deletes what a publish
// the previous run did not finish wrote (staged.go) and clears the leases
// it left.
func (s *backend) prepareFile(ctx context.Context) (err error) {
	conn, path := s.w.conn, s.path
	from, to, err := runMigrations(ctx, conn)
	if err != nil {
		return err
	}
	if from != to {
		s.log.Info("sqlite schema migrated", "path", path, "from", from, "to", to)
	}
	if s.key, err = readEndpointKey(ctx, conn); err != nil {
		return err
	}
	unstaged, err := recoverStaged(ctx, conn)
	if err != nil {
		return fmt.Errorf("delete the deliveries of interrupted publishes: %w", err)
	}
	if unstaged > 0 {
		s.log.Info("deleted the deliveries of publishes the previous run did not finish", "path", path, "deliveries", unstaged)
	}
	res, err := conn.ExecContext(ctx, `UPDATE deliveries SET lease_owner = '', lease_until = 0 WHERE lease_until > 0`)
	if err != nil {
		return fmt.Errorf("clear leases: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		s.log.Info("cleared leases of the previous run", "path", path, "deliveries", n)
	}
	if _, err := conn.ExecContext(ctx, clearJobLeaseSQL); err != nil {
		return fmt.Errorf("clear job leases: %w", err)
	}
	return nil
}

// openReaders opens the pool of query-only read connections.
func (s *backend) openReaders(ctx context.Context, opts Options) (err error) {
	s.readDB, err = sql.Open("sqlite", dsn(s.path,
		fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()),
		"temp_store(memory)",
		fmt.Sprintf("cache_size(-%d)", max(opts.CacheKiB/4, 2048)),
		"query_only(1)",
	))
	if err != nil {
		return err
	}
	s.readDB.SetMaxOpenConns(opts.ReadConns)
	s.readDB.SetMaxIdleConns(opts.ReadConns)
	s.readDB.SetConnMaxIdleTime(0)
	return s.readDB.PingContext(ctx)
}

// makePrivate makes the database's directory and files its owner's alone
// (store.MakePrivate: the directory 0700, the files 0600): the directory,
// made if missing; the database, the files SQLite keeps beside it (-wal,
// -shm, -journal) and the lock file, when they exist; and the database
// file, made empty (which SQLite takes as a new database) when missing,
// since SQLite would create it 0644 and makes its -wal, -shm and -journal
// files with the database file's mode, whatever the umask.
func makePrivate(path string) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if err := store.MakePrivate(dir, base, base+"-wal", base+"-shm", base+"-journal", base+".lock"); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, store.PrivateFileMode)
	if err != nil {
		return err
	}
	return f.Close()
}

func dsn(path string, pragmas ...string) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return path + "?" + q.Encode()
}

// Stats describes the writer's work since Open.
type Stats struct {
	// Commits is the number of write transactions committed.
	Commits int64
	// Requests is the number of write calls answered (committed or failed).
	// Requests / Commits is the mean group-commit batch size.
	Requests int64
}

// Stats returns the writer's counters.
func (s *Store) Stats() Stats {
	st := s.Store.WriterStats()
	return Stats{Commits: st.Commits, Requests: st.Requests}
}

// Path returns the database file's path.
func (s *backend) Path() string { return s.path }

// ping reports whether the store can serve requests: ErrClosed after Close;
// after a write failed as store.ErrUnavailable (a full disk), whether a
// small write commits now (probe); else whether a read connection answers.
func (s *backend) ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if away := s.away.Load(); away != nil {
		return s.probe(ctx, *away)
	}
	var one int
	return s.readErr(s.readRow(ctx, `SELECT 1`).Scan(&one))
}

// Close closes the database, once the engine's writer has stopped
// (engine.Store.Close). Later calls return store.ErrClosed; Close itself
// may be called again and returns nil.
func (s *backend) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.release()
}

// release closes whatever Open got, in reverse order.
func (s *backend) release() error {
	var errs []error
	s.readMu.Lock()
	for _, st := range s.readStmts {
		errs = append(errs, st.Close())
	}
	s.readStmts = map[string]*sql.Stmt{}
	s.readMu.Unlock()
	if s.readDB != nil {
		errs = append(errs, s.readDB.Close())
	}
	if s.w != nil {
		s.w.close()
		errs = append(errs, s.w.conn.Close())
	}
	if s.writeDB != nil {
		errs = append(errs, s.writeDB.Close())
	}
	if s.lock != nil {
		errs = append(errs, unlockFile(s.lock))
	}
	return errors.Join(errs...)
}

// readStmt returns query prepared on the read pool, cached for reuse.
func (s *backend) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if st, ok := s.readStmts[query]; ok {
		return st, nil
	}
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	st, err := s.readDB.PrepareContext(ctx, query)
	if err != nil {
		return nil, s.readErr(fmt.Errorf("prepare %q: %w", firstLine(query), err))
	}
	s.readStmts[query] = st
	return st, nil
}

// readTx runs fn in a read-only transaction on the read pool: every query
// in it reads the same snapshot of the database.
func (s *backend) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	tx, err := s.readDB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.readErr(err)
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

// readQuery runs a query on the read pool.
func (s *backend) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	st, err := s.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	return rows, s.readErr(err)
}

// row is a single-row result whose Scan reports ErrClosed after Close.
type row struct {
	r   *sql.Row
	err error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.r.Scan(dest...)
}

func (s *backend) readRow(ctx context.Context, query string, args ...any) row {
	if s.closed.Load() {
		return row{err: store.ErrClosed}
	}
	st, err := s.readStmt(ctx, query)
	if err != nil {
		return row{err: err}
	}
	return row{r: st.QueryRowContext(ctx, args...)}
}

// readErr turns the errors of a pool closed under a running read into
// ErrClosed.
func (s *backend) readErr(err error) error {
	if err != nil && s.closed.Load() && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w (%v)", store.ErrClosed, err)
	}
	return unavailable(err)
}

func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.IndexByte(q, '\n'); i >= 0 {
		return q[:i] + " …"
	}
	return q
}
