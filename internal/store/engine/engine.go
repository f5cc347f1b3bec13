// Package engine is Herald's store: the store contract (internal/store)
// implemented once, in Go, above a driver (internal/store/driver) that
// runs each SQL dialect's statements. Every rule of what the store reads
// and writes, and in which transaction, lives here; the SQLite and
// PostgreSQL drivers hold their statements, in queries/*.sql files under
// the names this package uses (Queries lists them), and the mechanisms of
// their databases.
//
// The store moves here a part at a time: a Store serves the methods
// already moved (sessions.go, …) and hands the others to the legacy
// implementation it is given (Legacy), until none is left.
package engine

import (
	"context"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
)

// Legacy is what a driver's package still implements of store.Store
// itself: the methods not moved here yet.
type Legacy interface {
	store.AccountStore
	store.SubscriptionStore
	store.QueueStore
	store.DeliveryStore
	store.EndpointStore
	store.StatsStore
	store.JobStore
	Capabilities() store.Capabilities
	Ping(ctx context.Context) error
	Close() error
}

// Store is store.Store over a driver.
type Store struct {
	Legacy
	drv driver.Driver
}

// New returns the store over drv, handing what is not moved yet to
// legacy. Closing the store closes legacy, which owns drv's database.
func New(drv driver.Driver, legacy Legacy) *Store {
	return &Store{Legacy: legacy, drv: drv}
}

var _ store.Store = (*Store)(nil)
