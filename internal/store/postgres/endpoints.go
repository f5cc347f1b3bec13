package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Every write of endpoints first takes the next endpoints version, locking
// the counter's row until it commits (so versions commit in order and an
// incremental reader misses none), and stores it on the rows it writes.
// The endpoints' own methods are the engine's
// (internal/store/engine/endpoints.go, whose BumpEndpoints statement does
// this and the notification in one); the subscription writes, which create
// endpoints, and the migrations still take a version here.
const bumpEndpointsSQL = `UPDATE counters SET value = value + 1 WHERE name = 'endpoints' RETURNING value`

// bumpEndpoints takes the next endpoints version in tx (locking the
// counter until tx ends) and tells the other nodes when tx commits.
func (s *backend) bumpEndpoints(ctx context.Context, tx pgx.Tx) (int64, error) {
	var v int64
	if err := tx.QueryRow(ctx, bumpEndpointsSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("advance the endpoints version: %w", err)
	}
	return v, s.notify(ctx, tx, changedEndpoints)
}
