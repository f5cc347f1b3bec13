// Package endpoint holds Herald's endpoints: an account's delivery URL with
// its circuit health (Endpoint), and the installation's key endpoint IDs
// are made with (Key).
package endpoint

import (
	"time"

	"github.com/herald-events/herald/internal/health"
)

// Endpoint is a delivery URL of one account and its circuit state.
// Subscriptions of an account that share a URL share its endpoint; two
// accounts delivering to one URL have an endpoint (a circuit) each.
type Endpoint struct {
	ID        string
	AccountID string
	URL       string
	Health    health.Health
	// RateLimit is the endpoint's rate limit; nil: none (ratelimit.go).
	// It is written with the health (store.EndpointStore.ModifyEndpoints).
	RateLimit *RateLimit
	CreatedAt time.Time
	UpdatedAt time.Time
	// Version is the endpoint version of its last health write (read only:
	// the store assigns it; see store.EndpointStore.EndpointChanges).
	Version int64
}
