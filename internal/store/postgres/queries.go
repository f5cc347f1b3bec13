package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// getDeliverySQL reads a delivery by ID (the engine's GetDelivery, whose
// statement is queries/reads.sql's): the legacy writes that still read one
// inside their transactions (Redeliver, ClaimDue's dead letters) use it.
const getDeliverySQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = $1`

// queryAll runs a query in its own transaction (see Store.tx) and scans
// every row with scan.
func queryAll[T any](ctx context.Context, s *backend, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []T
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []T{}
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.err(err)
	}
	return out, nil
}

// statusRows is the condition that a delivery (d) has a status, for each
// valid status (delivery.Status.Valid). The status is a literal of the query,
// made of the store's constants only, never of a caller's text, so that in
// every plan, generic ones included, the planner can prove the rows to be
// in the partial indexes that hold that status: those of queued deliveries
// (queuedRows; 0006) and those of the deliveries not delivered
// (deliveries_subscription_status, deliveries_account_status; 0010). A
// status given as a parameter proves nothing in a generic plan.
var statusRows = func() map[delivery.Status]string {
	m := map[delivery.Status]string{}
	for _, st := range []delivery.Status{delivery.StatusPending, delivery.StatusDelivered, delivery.StatusDeadLettered,
		delivery.StatusDropped, delivery.StatusQueued} {
		if !st.Valid() || strings.ContainsAny(string(st), `'\`) {
			panic("postgres: status " + string(st) + " cannot be a literal")
		}
		m[st] = `d.status = '` + string(st) + `'`
	}
	if m[delivery.StatusQueued] != queuedRows {
		panic("postgres: statusRows disagrees with queuedRows")
	}
	return m
}()

// readPage reads one page of a list in one snapshot: first the sizes of
// the items after the cursor (sizesSQL selects one size per item, the
// list's conditions and order, with a LIMIT parameter after args) to find
// where the page ends (store.Page.Len), then only the items the page holds
// (rowsSQL: the same with the columns scan reads), so that it never reads
// more than a page's bytes. key gives an item's cursor.
//
// Its transaction (listOpts) plans each query for its arguments
// (plan_cache_mode = force_custom_plan, set with the BEGIN, so at no extra
// round trip): the best plan of a list depends on them (a small account's
// deliveries are found through the account's index, a large account's by
// reading the newest deliveries until the page is full), and a generic
// plan, to which PostgreSQL may switch a prepared statement after a few
// runs, would serve every account with the plan of an average one. Planning
// a list's two queries costs well under a millisecond.
func readPage[T any](ctx context.Context, s *backend, p store.Page, sizesSQL, rowsSQL string, args []any,
	scan func(scanner) (T, error), key func(T) string) ([]T, string, error) {
	var out []T
	var next string
	err := s.readTx(ctx, s.listOpts, func(tx pgx.Tx) error {
		out, next = []T{}, ""
		rows, err := tx.Query(ctx, sizesSQL, append(args[:len(args):len(args)], p.Size()+1)...)
		if err != nil {
			return err
		}
		sizes, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		n := p.Len(sizes)
		if n == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, rowsSQL, append(args[:len(args):len(args)], n)...)
		if err != nil {
			return err
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) }); err != nil {
			return err
		}
		if n < len(sizes) && len(out) > 0 {
			next = key(out[len(out)-1])
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// listByID reads a page (readPage) of the rows of table in ID order after
// p.Cursor (already checked): of one account when accountID is not empty
// (a seek of the table's (account_id, id) index), else of every account;
// each of and filters that walk. bytes selects an item's size (sqlrow's
// …Bytes), cols what scan reads.
func listByID[T any](ctx context.Context, s *backend, table, bytes, cols, accountID string, p store.Page,
	scan func(scanner) (T, error), key func(T) string, and ...listFilter) ([]T, string, error) {
	sizes, rows, args := listByIDSQL(table, bytes, cols, accountID, p.Cursor, and...)
	return readPage(ctx, s, p, sizes, rows, args, scan, key)
}

// listFilter is an equality a list filters its walk in ID order with.
type listFilter struct{ column, value string }

// listByIDSQL returns listByID's queries (the sizes, as bytes selects
// them, and the rows, as cols), with a LIMIT parameter last, and their
// arguments.
func listByIDSQL(table, bytes, cols, accountID, cursor string, and ...listFilter) (sizes, rows string, args []any) {
	args = []any{cursor}
	where := `id > $1`
	if accountID != "" {
		args = append(args, accountID)
		where += ` AND account_id = $2`
	}
	for _, f := range and {
		args = append(args, f.value)
		where += fmt.Sprintf(` AND %s = $%d`, f.column, len(args))
	}
	sql := func(sel string) string {
		return `SELECT ` + sel + ` FROM ` + table + ` WHERE ` + where + fmt.Sprintf(` ORDER BY id LIMIT $%d`, len(args)+1)
	}
	return sql(bytes), sql(cols), args
}
