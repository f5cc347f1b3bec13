package sqlite

import (
	"context"
	"database/sql"

	"github.com/herald-events/herald/internal/store"
)

// getDeliverySQL reads a delivery by ID (the engine's GetDelivery, whose
// statement is queries/reads.sql's): the legacy writes that still read one
// inside their transactions (Redeliver, ClaimDue's dead letters) use it.
const getDeliverySQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = ?`

// listWhere is the condition of a list of table's rows in ID order after
// a cursor: of every account when accountID is empty, else of that account
// (table has an index on (account_id, id)); each of and is one more
// column = ? filtered on that walk. It returns the condition and its
// arguments.
func listWhere(accountID, cursor string, and ...listFilter) (string, []any) {
	where, args := `id > ?`, []any{cursor}
	if accountID != "" {
		where, args = `account_id = ? AND `+where, []any{accountID, cursor}
	}
	for _, f := range and {
		where += ` AND ` + f.column + ` = ?`
		args = append(args, f.value)
	}
	return where, args
}

// listFilter is an equality a list filters its walk in ID order with.
type listFilter struct{ column, value string }

// listSQL returns readPage's queries (the sizes, as bytes selects them, and
// the rows, as cols), with a LIMIT parameter last, and their arguments for
// the page after cursor of a list of table's rows (listWhere).
func listSQL(table, bytes, cols, accountID, cursor string, and ...listFilter) (sizes, rows string, args []any) {
	where, args := listWhere(accountID, cursor, and...)
	sql := func(sel string) string {
		return `SELECT ` + sel + ` FROM ` + table + ` WHERE ` + where + ` ORDER BY id LIMIT ?`
	}
	return sql(bytes), sql(cols), args
}

// readPage reads one page of a list in one snapshot: first the sizes of
// the items after the cursor (sizesSQL selects one size per item, the
// list's conditions and order, with a LIMIT parameter last) to find where
// the page ends (store.Page.Len), then only the items the page holds
// (rowsSQL: the same with the columns scan reads), so that it never reads
// more than a page's bytes. key gives an item's cursor.
func readPage[T any](ctx context.Context, s *backend, p store.Page, sizesSQL, rowsSQL string, args []any,
	scan func(scanner) (T, error), key func(T) string) ([]T, string, error) {
	out, next := []T{}, ""
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		sizes, err := queryRows(ctx, tx, func(sc scanner) (n int64, err error) {
			err = sc.Scan(&n)
			return
		}, sizesSQL, append(args[:len(args):len(args)], p.Size()+1)...)
		if err != nil {
			return err
		}
		n := p.Len(sizes)
		if n == 0 {
			return nil
		}
		if out, err = queryRows(ctx, tx, scan, rowsSQL, append(args[:len(args):len(args)], n)...); err != nil {
			return err
		}
		if n < len(sizes) && len(out) > 0 {
			next = key(out[len(out)-1])
		}
		return nil
	})
	if err != nil {
		return nil, "", s.readErr(err)
	}
	return out, next, nil
}

// queryRows runs query in tx and scans every row with scan.
func queryRows[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
