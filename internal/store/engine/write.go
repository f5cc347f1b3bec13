package engine

import (
	"context"

	"github.com/herald-events/herald/internal/store/driver"
)

// exec runs one statement in a write transaction of its own.
func (s *Store) exec(ctx context.Context, q driver.Query, args ...any) error {
	return s.drv.Write(ctx, func(x driver.Executor) error {
		_, err := x.Exec(ctx, q, args...)
		return err
	})
}

// orEmpty is b, or an empty slice for nil: a nil []byte is bound as NULL,
// which matches no key (and NOT NULL refuses).
func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
