package sqlrow

import (
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
)

// The per-minute delivery rollups (table delivery_stats, migration 0014 of
// both stores): what an outcome counts in them. The engine adds them up
// (internal/store/engine/record.go).

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
