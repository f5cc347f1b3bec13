package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

const (
	endpointCols = `id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at`

	getEndpointSQL   = `SELECT ` + endpointCols + ` FROM endpoints WHERE id = $1`
	listEndpointsSQL = `SELECT ` + endpointCols + ` FROM endpoints WHERE id > $1 ORDER BY id LIMIT $2`
	allEndpointsSQL  = `SELECT ` + endpointCols + ` FROM endpoints ORDER BY id`

	// saveHealthSQL writes one group commit's health rows; unknown IDs
	// match nothing.
	saveHealthSQL = `UPDATE endpoints AS e SET
	state = u.state, consecutive_failures = u.consecutive_failures, health_window = u.health_window,
	first_attempt_at = u.first_attempt_at, last_success_at = u.last_success_at,
	last_failure_at = u.last_failure_at, disabled_at = u.disabled_at, frozen_at = u.frozen_at,
	next_probe_at = u.next_probe_at, probation_delay_ms = u.probation_delay_ms, updated_at = u.updated_at
FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::int8[], $6::int8[], $7::int8[],
	$8::int8[], $9::int8[], $10::int8[], $11::int8[], $12::int8[])
	AS u(id, state, consecutive_failures, health_window, first_attempt_at, last_success_at, last_failure_at,
	disabled_at, frozen_at, next_probe_at, probation_delay_ms, updated_at)
WHERE e.id = u.id`
)

func scanEndpoint(sc scanner) (store.Endpoint, error) {
	var e store.Endpoint
	h := &e.Health
	var state, window string
	var first, success, failure, disabled, frozen, probe, delay, created, updated int64
	if err := sc.Scan(&e.ID, &e.URL, &state, &h.ConsecutiveFailures, &window, &first, &success,
		&failure, &disabled, &frozen, &probe, &delay, &created, &updated); err != nil {
		return store.Endpoint{}, err
	}
	if err := json.Unmarshal([]byte(window), &h.Window); err != nil {
		return store.Endpoint{}, fmt.Errorf("endpoint %s: health_window: %w", e.ID, err)
	}
	h.State = health.State(state)
	h.FirstAttemptAt, h.LastSuccessAt, h.LastFailureAt = fromMS(first), fromMS(success), fromMS(failure)
	h.DisabledAt, h.FrozenAt, h.NextProbeAt = fromMS(disabled), fromMS(frozen), fromMS(probe)
	h.ProbationDelay = time.Duration(delay) * time.Millisecond
	e.CreatedAt, e.UpdatedAt = fromMS(created), fromMS(updated)
	return e, nil
}

// healthRow is one endpoint's health as SaveHealth writes it.
type healthRow struct {
	id, state, window                                                   string
	failures, first, success, failure, disabled, frozen, probe, delayMS int64
	updated                                                             int64
}

func newHealthRow(e *store.Endpoint) (healthRow, error) {
	h := &e.Health
	window, err := json.Marshal(h.Window)
	if err != nil {
		return healthRow{}, fmt.Errorf("endpoint %s: health window: %w", e.ID, err)
	}
	state := h.State
	if state == "" {
		state = health.Enabled
	}
	return healthRow{
		id: e.ID, state: string(state), window: string(window), failures: h.ConsecutiveFailures,
		first: ms(h.FirstAttemptAt), success: ms(h.LastSuccessAt), failure: ms(h.LastFailureAt),
		disabled: ms(h.DisabledAt), frozen: ms(h.FrozenAt), probe: ms(h.NextProbeAt),
		delayMS: h.ProbationDelay.Milliseconds(), updated: ms(e.UpdatedAt),
	}, nil
}

// healthBatch writes the health rows of every SaveHealth request in batch
// in one statement; of several rows for one endpoint the last one wins.
func healthBatch(ctx context.Context, tx pgx.Tx, batch []*request) error {
	idx := map[string]int{}
	var rows []healthRow
	for _, r := range batch {
		for _, h := range r.health {
			if i, ok := idx[h.id]; ok {
				rows[i] = h
				continue
			}
			idx[h.id] = len(rows)
			rows = append(rows, h)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	id, state, window := make([]string, n), make([]string, n), make([]string, n)
	var cols [9][]int64
	for i := range cols {
		cols[i] = make([]int64, n)
	}
	for i, h := range rows {
		id[i], state[i], window[i] = h.id, h.state, h.window
		for j, v := range []int64{h.failures, h.first, h.success, h.failure, h.disabled, h.frozen, h.probe, h.delayMS, h.updated} {
			cols[j][i] = v
		}
	}
	if _, err := tx.Exec(ctx, saveHealthSQL, id, state, cols[0], window, cols[1], cols[2], cols[3],
		cols[4], cols[5], cols[6], cols[7], cols[8]); err != nil {
		return fmt.Errorf("save endpoint health: %w", err)
	}
	return nil
}

// GetEndpoint implements store.EndpointStore.
func (s *Store) GetEndpoint(ctx context.Context, id string) (store.Endpoint, error) {
	if err := s.checkOpen(); err != nil {
		return store.Endpoint{}, err
	}
	e, err := scanEndpoint(s.pool.QueryRow(ctx, getEndpointSQL, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, store.ErrNotFound)
	}
	return e, s.err(err)
}

// ListEndpoints implements store.EndpointStore: in ID order; the cursor is
// the last ID of the previous page.
func (s *Store) ListEndpoints(ctx context.Context, p store.Page) ([]store.Endpoint, string, error) {
	size := p.Size()
	out, err := queryAll(ctx, s, scanEndpoint, listEndpointsSQL, p.Cursor, size+1)
	if err != nil {
		return nil, "", err
	}
	out, next := page(out, size, func(e store.Endpoint) string { return e.ID })
	return out, next, nil
}

// AllEndpoints implements store.EndpointStore, in ID order.
func (s *Store) AllEndpoints(ctx context.Context) ([]store.Endpoint, error) {
	return queryAll(ctx, s, scanEndpoint, allEndpointsSQL)
}

// SaveHealth implements store.EndpointStore: one request of a group commit
// (with Publish and Record), written with one UPDATE per batch. Health is
// shared: the last write of an endpoint's health wins, whichever node made
// it.
func (s *Store) SaveHealth(ctx context.Context, eps []store.Endpoint) error {
	if len(eps) == 0 {
		return s.checkOpen()
	}
	rows := make([]healthRow, len(eps))
	for i := range eps {
		r, err := newHealthRow(&eps[i])
		if err != nil {
			return err
		}
		rows[i] = r
	}
	return s.write(ctx, &request{health: rows})
}
