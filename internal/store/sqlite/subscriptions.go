package sqlite

import "fmt"

// Subscriptions live in the engine (internal/store/engine/subscriptions.go,
// catalog.go, states.go); what remains here serves the writer's own
// requests: a publish's catalog check, a Record's deactivation (states.go),
// a redrive's and a job's check that a subscription exists.
const (
	// bumpCatalogSQL advances the catalog version (a deactivation).
	bumpCatalogSQL = `UPDATE counters SET value = value + 1 WHERE name = 'catalog' RETURNING value`
	catalogSQL     = `SELECT value FROM counters WHERE name = 'catalog'`

	subscriptionExistsSQL = `SELECT 1 FROM subscriptions WHERE id = ?`
)

// bumpCatalog advances the catalog version in the write transaction and
// returns it; the writer's cached version follows.
func (w *writer) bumpCatalog() (int64, error) {
	var v int64
	if err := w.scanRow(bumpCatalogSQL, nil, &v); err != nil {
		return 0, fmt.Errorf("advance the catalog version: %w", err)
	}
	w.catalogVersion = v
	return v, nil
}

// currentCatalog returns the catalog version as of the write transaction,
// read once per transaction (and again after a request of the engine's,
// which may have advanced it: sqliteDriver.Write).
func (w *writer) currentCatalog() (int64, error) {
	if w.catalogVersion == 0 {
		if err := w.scanRow(catalogSQL, nil, &w.catalogVersion); err != nil {
			w.catalogVersion = 0
			return 0, fmt.Errorf("read the catalog version: %w", err)
		}
	}
	return w.catalogVersion, nil
}
