package store

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/health"
)

// EndpointStore keeps the endpoints (delivery URLs) and their circuit
// health. Endpoint rows are created with the subscriptions that use them.
type EndpointStore interface {
	// GetEndpoint returns one endpoint or ErrNotFound.
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	// ListEndpoints returns endpoints in ID order after the cursor.
	ListEndpoints(ctx context.Context, p Page) ([]Endpoint, string, error)
	// AllEndpoints returns every endpoint (the dispatcher loads their health
	// at start; there is one per distinct subscription URL).
	AllEndpoints(ctx context.Context) ([]Endpoint, error)
	// SaveHealth writes the health (and UpdatedAt) of existing endpoints,
	// group-committed; unknown IDs are ignored.
	SaveHealth(ctx context.Context, eps []Endpoint) error
}

// Endpoint is a delivery URL and its circuit state. Subscriptions that share
// a URL share its endpoint.
type Endpoint struct {
	ID        string
	URL       string
	Health    health.Health
	CreatedAt time.Time
	UpdatedAt time.Time
}
