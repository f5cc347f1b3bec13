package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// The delivery rollups are written by the record statements (writer.go)
// and acknowledgeSQL (queue.go); these read and prune them.
var (
	// statsReadSQL adds rollups up per step ($1 milliseconds) from $2 to
	// $3, of subscription $4 and endpoint $5 when not empty: those of
	// account $6 (one range of delivery_stats_account), or of every
	// account when $6 is empty (one range of the primary key).
	statsReadSQL = `SELECT minute / $1 * $1 AS at, ` + sqlrow.StatsSums + `
FROM delivery_stats
WHERE account_id = $6 AND ` + statsReadWhere
	statsReadAllSQL = `SELECT minute / $1 * $1 AS at, ` + sqlrow.StatsSums + `
FROM delivery_stats
WHERE $6 = '' AND ` + statsReadWhere
	statsReadWhere = `minute >= $2 AND minute < $3
	AND ($4 = '' OR subscription_id = $4) AND ($5 = '' OR endpoint_id = $5)
GROUP BY at ORDER BY at`
)

// deleteOldStatsSQL deletes at most $2 rollups of minutes before $1, the
// oldest first (a range of the primary key), each by its row address (a
// TID scan: no join the planner could make a scan of the table).
const deleteOldStatsSQL = `DELETE FROM delivery_stats WHERE ctid = ANY(ARRAY(
	SELECT ctid FROM delivery_stats WHERE minute < $1 ORDER BY minute LIMIT $2))`

// DeliveryStats implements store.StatsStore.
func (s *backend) DeliveryStats(ctx context.Context, q store.StatsQuery) ([]stats.Row, error) {
	query := statsReadSQL
	if q.AccountID == "" {
		query = statsReadAllSQL
	}
	var out []stats.Row
	err := s.readTx(ctx, s.snapOpts, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, q.Step.Milliseconds(), sqlrow.UnixMS(q.From), sqlrow.UnixMS(q.Until),
			q.SubscriptionID, q.EndpointID, q.AccountID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (stats.Row, error) { return sqlrow.ScanStats(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read delivery stats: %w", err)
	}
	return out, nil
}

// DeleteOldStats implements store.StatsStore in one statement.
func (s *backend) DeleteOldStats(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	tag, err := s.exec(ctx, deleteOldStatsSQL, sqlrow.UnixMS(before), limit)
	return int(tag.RowsAffected()), s.err(err)
}
