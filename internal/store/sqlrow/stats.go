package sqlrow

import (
	"fmt"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
)

// The per-minute delivery rollups (table delivery_stats, migration 0014 of
// both stores), whose statements both SQL stores share but for their
// placeholders.
var (
	// StatsLatCols are the latency bucket columns: lat0, …, lat15.
	StatsLatCols = latCols("%s")
	// StatsCols are the columns an upsert writes, in order.
	StatsCols = "minute, account_id, subscription_id, endpoint_id, delivered, failed, dead_lettered, " + StatsLatCols
	// StatsUpsert ends an INSERT into delivery_stats: a row that exists is
	// added to, so every node's and every commit's counts add up.
	StatsUpsert = `
ON CONFLICT (minute, subscription_id, endpoint_id) DO UPDATE SET ` + statsAdd()
	// StatsSums are the sums a read adds up per step, in ScanStats' order.
	StatsSums = "CAST(SUM(delivered) AS BIGINT), CAST(SUM(failed) AS BIGINT), CAST(SUM(dead_lettered) AS BIGINT), " +
		latCols("CAST(SUM(%s) AS BIGINT)")
	// StatsOutcomeAggs count, over rows of outcomes with columns status
	// and bucket (-1: no attempt), what StatsCols holds after the keys.
	StatsOutcomeAggs = statsOutcomeAggs()
)

// latCols formats each latency column's name with format.
func latCols(format string) string {
	cols := make([]string, stats.Buckets)
	for k := range cols {
		cols[k] = fmt.Sprintf(format, fmt.Sprintf("lat%d", k))
	}
	return strings.Join(cols, ", ")
}

func statsAdd() string {
	cols := append([]string{"delivered", "failed", "dead_lettered"}, strings.Split(latCols("%s"), ", ")...)
	for i, c := range cols {
		cols[i] = fmt.Sprintf("%s = delivery_stats.%s + excluded.%s", c, c, c)
	}
	return strings.Join(cols, ", ")
}

func statsOutcomeAggs() string {
	var b strings.Builder
	fmt.Fprintf(&b, "SUM(CASE WHEN status = '%s' THEN 1 ELSE 0 END), ", delivery.StatusDelivered)
	fmt.Fprintf(&b, "SUM(CASE WHEN bucket >= 0 AND status <> '%s' THEN 1 ELSE 0 END), ", delivery.StatusDelivered)
	fmt.Fprintf(&b, "SUM(CASE WHEN status = '%s' THEN 1 ELSE 0 END)", delivery.StatusDeadLettered)
	for k := range stats.Buckets {
		fmt.Fprintf(&b, ", SUM(CASE WHEN bucket = %d THEN 1 ELSE 0 END)", k)
	}
	return b.String()
}

// StatsCounted reports whether o counts in the rollups (when its state
// change applies): it ended delivered or dead-lettered, or made an attempt.
func StatsCounted(o *store.Outcome) bool {
	return o.Attempt.Number > 0 || o.Status == delivery.StatusDelivered || o.Status == delivery.StatusDeadLettered
}

// StatsMinute is the minute o counts in, in Unix milliseconds: that of its
// attempt's end (AttemptDueMS).
func StatsMinute(o *store.Outcome) int64 { return MinuteMS(AttemptDueMS(&o.Attempt)) }

// MinuteMS is the start of the minute holding ms (Unix milliseconds).
func MinuteMS(ms int64) int64 { return ms - ms%time.Minute.Milliseconds() }

// StatsBucket is the latency bucket of o's attempt (stats.Bucket), or -1
// when it made none.
func StatsBucket(o *store.Outcome) int {
	if o.Attempt.Number == 0 {
		return -1
	}
	return stats.Bucket(o.Attempt.Duration)
}

// ScanStats reads a row of a read of the rollups: its step's start (Unix
// milliseconds), then StatsSums.
func ScanStats(r RowScanner) (stats.Row, error) {
	var row stats.Row
	var at int64
	dest := []any{&at, &row.Delivered, &row.Failed, &row.DeadLettered}
	for k := range row.Latency {
		dest = append(dest, &row.Latency[k])
	}
	if err := r.Scan(dest...); err != nil {
		return stats.Row{}, err
	}
	row.At = FromUnixMS(at)
	return row, nil
}
