package sqlite

import (
	"fmt"

	"github.com/herald-events/herald/internal/store"
)

// Accounts and API keys are the engine's (internal/store/engine/accounts.go,
// queries/accounts.sql). What stays here serves the legacy subscription
// writes.

const accountExistsSQL = `SELECT 1 FROM accounts WHERE id = ?`

// exists runs query (a SELECT 1 …) and reports whether it found a row.
func (w *writer) exists(query string, args ...any) (bool, error) {
	var one int
	switch err := w.scanRow(query, args, &one); {
	case err == nil:
		return true, nil
	case isNoRows(err):
		return false, nil
	default:
		return false, err
	}
}

// accountExists returns an ErrNotFound error unless the account exists.
func (w *writer) accountExists(id string) error {
	ok, err := w.exists(accountExistsSQL, id)
	if err != nil {
		return fmt.Errorf("read account %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("account %s: %w", id, store.ErrNotFound)
	}
	return nil
}
