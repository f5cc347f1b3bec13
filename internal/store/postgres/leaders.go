package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/jackc/pgx/v5"
)

// tryLeadSQL takes the role in one atomic statement: inserted when nobody
// holds it; otherwise updated only when its term ended before now ($3) or
// owner already holds it (a renewal). A row comes back exactly when owner
// holds the role afterwards. Of concurrent callers for a free role one
// inserts; the others wait for its row and then find it held.
const tryLeadSQL = `INSERT INTO leaders AS l (name, owner, until) VALUES ($1, $2, $4)
ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
WHERE l.until < $3 OR l.owner = EXCLUDED.owner
RETURNING l.owner`

// TryLead implements store.DeliveryStore in one statement. now comes from
// the caller's clock: the nodes' clocks must agree to well within a term. A
// renewal sets the term's end to until even when that is earlier than the
// current one.
func (s *backend) TryLead(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	var won bool
	err := s.retrying(ctx, func() error {
		got, err := queryRow(ctx, s, func(sc scanner) (got string, err error) {
			err = sc.Scan(&got)
			return
		}, tryLeadSQL, name, owner, sqlrow.UnixMS(now), sqlrow.UnixMS(until))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			won = false
			return nil
		case err != nil:
			return err
		}
		won = got == owner
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("try lead %s: %w", name, s.err(err))
	}
	return won, nil
}
