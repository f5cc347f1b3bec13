package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/herald-events/herald/internal/store"
)

// The writer is the only goroutine that writes to the database. Every write
// method of Store becomes a request on a bounded queue; the writer takes the
// first waiting request, then every other one already queued (up to
// Options.MaxBatch), runs them all in one transaction and commits once, so
// one fsync serves the whole batch (group commit).
// Each request runs inside its own SAVEPOINT: a request that fails is rolled
// back alone and answered with its error while the rest of the batch commits.
// A failure that aborts the whole transaction (SQLite does that on I/O
// errors, a full disk or lack of memory) fails the request that hit it, and
// the others run again in a new transaction.
//
// Callers wait for their request to be answered; the answer comes only after
// COMMIT returns, which with synchronous=FULL means the WAL is on disk.

// request is one write: fn runs on the writer goroutine inside the batch
// transaction. fn must keep its results in variables it (re)assigns on every
// run, since it may run twice when a batch is retried, and must close every
// *sql.Rows it opens before returning.
type request struct {
	fn   func(w *writer) error
	err  error
	done chan struct{}
}

type writer struct {
	conn     *sql.Conn
	log      *slog.Logger
	reqs     chan *request
	maxBatch int
	exited   chan struct{}
	stmts    map[string]*sql.Stmt // prepared on conn; used by the writer goroutine only
	// catalogVersion caches the catalog version within one transaction
	// (0: not read yet); see currentCatalog.
	catalogVersion int64

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

// exec runs a statement on the write connection.
func (w *writer) exec(query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(bg, args...)
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
	st, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(bg, args...)
}

// row runs a query expected to return at most one row.
func (w *writer) row(query string, args ...any) scanner {
	st, err := w.stmt(query)
	if err != nil {
		return row{err: err}
	}
	return row{r: st.QueryRowContext(bg, args...)}
}

// scanRow runs a query expected to return at most one row and scans it;
// sql.ErrNoRows when there is none.
func (w *writer) scanRow(query string, args []any, dest ...any) error {
	st, err := w.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(bg, args...).Scan(dest...)
}

func (w *writer) run() {
	defer close(w.exited)
	batch := make([]*request, 0, w.maxBatch)
	for r := range w.reqs {
		batch = append(batch[:0], r)
	fill:
		for len(batch) < w.maxBatch {
			select {
			case r, ok := <-w.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		for todo := batch; len(todo) > 0; {
			todo = w.commit(todo)
		}
		clear(batch) // let the answered requests be collected
	}
	for _, st := range w.stmts {
		_ = st.Close()
	}
}

// commit runs batch in one transaction and answers every request it settles.
// It returns the requests that must run again in a new transaction because
// another request's failure aborted this one.
func (w *writer) commit(batch []*request) []*request {
	w.catalogVersion = 0
	if _, err := w.exec("BEGIN IMMEDIATE"); err != nil {
		w.answerAll(batch, fmt.Errorf("begin: %w", err))
		return nil
	}
	if len(batch) == 1 {
		// No savepoint needed: the transaction is the request's.
		r := batch[0]
		if r.err = w.call(r); r.err != nil {
			w.rollback()
			w.served.Add(1)
			close(r.done)
			return nil
		}
		if _, err := w.exec("COMMIT"); err != nil {
			w.rollback()
			r.err = fmt.Errorf("commit: %w", err)
		} else {
			w.commits.Add(1)
		}
		w.served.Add(1)
		close(r.done)
		return nil
	}

	live := batch[:0:0] // requests whose writes are in the transaction
	for i, r := range batch {
		var err error
		if _, err = w.exec("SAVEPOINT req"); err != nil {
			r.err = fmt.Errorf("savepoint: %w", err)
		} else if r.err = w.call(r); r.err == nil {
			if _, err = w.exec("RELEASE req"); err == nil {
				live = append(live, r)
				continue
			}
			r.err = fmt.Errorf("release savepoint: %w", err)
		} else if _, err = w.rollbackTo(); err == nil {
			if _, err = w.exec("RELEASE req"); err == nil {
				w.served.Add(1)
				close(r.done) // failed alone; the rest of the batch goes on
				continue
			}
		}
		// The transaction is no longer usable (SQLite rolls it back by
		// itself on a full disk, an I/O error or lack of memory): answer r,
		// and run every other request of the batch again in a new one. Each
		// round settles at least r, so this ends.
		again := append(live, batch[i+1:]...)
		w.log.Warn("write batch aborted; retrying the other requests", "err", r.err, "retrying", len(again))
		w.rollback()
		w.served.Add(1)
		close(r.done)
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

// call runs r.fn, turning a panic into an error so that one bad request
// cannot stop the writer and strand every caller.
func (w *writer) call(r *request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("panic in store write", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("store write panicked: %v", p)
		}
	}()
	return r.fn(w)
}

// rollbackTo undoes the current request's writes (its savepoint); the
// catalog version it may have advanced is read again when next needed.
func (w *writer) rollbackTo() (sql.Result, error) {
	w.catalogVersion = 0
	return w.exec("ROLLBACK TO req")
}

func (w *writer) rollback() {
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
func (s *Store) write(ctx context.Context, fn func(w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{fn: fn, done: make(chan struct{})}
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
	return r.err
}

func isNoTransaction(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no transaction is active")
}

var errNoRows = sql.ErrNoRows

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }
