package store

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
)

// EndpointStore keeps the endpoints (delivery URLs) and their circuit
// health. An endpoint row lives while a subscription uses its URL: it is
// created with the first such subscription, with fresh health at a new
// endpoint version (so that a reader still holding the health of an
// earlier row with the same ID learns of the new one from
// EndpointChanges), and deleted with the last (see SubscriptionStore).
// Deliveries still to be attempted always belong to their subscription's
// endpoint; finished ones may name an endpoint that is gone.
type EndpointStore interface {
	// EndpointID returns the ID of an account's endpoint for a delivery
	// URL (an empty account is account.DefaultID): endpoint.Key.ID with the
	// installation's key, which the store keeps in its database, so that
	// every process on the database makes the same IDs. The store sets
	// every Subscription's EndpointID and DeadLetterEndpointID with it;
	// others call it to find the endpoint of a URL.
	EndpointID(accountID, url string) string
	// GetEndpoint returns one endpoint or ErrNotFound.
	GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	// ListEndpoints returns a page of an account's endpoints (of every
	// account when accountID is empty) in ID order after the cursor
	// (EndpointCursor), only those in state when it is not empty. An item's
	// bytes (MaxPageBytes): its URL and health window. The state is a
	// filter on the walk of the account's endpoints (an account has one
	// endpoint per distinct subscription URL), not an index of its own.
	ListEndpoints(ctx context.Context, accountID string, state health.State, p Page) ([]endpoint.Endpoint, string, error)
	// AllEndpoints returns every endpoint (the dispatcher loads their health
	// at start; there is one per distinct subscription URL).
	AllEndpoints(ctx context.Context) ([]endpoint.Endpoint, error)
	// EndpointChanges returns the endpoints whose health ModifyEndpoints
	// wrote after endpoint version since, and the version they bring the
	// reader to. Versions are committed in order, so a reader that asks
	// again from the returned version misses none. TakeProbe's hold is not
	// a change: it is the taker's business, and the others learn of the
	// probe from TakeProbe itself (they lose it) and from its outcome.
	EndpointChanges(ctx context.Context, since int64) ([]endpoint.Endpoint, int64, error)
	// ModifyEndpoints reads the endpoints with these IDs (unknown IDs are
	// skipped), locked against other writers (another node's
	// ModifyEndpoints or TakeProbe waits), calls fn with them, and writes
	// back the Health and UpdatedAt fn leaves, all in one transaction. It
	// returns the endpoints as written. An error from fn writes nothing and
	// is returned. The RateLimit fn leaves is written too (the endpoint's
	// rate limit changes at a new endpoint version, so every node adopts it
	// as it adopts health). fn must not call the store. fn is called even when no ID
	// is known (with no endpoints). When the transaction must run again (a
	// deadlock, or a shared write batch aborted by another request), fn is
	// called again with the endpoints read anew and only its last call's
	// changes are written: fn must only change eps and set (not accumulate)
	// whatever it hands back to its caller.
	ModifyEndpoints(ctx context.Context, ids []string, fn func(eps []*endpoint.Endpoint) error) ([]endpoint.Endpoint, error)
	// TakeProbe claims the right to send an endpoint's next probe: if its
	// Health.NextProbeAt is set and not after now, it moves NextProbeAt to
	// hold and reports true; otherwise it changes nothing and reports false.
	// Of several nodes racing for one probe, exactly one wins (given a hold
	// after now).
	TakeProbe(ctx context.Context, endpointID string, now, hold time.Time) (bool, error)
}

// TokenWant asks a store whose processes share endpoint rate limits
// (PostgreSQL's TakeTokens; the scheduling stage declares the interface,
// scheduling.SharedBuckets) for up to Want tokens of an endpoint's bucket.
type TokenWant struct {
	EndpointID string
	Want       int
}

// TokenGrant is what a take gave an endpoint.
type TokenGrant struct {
	EndpointID string
	Granted    int
	Left       float64
}
