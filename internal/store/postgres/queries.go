package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
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
		delivery.StatusDropped, delivery.StatusQueued, delivery.StatusFiltered} {
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
