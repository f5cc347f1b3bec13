package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/engine"
)

// pgTx is a write transaction (driver.Tx) on the pool. Its BEGIN and SET
// LOCAL (beginStatements) are not sent alone: they go in one batch with
// the transaction's first statement or pipeline (pgx's Batch.BeginTx), so
// a transaction costs one round trip fewer than a pgx.Tx begun alone; one
// that runs no statement takes no connection and sends nothing. Commit or
// Rollback gives the connection back to the pool.
type pgTx struct {
	pool  *pgxpool.Pool
	begin []string // beginStatements: BEGIN first
	// tx is the transaction once its first batch was sent.
	tx     pgx.Tx
	writes int64
}

func (t *pgTx) Exec(ctx context.Context, q driver.Query, args ...any) (int64, error) {
	t.writes++
	if t.tx != nil {
		return txExec{t.tx}.Exec(ctx, q, args...)
	}
	text, err := queries.SQL(q)
	if err != nil {
		return 0, err
	}
	var n int64
	err = t.open(ctx, func(b *pgx.Batch) error {
		b.Queue(text, bind(args)...).Exec(func(tag pgconn.CommandTag) error {
			n = tag.RowsAffected()
			return nil
		})
		return nil
	})
	return n, err
}

func (t *pgTx) Query(ctx context.Context, q driver.Query, each func(driver.Row) error, args ...any) error {
	if t.tx != nil {
		t.writes++
		return txExec{t.tx}.Query(ctx, q, each, args...)
	}
	return t.Pipeline(ctx, engine.Statement{Query: q, Args: args, Each: each})
}

func (t *pgTx) QueryRow(ctx context.Context, q driver.Query, args ...any) driver.Row {
	if t.tx != nil {
		t.writes++
		return txExec{t.tx}.QueryRow(ctx, q, args...)
	}
	return firstRow{t, ctx, q, args}
}

// Pipeline implements engine.Pipeliner (txExec.Pipeline).
func (t *pgTx) Pipeline(ctx context.Context, stmts ...engine.Statement) error {
	if len(stmts) == 0 {
		return nil
	}
	t.writes++
	if t.tx != nil {
		return txExec{t.tx}.Pipeline(ctx, stmts...)
	}
	return t.open(ctx, func(b *pgx.Batch) error { return queue(b, stmts) })
}

// open begins the transaction in one batch with the statements add
// queues, and reads their results.
func (t *pgTx) open(ctx context.Context, add func(*pgx.Batch) error) error {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{BeginQuery: t.begin[0]})
	for _, s := range t.begin[1:] {
		b.Queue(s)
	}
	if err := add(b); err != nil {
		return err
	}
	res := t.pool.SendBatch(ctx, b)
	t.tx = res.Tx()
	return res.Close()
}

// firstRow is the row of a transaction's first statement, run when it is
// scanned.
type firstRow struct {
	t    *pgTx
	ctx  context.Context
	q    driver.Query
	args []any
}

func (r firstRow) Scan(dest ...any) error {
	found := false
	err := r.t.Pipeline(r.ctx, engine.Statement{Query: r.q, Args: r.args, Each: func(row driver.Row) error {
		if found {
			return nil
		}
		found = true
		return row.Scan(dest...)
	}})
	if err == nil && !found {
		return driver.ErrNoRows
	}
	return err
}

// Writes implements driver.Tx: every statement counts, since any failed
// one aborts a PostgreSQL transaction.
func (t *pgTx) Writes() int64 { return t.writes }

// Commit implements driver.Tx: an error PostgreSQL returned for the
// COMMIT (a deferred constraint), or a COMMIT answered ROLLBACK (the
// transaction had failed), means it rolled back; any other error (a lost
// connection) leaves the outcome unknown.
func (t *pgTx) Commit(ctx context.Context) error {
	if t.tx == nil {
		return nil // nothing was sent
	}
	err := t.tx.Commit(ctx)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) || errors.Is(err, pgx.ErrTxCommitRollback):
		return fmt.Errorf("%w: %w", driver.ErrRolledBack, err)
	case err != nil:
		return fmt.Errorf("outcome unknown: %w", err)
	}
	return nil
}

// Rollback implements driver.Tx; a transaction whose BEGIN never reached
// the server has nothing to roll back.
func (t *pgTx) Rollback(ctx context.Context) error {
	if t.tx == nil {
		return nil
	}
	if err := t.tx.Rollback(ctx); !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

// Pipeline implements engine.Pipeliner: the statements go in one batch
// (one round trip) and run in turn in the transaction, each on a snapshot
// of its own (READ COMMITTED), as a claim's key locks and re-check need
// (engine/claims_keys.go).
func (t txExec) Pipeline(ctx context.Context, stmts ...engine.Statement) error {
	b := &pgx.Batch{}
	if err := queue(b, stmts); err != nil {
		return err
	}
	return t.tx.SendBatch(ctx, b).Close()
}

// queue queues stmts on b, each statement's rows read by its Each.
func queue(b *pgx.Batch, stmts []engine.Statement) error {
	for _, st := range stmts {
		text, err := queries.SQL(st.Query)
		if err != nil {
			return err
		}
		qq := b.Queue(text, bind(st.Args)...)
		if each := st.Each; each != nil {
			qq.Query(func(rows pgx.Rows) error {
				for rows.Next() {
					if err := each(rows); err != nil {
						return err
					}
				}
				return rows.Err()
			})
		}
	}
	return nil
}
