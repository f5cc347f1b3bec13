package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
)

// The writer is the only goroutine that writes to the database. Every write
// method of Store becomes a request on a bounded queue; the writer takes
// every request already queued, forms a batch of them (up to
// Options.MaxBatch requests and Options.MaxTxRows rows), runs it in one
// transaction and commits once, so one fsync serves the whole batch (group
// commit).
//
// Accounts take turns (fair.go): the requests taken off the queue wait in
// one line per account (a Publish in its events' account, every other
// request in a line of its own), and a batch takes one request from each
// line in turn, so one account's many publishes cannot fill the batches
// another account's publish waits for. A Publish of more than MaxTxRows
// rows is written in steps of its own transactions (staged.go), one step
// after each batch, its events made visible only by the last: a publish
// that waits behind another account's fan-out waits for one step, not for
// the whole fan-out.
// Requests run one after another in the transaction with no savepoint of
// their own: a savepoint makes SQLite copy every page a request touches to
// a sub-journal, which cost about a sixth of the writer's time. A request
// that fails before running any write statement (the common failures: a
// stale catalog, a missing row) is answered with its error and the batch
// goes on. A request that fails after a write statement ran (a constraint,
// I/O errors, a full disk, lack of memory) cannot be undone alone: the
// transaction is rolled back, that request is answered with its error, and
// every other request of the batch runs again in a new transaction. Each
// such round settles at least one request, so a batch always ends.
//
// Callers wait for their request to be answered; the answer comes only after
// COMMIT returns, which with synchronous=FULL means the WAL is on disk.

// request is one write: fn runs on the writer goroutine inside the batch
// transaction. fn must keep its results in variables it (re)assigns on every
// run, since it may run twice when a batch is retried, and must close every
// *sql.Rows it opens before returning.
type request struct {
	fn  func(w *writer) error
	pub *publishReq // set on a Publish's request (fn is pub.run): see commit
	// staged is set on a Publish too large for one transaction: the writer
	// writes it in steps (staged.go) rather than in a batch.
	staged bool
	// account is the line the request waits in (fair.go): a Publish's
	// events' account, "" for every other request; rows what it writes
	// towards a batch's MaxTxRows (a Publish's events and deliveries, 1
	// for others).
	account string
	rows    int
	err     error
	done    chan struct{}
}

type writer struct {
	conn     *sql.Conn
	log      *slog.Logger
	reqs     chan *request
	maxBatch int
	// maxTxRows bounds the rows of a batch's publishes and of a staged
	// publish's step (Options.MaxTxRows).
	maxTxRows int
	// waiting holds the requests taken off reqs, not run yet: at most
	// cap(reqs) (fair.go); staged the staged publishes in progress.
	waiting lines[*request]
	staged  lines[*stagedPublish]
	exited  chan struct{}
	stmts   map[string]*sql.Stmt   // prepared on conn; used by the writer goroutine only
	execs   map[string]driver.Stmt // exec's, prepared on conn's driver connection (see exec)
	named   []driver.NamedValue    // exec's arguments, reused
	writes  map[string]bool        // queries that may change rows (see isWrite)
	values  map[valuesKey]string   // multi-row statement texts (see valuesSQL)
	// wrote is set when the current request runs a statement that may
	// change rows; a request that fails with wrote set cannot be undone
	// alone (see commit).
	wrote bool
	// catalogVersion caches the catalog version within one transaction
	// (0: not read yet); see currentCatalog.
	catalogVersion int64
	// lastEventSeq caches the largest event seq within one transaction
	// (-1: not read yet); see insertEvents.
	lastEventSeq int64
	// unmerged makes the next transaction run every Publish request on its
	// own (see commit).
	unmerged bool

	// signals are the store's TestSignals; holdAfterStep (tests only),
	// when positive, makes a staged publish wait after its holdAfterStep-th
	// committed step until another request is queued, and that request is
	// then written before the publish's next step (see step).
	signals       *Signals
	holdAfterStep int

	commits atomic.Int64 // transactions committed (for tests and Stats)
	served  atomic.Int64 // requests answered
}

