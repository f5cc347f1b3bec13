package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store"
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
	// qGetLeader reads role $1's owner and the end of its term.
	qGetLeader = query("GetLeader")
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

// SourceLeader implements store.SourceStore: the holder of the role
// store.SourceLeaderRole(id), read as TryLead writes it.
func (s *Store) SourceLeader(ctx context.Context, id string, now time.Time) (string, time.Time, error) {
	var owner string
	var until int64
	err := s.drv.Reader().QueryRow(ctx, qGetLeader, store.SourceLeaderRole(id)).Scan(&owner, &until)
	switch {
	case errors.Is(err, driver.ErrNoRows):
		return "", time.Time{}, nil
	case err != nil:
		return "", time.Time{}, fmt.Errorf("source %s's leader: %w", id, err)
	}
	if t := sqlrow.FromUnixMS(until); !t.Before(now) {
		return owner, t, nil
	}
	return "", time.Time{}, nil
}
