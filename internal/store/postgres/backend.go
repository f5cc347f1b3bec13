package postgres

import (
	"context"
	"errors"

	"github.com/herald-events/herald/internal/store"
)

// Name is how store.Open names this backend (store.Backend.Name).
const Name = "PostgreSQL"

// capabilities are every Store's: nodes share the database, and a lease
// expires by time.
var capabilities = store.Capabilities{Shared: true, LeasesExpire: true}

// init registers the store as store.Open's postgres:// and postgresql://
// URLs.
func init() {
	store.Register(store.Backend{
		Name:         Name,
		Schemes:      []string{"postgres", "postgresql"},
		Usage:        "a postgres:// URL",
		Capabilities: capabilities,
		Open: func(ctx context.Context, url string, o store.Options) (store.Store, error) {
			s, err := Open(ctx, url, optionsOf(o))
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Descriptors: func(o store.Options) int { return optionsOf(o).Descriptors() },
	})
}

// optionsOf returns the Options of a store opened by store.Open with o:
// the settings every backend takes and the pool's; the rest keep their
// defaults.
func optionsOf(o store.Options) Options {
	return Options{Logger: o.Logger, Clock: o.Clock, OnQueued: o.OnQueued, MaxSubscriptionsPerAccount: o.MaxSubscriptionsPerAccount,
		MaxConns: o.MaxConns, StatementTimeout: o.StatementTimeout}
}

// Opens reports whether value is one of this backend's URLs (store.Parse),
// well-formed or not: what `herald migrate` and `herald bench` ask of
// their --store.
func Opens(value string) bool {
	b, err := store.Parse(value)
	var syntax *store.URLSyntaxError
	return err == nil && b.Name == Name || errors.As(err, &syntax) && syntax.Backend == Name
}