// bg is the context of every statement the writer runs: once a request is
// queued it is committed whatever happens to its caller.
var bg = context.Background()

// stmt returns the statement for query, prepared once on the write
// connection and reused for the life of the store.
func (w *writer) stmt(query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(bg, query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", firstLine(query), err)
	}
	w.stmts[query] = st
	return st, nil
}

// valuesSQL returns prefix (a statement ending in "VALUES ") followed by
// rows groups of params parameters each, then suffix; the texts are kept
// per writer, one per statement and row count.
func (w *writer) valuesSQL(prefix string, params, rows int, suffix string) string {
	k := valuesKey{prefix, suffix, rows}
	if q, ok := w.values[k]; ok {
		return q
	}
	var b strings.Builder
	b.WriteString(prefix)
	group := "(" + strings.Repeat("?, ", params-1) + "?)"
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(group)
	}
	b.WriteString(suffix)
	q := b.String()
	w.values[k] = q
	return q
}

// valuesKey names a statement text of valuesSQL.
type valuesKey struct {
	prefix, suffix string
	rows           int
}

// isWrite reports whether query may change rows: every statement but a
// plain SELECT (a WITH … may end in an INSERT, UPDATE or DELETE). The
// transaction statements the writer itself runs count too, which does not
// matter: they run outside requests.
func isWrite(query string) bool {
	q := strings.TrimLeft(query, " \t\n")
	return len(q) < 6 || !strings.EqualFold(q[:6], "SELECT")
}

// stmtFor returns the statement for query and notes in w.wrote whether it
// may change rows.
func (w *writer) stmtFor(query string) (*sql.Stmt, error) {
	st, err := w.stmt(query)
	if err == nil {
		w.noteWrite(query)
	}
	return st, err
}

// noteWrite sets w.wrote when query may change rows (isWrite, worked out
// once per query).
func (w *writer) noteWrite(query string) {
	write, ok := w.writes[query]
	if !ok {
		write = isWrite(query)
		w.writes[query] = write
	}
	if write {
		w.wrote = true
	}
}

