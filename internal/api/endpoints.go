package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/strictjson"
)

// endpointJSON is the endpoint resource: a delivery URL and its circuit.
type endpointJSON struct {
	ID                  string  `json:"id"`
	URL                 string  `json:"url"`
	State               string  `json:"state"`
	StateReason         *string `json:"state_reason"`
	ConsecutiveFailures int64   `json:"consecutive_failures"`
	WindowAttempts      int64   `json:"window_attempts"`
	WindowFailures      int64   `json:"window_failures"`
	LastSuccessAt       *Time   `json:"last_success_at"`
	LastFailureAt       *Time   `json:"last_failure_at"`
	DisabledAt          *Time   `json:"disabled_at"`
	FrozenAt            *Time   `json:"frozen_at"`
	NextProbeAt         *Time   `json:"next_probe_at"`
	ProbationDelay      *string `json:"probation_delay"`
	ConcurrencyLimit    *int    `json:"concurrency_limit"`
	// RateLimit is null when the endpoint has none.
	RateLimit *endpoint.RateLimit `json:"rate_limit"`
	InFlight  int                 `json:"in_flight"`
	CreatedAt Time                `json:"created_at"`
	UpdatedAt *Time               `json:"updated_at"`
}

// endpointView returns the endpoint as the scheduler sees it now when it
// knows it (its health is saved every second), else as stored.
func (s *Server) endpointView(e endpoint.Endpoint) endpointJSON {
	st := endpoint.StatusOf(e, s.Live, s.HealthWindow, s.Clock.Now())
	h := st.Health
	out := endpointJSON{
		ID: st.ID, URL: redact.URL(st.URL), State: string(h.State), StateReason: optString(h.Reason),
		ConsecutiveFailures: h.ConsecutiveFailures,
		WindowAttempts:      st.WindowAttempts, WindowFailures: st.WindowFailures,
		LastSuccessAt: optTime(h.LastSuccessAt), LastFailureAt: optTime(h.LastFailureAt),
		DisabledAt: optTime(h.DisabledAt), FrozenAt: optTime(h.FrozenAt), NextProbeAt: optTime(h.NextProbeAt),
		InFlight: st.InFlight, CreatedAt: timestamp(st.CreatedAt), UpdatedAt: optTime(st.UpdatedAt),
		RateLimit: st.RateLimit,
	}
	if st.Held {
		out.ConcurrencyLimit = &st.Limit
	}
	if h.ProbationDelay > 0 {
		d := h.ProbationDelay.String()
		out.ProbationDelay = &d
	}
	return out
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	eps, next, err := s.Store.ListEndpoints(r.Context(), accountOf(r), health.State(stateFilter.in(r)), p)
	if err != nil {
		s.storeError(w, r, err, "endpoint")
		return
	}
	writeList(w, eps, next, s.endpointView)
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request) {
	ep, ok := s.ownEndpoint(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.endpointView(ep))
}

// updateEndpoint answers PATCH /v1/endpoints/{id} (endpoint.Input: the
// rate limit) with the endpoint as it now is; a bad value is a 400 naming
// its field, and nothing changes.
func (s *Server) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.ownEndpoint(w, r); !ok {
		return
	}
	var in endpoint.Input
	if !decodeBody(w, r, &in) {
		return
	}
	ep, err := s.Control.UpdateEndpoint(r.Context(), r.PathValue("id"), in)
	var ie *strictjson.Error
	switch {
	case errors.As(err, &ie):
		invalid(w, ie.Field, ie.Detail)
	case err != nil:
		s.storeError(w, r, err, "endpoint")
	default:
		writeJSON(w, http.StatusOK, s.endpointView(ep))
	}
}

// changeEndpoint answers an operator's change of an endpoint's circuit,
// made by change (control.Service's EnableEndpoint or FreezeEndpoint), with
// the endpoint as it now is.
func (s *Server) changeEndpoint(change func(ctx context.Context, id string) (endpoint.Endpoint, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.ownEndpoint(w, r); !ok {
			return
		}
		ep, err := change(r.Context(), r.PathValue("id"))
		if err != nil {
			s.storeError(w, r, err, "endpoint")
			return
		}
		writeJSON(w, http.StatusOK, s.endpointView(ep))
	}
}
