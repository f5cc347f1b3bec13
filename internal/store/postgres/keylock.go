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
	for _, st := range stmts {
		text, err := queries.SQL(st.Query)
		if err != nil {
			return err
		}
		b.Queue(text, bind(st.Args)...)
	}
	res := t.tx.SendBatch(ctx, b)
	for _, st := range stmts {
		if err := eachResult(res, st); err != nil {
			_ = res.Close()
			return err
		}
	}
	return res.Close()
}

// eachResult reads the next result of a batch, st's rows.
func eachResult(res pgx.BatchResults, st engine.Statement) error {
	if st.Each == nil {
		_, err := res.Exec()
		return err
	}
	rows, err := res.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := st.Each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ClaimStep implements engine.ClaimHook: it calls the test's claimStep
// hook, if any, at step (engine.ClaimLeasedKeys, engine.ClaimKeysHeld).
func (d pgDriver) ClaimStep(step string) {
	if d.b.claimStep != nil {
		d.b.claimStep(step)
	}
}
