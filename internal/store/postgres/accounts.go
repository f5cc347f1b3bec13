package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
)

// Accounts and API keys are the engine's (internal/store/engine/accounts.go,
// queries/accounts.sql). What stays here serves the legacy subscription
// writes.

// accountExistsSQL locks the account's row in key share mode until the
// transaction ends (an update of its name or settings is not held up):
// DeleteAccount, which deletes the row before it looks for the account's
// subscriptions, waits for the caller and then sees what it inserted, or
// the caller waits and finds the account gone.
const accountExistsSQL = `SELECT 1 FROM accounts WHERE id = $1 FOR KEY SHARE`

// accountExists returns ErrNotFound unless the account exists, and holds
// its row until tx ends (accountExistsSQL).
func accountExists(ctx context.Context, tx pgx.Tx, id string) error {
	var one int
	switch err := tx.QueryRow(ctx, accountExistsSQL, id).Scan(&one); {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("account %s: %w", id, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("read account %s: %w", id, err)
	}
	return nil
}
