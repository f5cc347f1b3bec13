package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store/engine"
)

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

// ClaimStep implements engine.ClaimHook: it calls the test's claimStep
// hook, if any, at step (engine.ClaimLeasedKeys, engine.ClaimKeysHeld).
func (d pgDriver) ClaimStep(step string) {
	if d.b.claimStep != nil {
		d.b.claimStep(step)
	}
}
