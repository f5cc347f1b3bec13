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
	"log/slog"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
)

// Legacy is what a driver's package still implements of store.Store
// itself: the methods not moved here yet, grouped by the part of the
// store they belong to.
type Legacy interface {
	Capabilities() store.Capabilities
	Ping(ctx context.Context) error
	Close() error
}

// Options are what the engine needs to know of the store it serves,
// which the driver's package reads or is given at open.
type Options struct {
	// Logger receives the engine's warnings. Nil discards them.
	Logger *slog.Logger
	// OnQueued is called after a commit with the subscriptions whose
	// deliveries became receivable (store.Options.OnQueued); nil: none.
	OnQueued func(subscriptionIDs []string)
	// MaxSubscriptionsPerAccount bounds the subscriptions of one account
	// (store.SubscriptionLimitError); 0: no limit.
	MaxSubscriptionsPerAccount int
	// EndpointKey is the installation's, read at open: endpoint IDs are
	// derived from it (endpoint.Key.ID).
	EndpointKey endpoint.Key
	// Clock is the time of the methods that take none (DueEndpoints,
	// NextDue on a store whose leases expire). Default clock.Real{}.
	Clock clock.Clock
	// Capabilities are the store's (store.Capabilities): whether it is
	// shared, whether leases expire.
	Capabilities store.Capabilities
}

// Store is store.Store over a driver.
type Store struct {
	Legacy
	drv  driver.Driver
	opts Options
	log  *slog.Logger
	w    *writer

	// TestSignals are emitted for tests (off unless initialized).
	TestSignals Signals
}

// New returns the store over drv, handing what is not moved yet to
// legacy. Closing the store closes legacy, which owns drv's database.
func New(drv driver.Driver, legacy Legacy, opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{Legacy: legacy, drv: drv, opts: opts, log: log}
	s.w = newWriter(s, drv.GroupCommit())
	return s
}

// Close stops the writer once every write queued is answered (later
// writes fail with store.ErrClosed), then closes the driver's database
// (Legacy). It may be called again.
func (s *Store) Close() error {
	s.w.close()
	return s.Legacy.Close()
}

var _ store.Store = (*Store)(nil)
