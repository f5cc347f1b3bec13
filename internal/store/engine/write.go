package engine

import (
	"context"

	"github.com/herald-events/herald/internal/store/driver"
)

// exec runs one statement in a write transaction of its own.
func (s *Store) exec(ctx context.Context, q driver.Query, args ...any) error {
	return s.write(ctx, func(x driver.Executor) error {
		_, err := x.Exec(ctx, q, args...)
		return err
	})
}

// orEmpty is b, or an empty slice for nil: a nil []byte is bound as NULL,
// which matches no key (and NOT NULL refuses).
func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// write runs fn in a write transaction and commits it when fn returns
// nil. fn may run more than once (a transaction run again after a
// conflict, or a batch run again without a failed request), so it must set
// its results anew on every run. On an Exclusive driver (SQLite) fn is a
// request of the writer's group commit (writer.go); else it runs in a
// transaction of its own on the caller's goroutine, again (a few times)
// after a conflict with another transaction.
func (s *Store) write(ctx context.Context, fn func(x driver.Executor) error) error {
	if s.w.gc.Exclusive {
		return s.w.write(ctx, &request{fn: fn, rows: 1})
	}
	if err := s.w.checkOpen(); err != nil {
		return err
	}
	for try := 0; ; try++ {
		err := s.tx(ctx, fn)
		if err == nil || try >= maxRetries || !s.retryable(err) {
			return s.drv.WriteErr(err)
		}
		s.w.retried.Add(1)
		backoff(try)
	}
}

// tx runs fn in a transaction of its own and commits it, or rolls it back
// and returns fn's error.
func (s *Store) tx(ctx context.Context, fn func(x driver.Executor) error) error {
	tx, err := s.drv.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(context.Background()); rerr != nil {
			s.log.Warn("rollback failed", "err", rerr)
		}
		return err
	}
	return tx.Commit(ctx)
}

// Write runs fn in a write transaction as the engine's own writes do
// (write): for a driver's writes of its own (SQLite's probe of a full
// disk).
func (s *Store) Write(ctx context.Context, fn func(x driver.Executor) error) error {
	return s.write(ctx, fn)
}
