package sqlite

import (
	"fmt"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// The delivery rollups are added to in the writer's group commit, with
// the outcomes and acknowledgements that count (record.go, queue.go); the
// engine reads and prunes them (internal/store/engine/stats.go).

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
)

var statsUpsertTail = `)
INSERT INTO delivery_stats (` + sqlrow.StatsCols + `)
SELECT minute, account_id, subscription_id, endpoint_id, ` + sqlrow.StatsOutcomeAggs + `
FROM (` + statsRowsSQL + `) WHERE true
GROUP BY minute, account_id, subscription_id, endpoint_id` + sqlrow.StatsUpsert

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
