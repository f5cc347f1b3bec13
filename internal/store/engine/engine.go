// Package engine is Herald's store: the store contract (internal/store)
// implemented once, in Go, above a driver (internal/store/driver) that
// runs each SQL dialect's statements. Every rule of what the store reads
// and writes, and in which transaction, lives here; the SQLite and
// PostgreSQL drivers hold their statements, in queries/*.sql files under
// the names this package uses (Queries lists them), and the mechanisms of
// their databases.
//
// Writes go through one group-commit writer (writer.go, batch.go) that
// both drivers use: Publish and Record (publish.go, record.go, staged.go)
// always, every other write too on a driver with one write connection.
package engine

import (
	"context"
	"log/slog"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
)

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
	drv  driver.Driver
	opts Options
	log  *slog.Logger
	w    *writer

	// TestSignals are emitted for tests (off unless initialized).
	TestSignals Signals
}

// New returns the store over drv and starts its writer. Closing the store
// closes drv.
func New(drv driver.Driver, opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{drv: drv, opts: opts, log: log}
	s.w = newWriter(s, drv.GroupCommit())
	return s
}

// Close stops the writer once every write queued is answered (later
// writes fail with store.ErrClosed), then closes the driver's database.
// It may be called again.
func (s *Store) Close() error {
	s.w.close()
	return s.drv.Close()
}

// Capabilities implements store.Store: the driver's (Options).
func (s *Store) Capabilities() store.Capabilities { return s.opts.Capabilities }

// Ping implements store.Store: store.ErrClosed once closed, else whether
// the database answers (the driver's Ping).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.checkOpen(); err != nil {
		return err
	}
	return s.drv.Ping(ctx)
}

var _ store.Store = (*Store)(nil)
