package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	// statsInput (before the VALUES rows) and statsUpsertTail (after) add
	// the rollups of counted outcomes, given as (delivery ID, minute,
	// status, latency bucket or -1) rows, to delivery_stats: one row per
	// (minute, subscription, endpoint) of their deliveries, each read by
	// primary key (WHERE true: SQLite's upsert after a join needs it).
	statsInput   = `WITH v(id, minute, status, bucket) AS (VALUES `
	statsParams  = 4
	statsRowsSQL = `SELECT v.minute, d.account_id, d.subscription_id, d.endpoint_id, v.status, v.bucket
	FROM v JOIN deliveries AS d ON d.id = v.id`

	// statsReadSQL adds rollups up per step (?1 milliseconds) from ?2 to
	// ?3, of subscription ?4 and endpoint ?5 when not empty: those of
	// account ?6 (one range of delivery_stats_account), or of every
	// account (one range of the primary key).
	statsReadSQL = `SELECT minute / ?1 * ?1 AS at, %s
FROM delivery_stats %s minute >= ?2 AND minute < ?3
	AND (?4 = '' OR subscription_id = ?4) AND (?5 = '' OR endpoint_id = ?5)
GROUP BY at ORDER BY at`

	// deleteOldStatsSQL deletes at most ?2 rollups of minutes before ?1,
	// the oldest first (the primary key's order).
	deleteOldStatsSQL = `DELETE FROM delivery_stats WHERE (minute, subscription_id, endpoint_id) IN (
	SELECT minute, subscription_id, endpoint_id FROM delivery_stats WHERE minute < ?1 ORDER BY minute LIMIT ?2)`
)

var (
	statsUpsertTail = `)
INSERT INTO delivery_stats (` + sqlrow.StatsCols + `)
SELECT minute, account_id, subscription_id, endpoint_id, ` + sqlrow.StatsOutcomeAggs + `
FROM (` + statsRowsSQL + `) WHERE true
GROUP BY minute, account_id, subscription_id, endpoint_id` + sqlrow.StatsUpsert
	statsRead    = fmt.Sprintf(statsReadSQL, sqlrow.StatsSums, "INDEXED BY delivery_stats_account WHERE account_id = ?6 AND")
	statsReadAll = fmt.Sprintf(statsReadSQL, sqlrow.StatsSums, "WHERE ?6 = '' AND")
)

// statsOf appends to rows the rollup input of outcome o, whose state
// change applied (statsInput), if it counts (sqlrow.StatsCounted).
func statsOf(rows []any, o *store.Outcome) []any {
	if !sqlrow.StatsCounted(o) {
		return rows
	}
	return append(rows, o.Attempt.DeliveryID, sqlrow.StatsMinute(o), string(o.Status), sqlrow.StatsBucket(o))
}

// addStats adds the rollups of rows (statsParams values each, as statsOf
// makes them) in one statement per maxRowsPerInsert rows.
func (w *writer) addStats(rows []any) error {
	for rest := rows; len(rest) > 0; {
		n := min(len(rest)/statsParams, maxRowsPerInsert)
		q := w.valuesSQL(statsInput, statsParams, n, statsUpsertTail)
		if _, err := w.exec(q, rest[:n*statsParams]...); err != nil {
			return fmt.Errorf("add delivery stats: %w", err)
		}
		rest = rest[n*statsParams:]
	}
	return nil
}

// acknowledgedStats appends to rows the rollup input of a pull delivery
// acknowledged at now: delivered, no attempt.
func acknowledgedStats(rows []any, id string, now time.Time) []any {
	return append(rows, id, sqlrow.MinuteMS(sqlrow.UnixMS(now)), string(delivery.StatusDelivered), -1)
}

// DeliveryStats implements store.StatsStore (statsReadSQL).
func (s *backend) DeliveryStats(ctx context.Context, q store.StatsQuery) ([]stats.Row, error) {
	query := statsRead
	if q.AccountID == "" {
		query = statsReadAll
	}
	rows, err := s.readQuery(ctx, query, q.Step.Milliseconds(), sqlrow.UnixMS(q.From), sqlrow.UnixMS(q.Until),
		q.SubscriptionID, q.EndpointID, q.AccountID)
	if err != nil {
		return nil, fmt.Errorf("read delivery stats: %w", err)
	}
	defer rows.Close()
	var out []stats.Row
	for rows.Next() {
		r, err := sqlrow.ScanStats(rows)
		if err != nil {
			return nil, fmt.Errorf("read delivery stats: %w", err)
		}
		out = append(out, r)
	}
	return out, s.readErr(rows.Err())
}

// DeleteOldStats implements store.StatsStore in one write.
func (s *backend) DeleteOldStats(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(w *writer) error {
		var err error
		n, err = w.execN(deleteOldStatsSQL, sqlrow.UnixMS(before), limit)
		return err
	})
	return int(n), err
}
