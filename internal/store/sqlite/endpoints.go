package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	endpointCols = `id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst`

	getEndpointSQL  = `SELECT ` + endpointCols + ` FROM endpoints WHERE id = ?`
	allEndpointsSQL = `SELECT ` + endpointCols + ` FROM endpoints ORDER BY id`

	// Every health write takes the next endpoints version (bumpEndpointsSQL)
	// and stores it on the rows it writes.
	bumpEndpointsSQL    = `UPDATE counters SET value = value + 1 WHERE name = 'endpoints' RETURNING value`
	endpointsVersionSQL = `SELECT value FROM counters WHERE name = 'endpoints'`
	changedEndpointsSQL = `SELECT ` + endpointCols + ` FROM endpoints WHERE version > ? ORDER BY id`

	// saveHealthSQL writes one endpoint's health and returns the row as
	// stored.
	saveHealthSQL = `UPDATE endpoints SET state = ?, consecutive_failures = ?, health_window = ?,
	first_attempt_at = ?, last_success_at = ?, last_failure_at = ?, disabled_at = ?, frozen_at = ?,
	next_probe_at = ?, probation_delay_ms = ?, updated_at = ?, version = ?, state_reason = ?,
	rate_per_second = ?, rate_burst = ?
WHERE id = ?
RETURNING ` + endpointCols

	// takeProbeSQL moves a due probe time (set, and not after now) to hold.
	takeProbeSQL = `UPDATE endpoints SET next_probe_at = ?
WHERE id = ? AND next_probe_at <> 0 AND next_probe_at <= ?`
)

// GetEndpoint implements store.EndpointStore.
func (s *backend) GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error) {
	e, err := sqlrow.ScanEndpoint(s.readRow(ctx, getEndpointSQL, id))
	if isNoRows(err) {
		return endpoint.Endpoint{}, store.ErrNotFound
	}
	return e, s.readErr(err)
}

// ListEndpoints implements store.EndpointStore: in ID order; the cursor is
// the last ID of the previous page; a state filters the walk of the
// account's endpoints_account index (listEndpointsSQL).
func (s *backend) ListEndpoints(ctx context.Context, accountID string, state health.State, p store.Page) ([]endpoint.Endpoint, string, error) {
	if err := store.EndpointCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	sizes, rows, args := listEndpointsSQL(accountID, state, p.Cursor)
	return readPage(ctx, s, p, sizes, rows, args, sqlrow.ScanEndpoint, func(e endpoint.Endpoint) string { return e.ID })
}

// listEndpointsSQL returns ListEndpoints' queries and arguments (listSQL).
func listEndpointsSQL(accountID string, state health.State, cursor string) (sizes, rows string, args []any) {
	var and []listFilter
	if state != "" {
		and = append(and, listFilter{"state", string(state)})
	}
	return listSQL("endpoints", sqlrow.EndpointBytes, endpointCols, accountID, cursor, and...)
}

// AllEndpoints implements store.EndpointStore.
func (s *backend) AllEndpoints(ctx context.Context) ([]endpoint.Endpoint, error) {
	rows, err := s.readQuery(ctx, allEndpointsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []endpoint.Endpoint
	for rows.Next() {
		e, err := sqlrow.ScanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, s.readErr(rows.Err())
}

// EndpointChanges implements store.EndpointStore, in one read snapshot.
func (s *backend) EndpointChanges(ctx context.Context, since int64) ([]endpoint.Endpoint, int64, error) {
	var out []endpoint.Endpoint
	var v int64
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		out = nil
		if err := tx.QueryRowContext(ctx, endpointsVersionSQL).Scan(&v); err != nil {
			return err
		}
		if since >= v {
			return nil
		}
		rows, err := tx.QueryContext(ctx, changedEndpointsSQL, since)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e, err := sqlrow.ScanEndpoint(rows)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("endpoint changes: %w", s.readErr(err))
	}
	return out, v, nil
}

// ModifyEndpoints implements store.EndpointStore. It runs as one request of
// the single writer, which serialises it with every other write (this
// process is the only one writing the file): the endpoints are read, fn is
// called and its Health, UpdatedAt and RateLimit written back in one transaction, in
// which fn runs on the writer goroutine, so it must be quick. Endpoints are
// read, passed to fn and returned in ID order, each once however often its
// ID is given; fn's changes to ID, URL and CreatedAt are ignored. When no ID
// is known fn is still called (with no endpoints) and nothing is written. In
// the rare case that another request's failure aborts the shared
// transaction (a full disk, an I/O error), the request runs again: fn is then
// called again with the endpoints read anew, and only that call's result is
// written.
func (s *backend) ModifyEndpoints(ctx context.Context, ids []string, fn func(eps []*endpoint.Endpoint) error) ([]endpoint.Endpoint, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []endpoint.Endpoint
	err := s.write(ctx, func(w *writer) error {
		out = nil
		var eps []*endpoint.Endpoint
		var found []string // the IDs as read, whatever fn does to eps
		for _, id := range ids {
			e, err := sqlrow.ScanEndpoint(w.row(getEndpointSQL, id))
			if isNoRows(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read endpoint %s: %w", id, err)
			}
			eps = append(eps, &e)
			found = append(found, id)
		}
		if err := fn(eps); err != nil {
			return err
		}
		if len(eps) == 0 {
			return nil
		}
		v, err := w.bumpEndpoints()
		if err != nil {
			return err
		}
		for i, e := range eps {
			args, err := healthArgs(found[i], e, v)
			if err != nil {
				return err
			}
			written, err := sqlrow.ScanEndpoint(w.row(saveHealthSQL, args...))
			if err != nil {
				return fmt.Errorf("save endpoint %s health: %w", found[i], err)
			}
			out = append(out, written)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bumpEndpoints takes the next endpoints version in the write transaction.
func (w *writer) bumpEndpoints() (int64, error) {
	var v int64
	if err := w.scanRow(bumpEndpointsSQL, nil, &v); err != nil {
		return 0, fmt.Errorf("advance the endpoints version: %w", err)
	}
	return v, nil
}

// TakeProbe implements store.EndpointStore with one conditional update on
// the writer. Writes are serialised, so of concurrent calls for a due probe
// (with hold after now) exactly one sees it due. An unknown endpoint reports
// false.
func (s *backend) TakeProbe(ctx context.Context, endpointID string, now, hold time.Time) (bool, error) {
	var took bool
	err := s.write(ctx, func(w *writer) error {
		n, err := w.execN(takeProbeSQL, sqlrow.UnixMS(hold), endpointID, sqlrow.UnixMS(now))
		if err != nil {
			return fmt.Errorf("take probe of %s: %w", endpointID, err)
		}
		took = n > 0
		return nil
	})
	if err != nil {
		return false, err
	}
	return took, nil
}

// healthArgs are saveHealthSQL's arguments: e's Health, UpdatedAt and
// RateLimit, for
// the endpoint id, written at endpoints version v.
func healthArgs(id string, e *endpoint.Endpoint, v int64) ([]any, error) {
	r, err := sqlrow.NewHealthRow(id, e)
	if err != nil {
		return nil, err
	}
	return []any{r.State, r.Failures, r.Window, r.First, r.Success, r.Failure, r.Disabled, r.Frozen,
		r.Probe, r.DelayMS, r.Updated, v, r.Reason, r.RatePerSecond, r.RateBurst, r.ID}, nil
}
