package client

import (
	"context"
	"net/url"
	"time"
)

// PortalSessionInput is the body of PortalSessions.Create (schema
// PortalSessionRequest; docs/portal.md).
type PortalSessionInput struct {
	AccountID       string   `json:"account_id,omitempty"`
	SubscriptionIDs []string `json:"subscription_ids,omitempty"`
	// TTL is how long the link works, a Go duration string ("" for the
	// default).
	TTL string `json:"ttl,omitempty"`
}

// PortalSession is a one-time link to the subscriber portal (schema
// PortalSession).
type PortalSession struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PortalSessionsService calls /v1/portal-sessions.
type PortalSessionsService struct{ c *Client }

// Create makes a portal link (POST /v1/portal-sessions).
func (s *PortalSessionsService) Create(ctx context.Context, in PortalSessionInput) (*PortalSession, error) {
	return doJSON[PortalSession](ctx, s.c, call{op: opCreatePortalSession, body: in})
}

// Stats are delivery counts and latency per step (schema Stats).
type Stats struct {
	Step   string       `json:"step"`
	Series []StatsPoint `json:"series"`
}

// StatsPoint is one step of Stats.
type StatsPoint struct {
	At           time.Time `json:"at"`
	Delivered    int       `json:"delivered"`
	Failed       int       `json:"failed"`
	DeadLettered int       `json:"dead_lettered"`
	P50MS        float64   `json:"p50_ms"`
	P99MS        float64   `json:"p99_ms"`
}

// StatsParams are the query of Stats.Get: Window "1h", "24h" or "7d" (""
// for the default) and optional filters.
type StatsParams struct {
	Window         string
	SubscriptionID string
	EndpointID     string
}

// StatsService calls /v1/stats.
type StatsService struct{ c *Client }

// Get returns the account's delivery statistics (GET /v1/stats).
func (s *StatsService) Get(ctx context.Context, p StatsParams) (*Stats, error) {
	q := url.Values{}
	setIf(q, "window", p.Window)
	setIf(q, "subscription_id", p.SubscriptionID)
	setIf(q, "endpoint_id", p.EndpointID)
	return doJSON[Stats](ctx, s.c, call{op: opGetStats, query: q})
}

// ValidationResult is the answer of Validation.Get.
type ValidationResult struct {
	Validated bool `json:"validated"`
}

// ValidationService calls /v1/validation, the public validation URL an
// endpoint is sent in a handshake (docs/endpoints.md#endpoint-validation).
type ValidationService struct{ c *Client }

// Get confirms a subscription's endpoint validation with the code of its
// validation URL (GET /v1/validation/{id}?code=…); no key is sent.
func (s *ValidationService) Get(ctx context.Context, id, code string) (*ValidationResult, error) {
	q := url.Values{}
	setIf(q, "code", code)
	return doJSON[ValidationResult](ctx, s.c, call{op: opConfirmValidation, ids: []string{id}, query: q})
}
