package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	endpointCols = `id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst`

	getEndpointSQL  = `SELECT ` + endpointCols + ` FROM endpoints WHERE id = $1`
	allEndpointsSQL = `SELECT ` + endpointCols + ` FROM endpoints ORDER BY id`

	// Every health write first takes the next endpoints version, locking
	// the counter's row until it commits (so versions commit in order and an
	// incremental reader misses none), and stores it on the rows it writes.
	bumpEndpointsSQL    = `UPDATE counters SET value = value + 1 WHERE name = 'endpoints' RETURNING value`
	endpointsVersionSQL = `SELECT value FROM counters WHERE name = 'endpoints'`
	changedEndpointsSQL = `SELECT ` + endpointCols + ` FROM endpoints WHERE version > $1 ORDER BY id`

	// lockEndpointsSQL reads endpoints for ModifyEndpoints, locked until the
	// transaction ends; in ID order, so that concurrent callers lock
	// overlapping sets in the same order and never deadlock.
	lockEndpointsSQL = `SELECT ` + endpointCols + ` FROM endpoints WHERE id = ANY($1) ORDER BY id FOR UPDATE`

	// saveHealthSQL writes the health of the endpoints ModifyEndpoints
	// locked, and returns them as stored.
	saveHealthSQL = `UPDATE endpoints AS e SET
	state = u.state, consecutive_failures = u.consecutive_failures, health_window = u.health_window,
	first_attempt_at = u.first_attempt_at, last_success_at = u.last_success_at,
	last_failure_at = u.last_failure_at, disabled_at = u.disabled_at, frozen_at = u.frozen_at,
	next_probe_at = u.next_probe_at, probation_delay_ms = u.probation_delay_ms, updated_at = u.updated_at,
	state_reason = u.state_reason, version = $13, rate_per_second = u.rate_per_second, rate_burst = u.rate_burst
FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::int8[], $6::int8[], $7::int8[],
	$8::int8[], $9::int8[], $10::int8[], $11::int8[], $12::int8[], $14::text[], $15::float8[], $16::int4[])
	AS u(id, state, consecutive_failures, health_window, first_attempt_at, last_success_at, last_failure_at,
	disabled_at, frozen_at, next_probe_at, probation_delay_ms, updated_at, state_reason, rate_per_second, rate_burst)
WHERE e.id = u.id
RETURNING e.id, e.account_id, e.url, e.state, e.consecutive_failures, e.health_window, e.first_attempt_at, e.last_success_at,
	e.last_failure_at, e.disabled_at, e.frozen_at, e.next_probe_at, e.probation_delay_ms, e.created_at, e.updated_at,
	e.version, e.state_reason, e.rate_per_second, e.rate_burst`

	// takeProbeSQL moves a due probe time (set, and not after now) to hold.
	// A concurrent caller waits for the row and re-checks the condition on
	// the updated version, so only one of them changes it.
	takeProbeSQL = `UPDATE endpoints SET next_probe_at = $3
WHERE id = $1 AND next_probe_at <> 0 AND next_probe_at <= $2`
)

// saveHealth writes rows (distinct endpoints) at endpoints version v in one
// statement and returns the endpoints as stored, in ID order.
func saveHealth(ctx context.Context, tx pgx.Tx, rows []sqlrow.HealthRow, v int64) ([]endpoint.Endpoint, error) {
	n := len(rows)
	id, state, window, reason := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	rate, burst := make([]float64, n), make([]int32, n)
	var cols [9][]int64
	for i := range cols {
		cols[i] = make([]int64, n)
	}
	for i, h := range rows {
		id[i], state[i], window[i], reason[i] = h.ID, h.State, h.Window, h.Reason
		rate[i], burst[i] = h.RatePerSecond, int32(h.RateBurst)
		for j, v := range []int64{h.Failures, h.First, h.Success, h.Failure, h.Disabled, h.Frozen, h.Probe, h.DelayMS, h.Updated} {
			cols[j][i] = v
		}
	}
	res, err := tx.Query(ctx, saveHealthSQL, id, state, cols[0], window, cols[1], cols[2], cols[3],
		cols[4], cols[5], cols[6], cols[7], cols[8], v, reason, rate, burst)
	if err != nil {
		return nil, fmt.Errorf("save endpoint health: %w", err)
	}
	out, err := pgx.CollectRows(res, func(r pgx.CollectableRow) (endpoint.Endpoint, error) { return sqlrow.ScanEndpoint(r) })
	if err != nil {
		return nil, fmt.Errorf("save endpoint health: %w", err)
	}
	// UPDATE ... RETURNING has no order.
	slices.SortFunc(out, func(a, b endpoint.Endpoint) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// GetEndpoint implements store.EndpointStore.
func (s *backend) GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error) {
	if err := s.checkOpen(); err != nil {
		return endpoint.Endpoint{}, err
	}
	e, err := queryRow(ctx, s, sqlrow.ScanEndpoint, getEndpointSQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return endpoint.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, store.ErrNotFound)
	}
	return e, s.err(err)
}

