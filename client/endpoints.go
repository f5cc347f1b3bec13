package client

import (
	"context"
	"time"
)

// Endpoint is a delivery URL of an account and its circuit state (schema
// Endpoint; docs/endpoints.md#endpoint-health).
type Endpoint struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// State is "enabled", "probation", "disabled" or "frozen".
	State               string     `json:"state"`
	StateReason         *string    `json:"state_reason"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	WindowAttempts      int        `json:"window_attempts"`
	WindowFailures      int        `json:"window_failures"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	DisabledAt          *time.Time `json:"disabled_at"`
	FrozenAt            *time.Time `json:"frozen_at"`
	NextProbeAt         *time.Time `json:"next_probe_at"`
	ProbationDelay      *Duration  `json:"probation_delay"`
	ConcurrencyLimit    *int       `json:"concurrency_limit"`
	InFlight            int        `json:"in_flight"`
	RateLimit           *RateLimit `json:"rate_limit"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           *time.Time `json:"updated_at"`
}

// RateLimit is an endpoint's rate limit (schema RateLimit;
// docs/flow-control.md).
type RateLimit struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// EndpointUpdate is the body of Endpoints.Update (schema EndpointUpdate):
// RateLimit nil removes the endpoint's rate limit.
type EndpointUpdate struct {
	RateLimit *RateLimit `json:"rate_limit"`
}

// EndpointListParams are the query of Endpoints.List: State filters by
// state.
type EndpointListParams struct {
	ListParams
	State string
}

// EndpointsService calls /v1/endpoints.
type EndpointsService struct{ c *Client }

// List returns one page of the account's endpoints (GET /v1/endpoints).
func (s *EndpointsService) List(ctx context.Context, p EndpointListParams) (*Page[Endpoint], error) {
	q := p.ListParams.values()
	setIf(q, "state", p.State)
	return doJSON[Page[Endpoint]](ctx, s.c, call{op: opListEndpoints, query: q})
}

// Get returns the endpoint id (GET /v1/endpoints/{id}).
func (s *EndpointsService) Get(ctx context.Context, id string) (*Endpoint, error) {
	return doJSON[Endpoint](ctx, s.c, call{op: opGetEndpoint, ids: []string{id}})
}

// Update sets the endpoint's rate limit (PATCH /v1/endpoints/{id}).
func (s *EndpointsService) Update(ctx context.Context, id string, in EndpointUpdate) (*Endpoint, error) {
	return doJSON[Endpoint](ctx, s.c, call{op: opUpdateEndpoint, ids: []string{id}, body: in})
}

// Enable enables a disabled, probation or frozen endpoint (POST
// /v1/endpoints/{id}/enable).
func (s *EndpointsService) Enable(ctx context.Context, id string) (*Endpoint, error) {
	return doJSON[Endpoint](ctx, s.c, call{op: opEnableEndpoint, ids: []string{id}})
}

// Freeze stops every attempt to the endpoint until Enable (POST
// /v1/endpoints/{id}/freeze).
func (s *EndpointsService) Freeze(ctx context.Context, id string) (*Endpoint, error) {
	return doJSON[Endpoint](ctx, s.c, call{op: opFreezeEndpoint, ids: []string{id}})
}
