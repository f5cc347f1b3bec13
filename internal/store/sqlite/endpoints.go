package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

const (
	endpointCols = `id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at`

	getEndpointSQL   = `SELECT ` + endpointCols + ` FROM endpoints WHERE id = ?`
	listEndpointsSQL = `SELECT ` + endpointCols + ` FROM endpoints WHERE id > ? ORDER BY id LIMIT ?`
	allEndpointsSQL  = `SELECT ` + endpointCols + ` FROM endpoints ORDER BY id`

	saveHealthSQL = `UPDATE endpoints SET state = ?, consecutive_failures = ?, health_window = ?,
	first_attempt_at = ?, last_success_at = ?, last_failure_at = ?, disabled_at = ?, frozen_at = ?,
	next_probe_at = ?, probation_delay_ms = ?, updated_at = ?
WHERE id = ?`
)

func scanEndpoint(sc scanner) (store.Endpoint, error) {
	var e store.Endpoint
	var h = &e.Health
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

func healthArgs(e *store.Endpoint) ([]any, error) {
	h := &e.Health
	window, err := json.Marshal(h.Window)
	if err != nil {
		return nil, err
	}
	state := h.State
	if state == "" {
		state = health.Enabled
	}
	return []any{string(state), h.ConsecutiveFailures, string(window), ms(h.FirstAttemptAt), ms(h.LastSuccessAt),
		ms(h.LastFailureAt), ms(h.DisabledAt), ms(h.FrozenAt), ms(h.NextProbeAt), h.ProbationDelay.Milliseconds(),
		ms(e.UpdatedAt), e.ID}, nil
}

// GetEndpoint implements store.EndpointStore.
func (s *Store) GetEndpoint(ctx context.Context, id string) (store.Endpoint, error) {
	e, err := scanEndpoint(s.readRow(ctx, getEndpointSQL, id))
	if isNoRows(err) {
		return store.Endpoint{}, store.ErrNotFound
	}
	return e, s.readErr(err)
}

// ListEndpoints implements store.EndpointStore.
func (s *Store) ListEndpoints(ctx context.Context, p store.Page) ([]store.Endpoint, string, error) {
	size := p.Size()
	rows, err := s.readQuery(ctx, listEndpointsSQL, p.Cursor, size+1)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr(err)
	}
	out, next := page(out, size, func(e store.Endpoint) string { return e.ID })
	return out, next, nil
}

// AllEndpoints implements store.EndpointStore.
func (s *Store) AllEndpoints(ctx context.Context) ([]store.Endpoint, error) {
	rows, err := s.readQuery(ctx, allEndpointsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, s.readErr(rows.Err())
}

// SaveHealth implements store.EndpointStore.
func (s *Store) SaveHealth(ctx context.Context, eps []store.Endpoint) error {
	args := make([][]any, len(eps))
	for i := range eps {
		a, err := healthArgs(&eps[i])
		if err != nil {
			return err
		}
		args[i] = a
	}
	return s.write(ctx, func(w *writer) error {
		for _, a := range args {
			if _, err := w.exec(saveHealthSQL, a...); err != nil {
				return fmt.Errorf("save endpoint health: %w", err)
			}
		}
		return nil
	})
}
