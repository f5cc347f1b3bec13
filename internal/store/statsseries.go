package store

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/stats"
)

// StatsReader reads the delivery rollups (StatsStore.DeliveryStats).
type StatsReader interface {
	DeliveryStats(ctx context.Context, q StatsQuery) ([]stats.Row, error)
}

// StatsSeries returns the series of window w ending at now for q's account
// (and subscription or endpoint): one row per w.Step, zero rows for the
// steps with nothing (stats.Fill). q's From, Until and Step are set from w.
func StatsSeries(ctx context.Context, st StatsReader, q StatsQuery, w stats.Window, now time.Time) ([]stats.Row, error) {
	q.From, q.Until = w.Range(now)
	q.Step = w.Step
	rows, err := st.DeliveryStats(ctx, q)
	if err != nil {
		return nil, err
	}
	return stats.Fill(rows, q.From, q.Until, q.Step), nil
}
