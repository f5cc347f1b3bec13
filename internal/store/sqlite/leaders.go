package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store/sqlrow"
)

// tryLeadSQL takes the role when nobody holds it, when its term ended
// before now (?4), or when owner already holds it (a renewal); otherwise the
// upsert changes nothing.
const tryLeadSQL = `INSERT INTO leaders (name, owner, until) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
WHERE leaders.until < ?4 OR leaders.owner = excluded.owner`

// TryLead implements store.DeliveryStore with one upsert on the writer. A
// renewal sets the term's end to until even when that is earlier than the
// current one.
func (s *backend) TryLead(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	var won bool
	err := s.write(ctx, func(w *writer) error {
		n, err := w.execN(tryLeadSQL, name, owner, sqlrow.UnixMS(until), sqlrow.UnixMS(now))
		if err != nil {
			return fmt.Errorf("try lead %s: %w", name, err)
		}
		won = n > 0
		return nil
	})
	if err != nil {
		return false, err
	}
	return won, nil
}
