package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Roles held by one process at a time (store.DeliveryStore's TryLead).
var (
	// qTryLead takes role $1 for owner $2 until $4 in one upsert: inserted
	// when nobody holds it; otherwise updated only when its term ended
	// before $3 (now) or $2 already holds it (a renewal). It changes a row
	// exactly when $2 holds the role afterwards.
	qTryLead = query("TryLead")
)

// TryLead implements store.DeliveryStore in one statement (qTryLead). now
// comes from the caller's clock: on a shared store the nodes' clocks must
// agree to well within a term. Of concurrent callers for a free role one
// takes it (on PostgreSQL the others wait for its row and then find it
// held). A renewal sets the term's end to until even when that is earlier
// than the current one.
func (s *Store) TryLead(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	var won bool
	err := s.write(ctx, func(x driver.Executor) error {
		n, err := x.Exec(ctx, qTryLead, name, owner, sqlrow.UnixMS(now), sqlrow.UnixMS(until))
		won = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("try lead %s: %w", name, err)
	}
	return won, nil
}
