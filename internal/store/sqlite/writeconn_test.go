package sqlite

import (
	"context"

	storedriver "github.com/herald-events/herald/internal/store/driver"
)

// rawWrite runs fn on the write connection as a write of the engine's
// writer (tests write rows the store's methods do not).
func (s *Store) rawWrite(ctx context.Context, fn func(w *writeConn) error) error {
	return s.Store.Write(ctx, func(x storedriver.Executor) error { return fn(x.(*writeConn)) })
}

// scanRow runs query on the write connection and scans its one row.
func (w *writeConn) scanRow(query string, args []any, dest ...any) error {
	st, err := w.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(bg, args...).Scan(dest...)
}