// exec runs a statement on the write connection. It goes to the driver
// directly (sql.Conn.Raw), with a statement prepared there once and its
// arguments converted into one reused slice: through database/sql each
// call allocated a driver.NamedValue per argument (a multi-row INSERT has
// hundreds), about a tenth of the server's allocations under load. The
// arguments are converted as database/sql converts them
// (driver.DefaultParameterConverter), ints without reflection.
func (w *writer) exec(query string, args ...any) (sql.Result, error) {
	w.noteWrite(query)
	var res driver.Result
	err := w.conn.Raw(func(dc any) error {
		st, err := w.execStmt(dc, query)
		if err != nil {
			return err
		}
		if err := w.namedValues(args); err != nil {
			return err
		}
		res, err = st.(driver.StmtExecContext).ExecContext(bg, w.named)
		clear(w.named) // let the arguments be collected
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// execStmt returns exec's statement for query, prepared on the driver
// connection dc once. Call it inside conn.Raw only.
func (w *writer) execStmt(dc any, query string) (driver.Stmt, error) {
	if st, ok := w.execs[query]; ok {
		return st, nil
	}
	st, err := dc.(driver.ConnPrepareContext).PrepareContext(bg, query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", firstLine(query), err)
	}
	w.execs[query] = st
	return st, nil
}

// namedValues converts args into w.named.
func (w *writer) namedValues(args []any) error {
	w.named = w.named[:0]
	for i, a := range args {
		var v driver.Value
		switch x := a.(type) {
		case string, int64, []byte, nil, bool, float64:
			v = x
		case int:
			v = int64(x)
		default:
			var err error
			if v, err = driver.DefaultParameterConverter.ConvertValue(a); err != nil {
				return fmt.Errorf("argument %d: %w", i+1, err)
			}
		}
		w.named = append(w.named, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return nil
}

// execN runs a statement and returns the number of rows it changed.
func (w *writer) execN(query string, args ...any) (int64, error) {
	res, err := w.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs a query on the write connection (reads inside the batch
// transaction see the batch's own writes).
func (w *writer) query(query string, args ...any) (*sql.Rows, error) {
	st, err := w.stmtFor(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(bg, args...)
}

// row runs a query expected to return at most one row.
func (w *writer) row(query string, args ...any) scanner {
	st, err := w.stmtFor(query)
	if err != nil {
		return row{err: err}
	}
	return row{r: st.QueryRowContext(bg, args...)}
}

// scanRow runs a query expected to return at most one row and scans it;
// sql.ErrNoRows when there is none.
func (w *writer) scanRow(query string, args []any, dest ...any) error {
	st, err := w.stmtFor(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(bg, args...).Scan(dest...)
}

// run serves requests until reqs is closed and every request taken is
// answered. Each round it takes what is queued (take), commits one batch
// of the waiting requests, then runs one step of a staged publish, so a
// request never waits for more than the batch and the step before its own
// batch.
func (w *writer) run() {
	defer close(w.exited)
	batch := make([]*request, 0, w.maxBatch)
	open := true
	for open || w.waiting.n > 0 || w.staged.n > 0 {
		if w.waiting.n == 0 && w.staged.n == 0 {
			r, ok := <-w.reqs // nothing to do: wait
			if !ok {
				open = false
				continue
			}
			w.add(r)
		}
		open = w.take(open)
		if w.waiting.n > 0 {
			batch = w.nextBatch(batch[:0])
			for todo := batch; len(todo) > 0; {
				todo = w.commit(todo)
			}
			clear(batch) // let the answered requests be collected
		}
		if w.staged.n > 0 {
			w.step()
		}
	}
	for _, st := range w.stmts {
		_ = st.Close()
	}
	_ = w.conn.Raw(func(any) error {
		for _, st := range w.execs {
			_ = st.Close()
		}
		return nil
	})
}

// commit runs batch in one transaction and answers every request it settles.
// It returns the requests that must run again in a new transaction because
// a request that had written failed and the transaction was rolled back.
//
// Publish requests that follow one another in the batch are written
// together (writer.publish): each one's guard first (one that fails is
// answered alone, having written nothing), then all their events and
// deliveries in shared multi-row INSERTs, so that publishes of one event
// each cost a few statements per batch rather than two each. When such a
// merged write fails, which of its requests caused it is not known: the
// transaction is rolled back and the whole batch runs again in a new one
// with every Publish on its own, where the failing request is found and
// answered as any other.
func (w *writer) commit(batch []*request) []*request {
	w.catalogVersion, w.lastEventSeq = 0, -1
	merge := !w.unmerged
	w.unmerged = false
	if _, err := w.exec("BEGIN IMMEDIATE"); err != nil {
		w.answerAll(batch, fmt.Errorf("begin: %w", err))
		return nil
	}
	live := batch[:0:0] // requests whose writes are in the transaction
	for i := 0; i < len(batch); i++ {
		if n := publishRun(batch[i:]); merge && n > 1 {
			ok, err := w.publishMerged(batch[i : i+n])
			if err == nil {
				live = append(live, ok...)
				i += n - 1
				continue
			}
			again := append(live, ok...)
			again = append(again, batch[i+n:]...)
			w.log.Warn("merged publishes failed; retrying each on its own", "err", err, "retrying", len(again))
			w.rollback()
			w.unmerged = true
			return again
		}
		r := batch[i]
		w.wrote = false
		if r.err = w.call(r); r.err == nil {
			live = append(live, r)
			continue
		}
		if !w.wrote {
			w.answer(r) // failed before writing: nothing to undo
			continue
		}
		// r's writes cannot be undone alone: roll back, answer r, and run
		// every other request of the batch again in a new transaction.
		again := append(live, batch[i+1:]...)
		if len(again) > 0 {
			w.log.Warn("write batch rolled back for a failed request; retrying the others", "err", r.err, "retrying", len(again))
		}
		w.rollback()
		w.answer(r)
		return again
	}
	if _, err := w.exec("COMMIT"); err != nil {
		w.rollback()
		w.answerAll(live, fmt.Errorf("commit: %w", err))
		return nil
	}
	w.commits.Add(1)
	w.answerAll(live, nil)
	return nil
}

// publishRun is how many requests at the start of batch are Publish
// requests.
func publishRun(batch []*request) int {
	n := 0
	for n < len(batch) && batch[n].pub != nil {
		n++
	}
	return n
}

// publishMerged writes a run of Publish requests together (see commit):
// it answers those whose guard fails and returns the others, whose writes
// are in the transaction unless err is set.
func (w *writer) publishMerged(run []*request) (ok []*request, err error) {
	ps := make([]*publishReq, 0, len(run))
	for _, r := range run {
		w.wrote = false
		if r.err = w.safely(r.pub.guard); r.err != nil {
			w.answer(r) // a guard only reads: nothing to undo
			continue
		}
		ok, ps = append(ok, r), append(ps, r.pub)
	}
	if len(ps) == 0 {
		return ok, nil
	}
	return ok, w.safely(func(w *writer) error { return w.publish(ps) })
}

// answer answers r with the error it holds.
func (w *writer) answer(r *request) {
	w.served.Add(1)
	close(r.done)
}

// call runs r.fn, turning a panic into an error so that one bad request
// cannot stop the writer and strand every caller.
func (w *writer) call(r *request) error { return w.safely(r.fn) }

// safely runs fn, turning a panic into an error (see call).
func (w *writer) safely(fn func(w *writer) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("panic in store write", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("store write panicked: %v", p)
		}
	}()
	return fn(w)
}

func (w *writer) rollback() {
	w.catalogVersion, w.lastEventSeq = 0, -1
	if _, err := w.exec("ROLLBACK"); err != nil && !isNoTransaction(err) {
		w.log.Warn("rollback failed", "err", err)
	}
}

func (w *writer) answerAll(rs []*request, err error) {
	w.served.Add(int64(len(rs)))
	for _, r := range rs {
		if err != nil {
			r.err = err
		}
		close(r.done)
	}
}

// write queues fn for the writer and waits for its commit. It gives up with
// ctx's error only while waiting for room in the queue: once queued, fn runs
// and is committed (or fails) whatever happens to ctx, and write waits for
// that answer.
func (s *backend) write(ctx context.Context, fn func(w *writer) error) error {
	return s.writeRequest(ctx, &request{fn: fn, rows: 1, done: make(chan struct{})})
}

// writePublish queues a Publish for the writer as write does, as a request
// the writer may write together with the Publish requests next to it in
// its batch (see commit), or in steps of its own when it has more than
// Options.MaxTxRows rows (staged.go).
func (s *backend) writePublish(ctx context.Context, p *publishReq) error {
	rows := len(p.events)
	for i := range p.events {
		rows += len(p.events[i].Deliveries)
	}
	return s.writeRequest(ctx, &request{fn: p.run, pub: p, account: account.OrDefault(p.events[0].AccountID),
		rows: rows, staged: rows > s.w.maxTxRows, done: make(chan struct{})})
}

// writeRequest queues r and waits for its answer (see write), classified
// (unavailable.go): a full disk or a failing file is store.ErrUnavailable.
func (s *backend) writeRequest(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closed.Load() {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	select {
	case s.w.reqs <- r:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	<-r.done
	err := unavailable(r.err)
	s.noteWrite(err)
	return err
}

func isNoTransaction(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no transaction is active")
}

var errNoRows = sql.ErrNoRows

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }
