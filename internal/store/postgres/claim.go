package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store/driver"
)

// retrying runs fn again after a deadlock or serialization failure.
func (s *backend) retrying(ctx context.Context, fn func() error) error {
	for try := 0; ; try++ {
		err := fn()
		if err == nil || try >= maxRetries || !retryable(err) || ctx.Err() != nil {
			return err
		}
		s.retried.Add(1)
		backoff(try)
	}
}

// indexSeeksOnly, run at the start of a transaction, makes its queries
// planned without table scans, bitmap scans or sorts, whatever the
// planner's statistics say (stale ones, on a cluster without autovacuum,
// estimate a few rows and prefer a bitmap scan and a sort of all of
// them): a query that orders its rows as an index does is then that
// index's scan, and its LIMIT ends the scan.
const indexSeeksOnly = `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off`

// SeekReader implements engine.SeekReader: each statement runs in a
// read-only transaction begun with indexSeeksOnly (seekOpts: set with the
// BEGIN, so at no extra round trip).
func (d pgDriver) SeekReader() driver.Executor { return seekExec{d.b} }

// seekExec runs each statement in a transaction of its own begun with
// seekOpts.
type seekExec struct{ b *backend }

func (r seekExec) Exec(_ context.Context, q driver.Query, _ ...any) (int64, error) {
	return 0, fmt.Errorf("store driver: %s: a write in a read-only transaction", q)
}

func (r seekExec) Query(ctx context.Context, q driver.Query, each func(driver.Row) error, args ...any) error {
	return r.b.readTx(ctx, r.b.seekOpts, func(tx pgx.Tx) error { return txExec{tx}.Query(ctx, q, each, args...) })
}

func (r seekExec) QueryRow(ctx context.Context, q driver.Query, args ...any) driver.Row {
	return seekRow{r, ctx, q, args}
}

// seekRow runs its statement when it is scanned.
type seekRow struct {
	r    seekExec
	ctx  context.Context
	q    driver.Query
	args []any
}

func (l seekRow) Scan(dest ...any) error {
	return l.r.b.readTx(l.ctx, l.r.b.seekOpts, func(tx pgx.Tx) error {
		return txExec{tx}.QueryRow(l.ctx, l.q, l.args...).Scan(dest...)
	})
}
