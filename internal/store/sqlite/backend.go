package sqlite

import (
	"context"
	"path/filepath"

	"github.com/herald-events/herald/internal/store"
)

// Name is how store.Open names this backend (store.Backend.Name).
const Name = "SQLite"

// FileName is the database file the store keeps in its data directory
// when it is opened by store.Open (store.Options.DataDir).
const FileName = "herald.db"

// capabilities are every Store's: one process owns the file (see the
// package comment), so the store is not shared and its leases last until
// they are released.
var capabilities = store.Capabilities{}

// init registers the store as store.Open's "sqlite".
func init() {
	store.Register(store.Backend{
		Name:         Name,
		Words:        []string{"sqlite"},
		Usage:        "sqlite",
		Capabilities: capabilities,
		Open: func(ctx context.Context, _ string, o store.Options) (store.Store, error) {
			s, err := Open(ctx, filepath.Join(o.DataDir, FileName), optionsOf(o))
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Descriptors: func(o store.Options) int { return optionsOf(o).Descriptors() },
	})
}

// optionsOf returns the Options of a store opened by store.Open with o:
// the settings every backend takes; the rest keep their defaults.
func optionsOf(o store.Options) Options {
	return Options{Logger: o.Logger, OnQueued: o.OnQueued, MaxSubscriptionsPerAccount: o.MaxSubscriptionsPerAccount}
}
