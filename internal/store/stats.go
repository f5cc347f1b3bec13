package store

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/stats"
)

// StatsQuery selects the delivery rollups of one account ("": of every
// account) (stats.Row), added
// up per Step (a whole number of minutes) from From to Until (exclusive),
// optionally of one subscription or endpoint ("": all).
type StatsQuery struct {
	AccountID      string
	SubscriptionID string
	EndpointID     string
	From, Until    time.Time
	Step           time.Duration
}

// StatsStore reads and prunes the per-minute delivery rollups. They are
// written by Record and by Settle's acknowledgements, in the same
// transaction as the outcomes they count: one row per (minute,
// subscription, endpoint), added to by every node. A Record outcome counts
// only when its state change applies: delivered and dead_lettered by its
// status, failed and its latency when it made an attempt (Attempt.Number
// > 0), in the minute its attempt ended (Attempt.StartedAt + Duration).
type StatsStore interface {
	// DeliveryStats returns q's steps that hold any count, in time order, each At
	// the start of its step.
	DeliveryStats(ctx context.Context, q StatsQuery) ([]stats.Row, error)
	// DeleteOldStats deletes at most limit rollups of minutes before
	// `before` and returns how many it deleted.
	DeleteOldStats(ctx context.Context, before time.Time, limit int) (int, error)
}