// ListEndpoints implements store.EndpointStore: in ID order; the cursor is
// the last ID of the previous page. An account's page seeks its
// (account_id, id) index, which a state filters.
func (s *backend) ListEndpoints(ctx context.Context, accountID string, state health.State, p store.Page) ([]endpoint.Endpoint, string, error) {
	if err := store.EndpointCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	return listByID(ctx, s, "endpoints", sqlrow.EndpointBytes, endpointCols, accountID, p,
		sqlrow.ScanEndpoint, func(e endpoint.Endpoint) string { return e.ID }, endpointStateFilter(state)...)
}

// endpointStateFilter is ListEndpoints' filter of a state ("" is none).
func endpointStateFilter(state health.State) []listFilter {
	if state == "" {
		return nil
	}
	return []listFilter{{"state", string(state)}}
}

// AllEndpoints implements store.EndpointStore, in ID order.
func (s *backend) AllEndpoints(ctx context.Context) ([]endpoint.Endpoint, error) {
	return queryAll(ctx, s, sqlrow.ScanEndpoint, allEndpointsSQL)
}

// EndpointChanges implements store.EndpointStore in one snapshot.
func (s *backend) EndpointChanges(ctx context.Context, since int64) ([]endpoint.Endpoint, int64, error) {
	var out []endpoint.Endpoint
	var v int64
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		out = nil
		if err := tx.QueryRow(ctx, endpointsVersionSQL).Scan(&v); err != nil {
			return err
		}
		if since >= v {
			return nil
		}
		rows, err := tx.Query(ctx, changedEndpointsSQL, since)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (endpoint.Endpoint, error) { return sqlrow.ScanEndpoint(r) })
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("endpoint changes: %w", err)
	}
	return out, v, nil
}

// bumpEndpoints takes the next endpoints version in tx (locking the
// counter until tx ends) and tells the other nodes when tx commits.
func (s *backend) bumpEndpoints(ctx context.Context, tx pgx.Tx) (int64, error) {
	var v int64
	if err := tx.QueryRow(ctx, bumpEndpointsSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("advance the endpoints version: %w", err)
	}
	return v, s.notify(ctx, tx, changedEndpoints)
}

// ModifyEndpoints implements store.EndpointStore in one transaction: it
// reads the endpoints with SELECT ... FOR UPDATE (in ID order), so another
// node's ModifyEndpoints or TakeProbe on any of them waits until this one
// commits, calls fn, and writes back the Health, UpdatedAt and RateLimit fn
// leaves in one statement. Endpoints are passed to fn and returned in ID order, each
// once however often its ID is given; fn's changes to ID, URL and CreatedAt
// are ignored. When no ID is known fn is still called (with no endpoints)
// and nothing is written. fn runs while the rows are locked and a pooled
// connection is held: it must be quick. If the transaction is rolled back by
// a deadlock or a serialization failure it runs again, calling fn again with
// the endpoints read anew; only the last call's result is written.
func (s *backend) ModifyEndpoints(ctx context.Context, ids []string, fn func(eps []*endpoint.Endpoint) error) ([]endpoint.Endpoint, error) {
	if ids == nil {
		ids = []string{} // a NULL array would match nothing too, but say what is meant
	}
	var out []endpoint.Endpoint
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		var v int64
		if len(ids) > 0 {
			var err error
			if v, err = s.bumpEndpoints(ctx, tx); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, lockEndpointsSQL, ids)
		if err != nil {
			return fmt.Errorf("read endpoints: %w", err)
		}
		read, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (endpoint.Endpoint, error) { return sqlrow.ScanEndpoint(r) })
		if err != nil {
			return fmt.Errorf("read endpoints: %w", err)
		}
		eps := make([]*endpoint.Endpoint, len(read))
		for i := range read {
			e := read[i]
			eps[i] = &e
		}
		if err := fn(eps); err != nil {
			return err
		}
		if len(eps) == 0 {
			return nil
		}
		hs := make([]sqlrow.HealthRow, len(eps))
		for i, e := range eps {
			if hs[i], err = sqlrow.NewHealthRow(read[i].ID, e); err != nil {
				return err
			}
		}
		out, err = saveHealth(ctx, tx, hs, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TakeProbe implements store.EndpointStore with one conditional UPDATE (its
// own transaction). It does not change the endpoint's version. Of concurrent callers for a due probe, on any nodes
// (with hold after now), exactly one changes the row and reports true. An
// unknown endpoint reports false.
func (s *backend) TakeProbe(ctx context.Context, endpointID string, now, hold time.Time) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	var took bool
	err := s.retrying(ctx, func() error {
		tag, err := s.exec(ctx, takeProbeSQL, endpointID, sqlrow.UnixMS(now), sqlrow.UnixMS(hold))
		took = err == nil && tag.RowsAffected() > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("take probe of %s: %w", endpointID, s.err(err))
	}
	return took, nil
}
