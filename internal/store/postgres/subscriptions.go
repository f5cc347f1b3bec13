package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Subscriptions live in the engine (internal/store/engine/subscriptions.go,
// catalog.go, states.go); what remains here serves the writers' own
// transactions: a publish batch's catalog check, a Record batch's
// deactivation (states.go), a redrive's and a job's check that a
// subscription exists.
const (
	// bumpCatalogSQL advances the catalog version and locks its row until
	// the transaction ends (a deactivation). A publish batch reads the row
	// FOR SHARE (catalogShareSQL), so the two exclude each other.
	bumpCatalogSQL  = `UPDATE counters SET value = value + 1 WHERE name = 'catalog' RETURNING value`
	catalogShareSQL = `SELECT value FROM counters WHERE name = 'catalog' FOR SHARE`
	// catalogLockSQL takes the row lock a subscription write takes, without
	// advancing the version yet (a Record batch that may deactivate).
	catalogLockSQL = `SELECT value FROM counters WHERE name = 'catalog' FOR UPDATE`

	// subscriptionExistsSQL locks the row in share mode: a delete waits
	// until the caller's transaction ends, and so sees what it changed.
	subscriptionExistsSQL = `SELECT 1 FROM subscriptions WHERE id = $1 FOR SHARE`
)

// bumpCatalog advances the catalog version in tx (locking its row until tx
// ends), tells the other nodes when tx commits, and returns the version.
func (s *backend) bumpCatalog(ctx context.Context, tx pgx.Tx) (int64, error) {
	var v int64
	if err := tx.QueryRow(ctx, bumpCatalogSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("advance the catalog version: %w", err)
	}
	return v, s.notify(ctx, tx, changedCatalog)
}
