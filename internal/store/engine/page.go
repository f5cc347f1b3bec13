package engine

import (
	"context"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// readPage reads one page of a list (store.Page, store.MaxPageBytes) in one
// snapshot (driver.Snapshot), for every list of the store:
//
//   - sizes selects one size per item (sqlrow's …Bytes: the bytes of the
//     item's variable-length fields), under the list's conditions and in
//     its order, after the cursor;
//   - rows selects the items themselves (the columns scan reads: sqlrow's
//     …Cols), with the same conditions and order.
//
// Both statements take args, then a LIMIT parameter last (so a list's
// statements have len(args)+1 parameters). readPage first reads the sizes
// of up to p.Size()+1 items to find where the page ends (store.Page.Len),
// then only the items the page holds, so that it never reads more than a
// page's bytes plus one item. The next cursor is key of the page's last
// item when more items follow, else "". The page is never nil.
//
// The cursor itself is the caller's to check (store.IDCursor.Check,
// store.NumberCursor) and to turn into args.
//
// On PostgreSQL the snapshot plans each statement for its arguments
// (plan_cache_mode = force_custom_plan): the best plan of a list may
// depend on them (the deliveries of an account, large or small).
func readPage[T any](ctx context.Context, s *Store, p store.Page, sizes, rows driver.Query, args []any,
	scan func(sqlrow.RowScanner) (T, error), key func(T) string) ([]T, string, error) {
	var out []T
	var next string
	err := s.drv.Snapshot(ctx, func(x driver.Executor) error {
		out, next = []T{}, ""
		var lens []int64
		err := x.Query(ctx, sizes, func(r driver.Row) error {
			var n int64
			err := r.Scan(&n)
			lens = append(lens, n)
			return err
		}, withLimit(args, p.Size()+1)...)
		if err != nil {
			return err
		}
		n := p.Len(lens)
		if n == 0 {
			return nil
		}
		err = x.Query(ctx, rows, func(r driver.Row) error {
			v, err := scan(r)
			out = append(out, v)
			return err
		}, withLimit(args, n)...)
		if err != nil {
			return err
		}
		if n < len(lens) && len(out) > 0 {
			next = key(out[len(out)-1])
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// withLimit returns args followed by limit, in a new slice: args is
// neither changed nor shared (a driver may rewrite its arguments).
func withLimit(args []any, limit int) []any {
	return append(args[:len(args):len(args)], limit)
}
