package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// The delivery rollups (store.StatsStore). They are written with the
// outcomes that count, inside the delivery path's writes (still the
// drivers'); these read and prune them.
var (
	// qDeliveryStats adds rollups up per step ($1 milliseconds) from $2 to
	// $3, of subscription $4 and endpoint $5 when not empty, of account $6:
	// one range of delivery_stats_account. Each row is the step's start,
	// then the sums sqlrow.ScanStats reads.
	qDeliveryStats = query("DeliveryStats")
	// qDeliveryStatsAll is the same of every account ($6 is ''): one range
	// of the primary key.
	qDeliveryStatsAll = query("DeliveryStatsAll")
	// qDeleteOldStats deletes at most $2 rollups of minutes before $1, the
	// oldest first (a range of the primary key).
	qDeleteOldStats = query("DeleteOldStats")
)

// DeliveryStats implements store.StatsStore.
func (s *Store) DeliveryStats(ctx context.Context, q store.StatsQuery) ([]stats.Row, error) {
	stmt := qDeliveryStats
	if q.AccountID == "" {
		stmt = qDeliveryStatsAll
	}
	var out []stats.Row
	err := s.drv.Reader().Query(ctx, stmt, func(r driver.Row) error {
		row, err := sqlrow.ScanStats(r)
		if err == nil {
			out = append(out, row)
		}
		return err
	}, q.Step.Milliseconds(), sqlrow.UnixMS(q.From), sqlrow.UnixMS(q.Until), q.SubscriptionID, q.EndpointID, q.AccountID)
	if err != nil {
		return nil, fmt.Errorf("read delivery stats: %w", err)
	}
	return out, nil
}

// DeleteOldStats implements store.StatsStore in one statement.
func (s *Store) DeleteOldStats(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		n, err = x.Exec(ctx, qDeleteOldStats, sqlrow.UnixMS(before), limit)
		return err
	})
	return int(n), err
}
