package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/herald-events/herald/internal/store"
	_ "github.com/herald-events/herald/internal/store/backends" // the stores --store may name
)

// openStore opens the store cfg.Store names (store.Open: "sqlite", the
// embedded store in cfg.DataDir, or a postgres:// URL) with cfg's
// settings; onQueued hears of receivable deliveries.
func openStore(ctx context.Context, cfg Config, onQueued func([]string)) (store.Store, error) {
	st, err := store.Open(ctx, cfg.Store, store.Options{
		Logger: cfg.Logger.With("component", "store"), Clock: cfg.Clock, OnQueued: onQueued,
		MaxSubscriptionsPerAccount: cfg.MaxSubscriptionsPerAccount,
		DataDir:                    cfg.DataDir,
		MaxConns:                   cfg.DBMaxConns, StatementTimeout: cfg.DBStatementTimeout,
	})
	if err != nil {
		return nil, storeFlagError(err)
	}
	return st, nil
}

// checkStore is Validate's check of Store: nil, or the error of a value
// no backend opens (unknownStore) or of a malformed URL, naming --store
// (storeFlagError).
func checkStore(value string) error {
	_, err := store.Parse(value)
	return storeFlagError(err)
}

// unknownStore reports whether err is that of a value no backend opens.
func unknownStore(err error) bool {
	var u *store.UnknownURLError
	return errors.As(err, &u)
}

// storeFlagError names --store in an error of store.Parse or store.Open:
// `--store "…": want sqlite or a postgres:// URL` (the password redacted),
// `--store: not a URL: …` (without the URL, which may hold a password).
func storeFlagError(err error) error {
	var (
		unknown *store.UnknownURLError
		syntax  *store.URLSyntaxError
	)
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("--store %w", err)
	case errors.As(err, &syntax):
		return fmt.Errorf("--store: not a URL: %v", syntax.Err)
	}
	return err
}

// storeDescriptors is how many file descriptors the store c names holds at
// most with c's pool (store.Backend.Descriptors); the default store's when
// c names none (New takes the default; Validate refuses a value no backend
// opens).
func (c Config) storeDescriptors() int {
	b, err := store.Parse(c.Store)
	if err != nil {
		b, _ = store.Parse(DefaultConfig().Store)
	}
	return b.Descriptors(store.Options{MaxConns: c.DBMaxConns})
}
