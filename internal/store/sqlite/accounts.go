package sqlite

import (
	"context"
	"fmt"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	accountExistsSQL = `SELECT 1 FROM accounts WHERE id = ?`
	accountByNameSQL = `SELECT id FROM accounts WHERE name = ?`
	getAccountSQL    = `SELECT ` + sqlrow.AccountCols + ` FROM accounts WHERE id = ?`
	insertAccountSQL = `INSERT INTO accounts (` + sqlrow.AccountCols + `) VALUES (?, ?, ?, ?, ?)`
	updateAccountSQL = `UPDATE accounts SET name = ?, settings = ?, updated_at = ? WHERE id = ?`
	deleteAccountSQL = `DELETE FROM accounts WHERE id = ?`

	accountSubscribedSQL = `SELECT 1 FROM subscriptions WHERE account_id = ? LIMIT 1`
	deleteAccountKeysSQL = `DELETE FROM api_keys WHERE account_id = ?`

	// accountListKey is the account list's order, that of the index
	// accounts_list (the expression must stay the same word for word for
	// SQLite to use it): "0acc_default" for account.DefaultID, "1" then the
	// ID for every other account.
	accountListKey = `((id <> 'acc_default') || id)`

	// bumpAuthSQL advances the auth version; every account and key write
	// runs it once.
	bumpAuthSQL = `UPDATE counters SET value = value + 1 WHERE name = 'auth' RETURNING value`
	authSQL     = `SELECT value FROM counters WHERE name = 'auth'`

	insertKeySQL  = `INSERT INTO api_keys (` + sqlrow.KeyCols + `) VALUES (?, ?, ?, ?, ?, ?, ?)`
	getKeySQL     = `SELECT ` + sqlrow.KeyCols + ` FROM api_keys WHERE id = ?`
	keyByHashSQL  = `SELECT ` + sqlrow.KeyCols + ` FROM api_keys WHERE hash = ?`
	keyExistsSQL  = `SELECT 1 FROM api_keys WHERE id = ?`
	hashExistsSQL = `SELECT 1 FROM api_keys WHERE hash = ?`
	anyKeySQL     = `SELECT 1 FROM api_keys LIMIT 1`
	deleteKeySQL  = `DELETE FROM api_keys WHERE id = ?`
)

// listAccountsSQL selects cols of the accounts after a list key
// (accountListKey), in list order, with a LIMIT parameter last.
func listAccountsSQL(cols string) string {
	return `SELECT ` + cols + ` FROM accounts WHERE ` + accountListKey + ` > ? ORDER BY ` + accountListKey + ` LIMIT ?`
}

// accountListAfter is the list key (accountListKey) a cursor names: ""
// before the first account.
func accountListAfter(cursor string) string {
	switch cursor {
	case "":
		return ""
	case account.DefaultID:
		return "0" + cursor
	}
	return "1" + cursor
}

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

// bumpAuth advances the auth version in the write transaction.
func (w *writer) bumpAuth() error {
	var v int64
	if err := w.scanRow(bumpAuthSQL, nil, &v); err != nil {
		return fmt.Errorf("advance the auth version: %w", err)
	}
	return nil
}

// CreateAccount implements store.AccountStore.
func (s *backend) CreateAccount(ctx context.Context, a account.Account) error {
	args := sqlrow.AccountValues(&a)
	return s.write(ctx, func(w *writer) error {
		var other string
		switch err := w.scanRow(accountByNameSQL, []any{a.Name}, &other); {
		case err == nil:
			return fmt.Errorf("account name %q: %w", a.Name, store.ErrNameTaken)
		case !isNoRows(err):
			return err
		}
		switch ok, err := w.exists(accountExistsSQL, a.ID); {
		case err != nil:
			return err
		case ok:
			return fmt.Errorf("account %s already exists: %w", a.ID, store.ErrConflict)
		}
		if err := w.bumpAuth(); err != nil {
			return err
		}
		if _, err := w.exec(insertAccountSQL, args...); err != nil {
			return fmt.Errorf("insert account %s: %w", a.ID, err)
		}
		return nil
	})
}

// GetAccount implements store.AccountStore.
func (s *backend) GetAccount(ctx context.Context, id string) (account.Account, error) {
	a, err := sqlrow.ScanAccount(s.readRow(ctx, getAccountSQL, id))
	if isNoRows(err) {
		return account.Account{}, fmt.Errorf("account %s: %w", id, store.ErrNotFound)
	}
	return a, s.readErr(err)
}

// ListAccounts implements store.AccountStore: account.DefaultID first, then
// the others in ID order, each page an index seek (accounts_list); the
// cursor is the last ID of the previous page.
func (s *backend) ListAccounts(ctx context.Context, p store.Page) ([]account.Account, string, error) {
	if err := store.AccountCursorCheck(p.Cursor); err != nil {
		return nil, "", err
	}
	return readPage(ctx, s, p, listAccountsSQL(sqlrow.AccountBytes), listAccountsSQL(sqlrow.AccountCols),
		[]any{accountListAfter(p.Cursor)}, sqlrow.ScanAccount, func(a account.Account) string { return a.ID })
}

// UpdateAccount implements store.AccountStore: the name, the settings and
// UpdatedAt take a's values; the ID and CreatedAt stay.
func (s *backend) UpdateAccount(ctx context.Context, a account.Account) error {
	v := sqlrow.AccountValues(&a) // id, name, settings, created_at, updated_at
	return s.write(ctx, func(w *writer) error {
		var other string
		switch err := w.scanRow(accountByNameSQL, []any{a.Name}, &other); {
		case err == nil && other != a.ID:
			return fmt.Errorf("account name %q: %w", a.Name, store.ErrNameTaken)
		case err != nil && !isNoRows(err):
			return err
		}
		if err := w.bumpAuth(); err != nil {
			return err
		}
		n, err := w.execN(updateAccountSQL, v[1], v[2], v[4], v[0])
		if err != nil {
			return fmt.Errorf("update account %s: %w", a.ID, err)
		}
		if n == 0 {
			return fmt.Errorf("account %s: %w", a.ID, store.ErrNotFound)
		}
		return nil
	})
}

// DeleteAccount implements store.AccountStore. Whether the account still
// has subscriptions is read on the single writer, so no subscription can
// be created in it meanwhile.
func (s *backend) DeleteAccount(ctx context.Context, id string) error {
	if id == account.DefaultID {
		if s.closed.Load() {
			return store.ErrClosed
		}
		return fmt.Errorf("account %s cannot be deleted: %w", id, store.ErrConflict)
	}
	return s.write(ctx, func(w *writer) error {
		if err := w.accountExists(id); err != nil {
			return err
		}
		switch ok, err := w.exists(accountSubscribedSQL, id); {
		case err != nil:
			return fmt.Errorf("read the subscriptions of account %s: %w", id, err)
		case ok:
			return fmt.Errorf("account %s still has subscriptions: %w", id, store.ErrConflict)
		}
		if err := w.bumpAuth(); err != nil {
			return err
		}
		if _, err := w.exec(deleteAccountKeysSQL, id); err != nil {
			return fmt.Errorf("delete the keys of account %s: %w", id, err)
		}
		if _, err := w.exec(deleteAccountSQL, id); err != nil {
			return fmt.Errorf("delete account %s: %w", id, err)
		}
		return nil
	})
}

// CreateKey implements store.AccountStore. An empty AccountID is
// account.DefaultID.
func (s *backend) CreateKey(ctx context.Context, k account.Key) error {
	args := sqlrow.KeyValues(&k)
	return s.write(ctx, func(w *writer) error { return insertKey(w, &k, args) })
}

// CreateFirstKey implements store.AccountStore. The check and the insert
// run in one request of the single writer, which no other write
// interleaves, and one process owns the file: of concurrent calls exactly
// one creates its key.
func (s *backend) CreateFirstKey(ctx context.Context, k account.Key) (bool, error) {
	args := sqlrow.KeyValues(&k)
	var created bool
	err := s.write(ctx, func(w *writer) error {
		created = false
		switch found, err := w.exists(anyKeySQL); {
		case err != nil:
			return fmt.Errorf("read the keys: %w", err)
		case found:
			return nil
		}
		if err := insertKey(w, &k, args); err != nil {
			return err
		}
		created = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return created, nil
}

// insertKey inserts k (args: sqlrow.KeyValues) after checking its account
// exists and neither its ID nor its hash does.
func insertKey(w *writer, k *account.Key, args []any) error {
	if err := w.accountExists(account.OrDefault(k.AccountID)); err != nil {
		return err
	}
	switch ok, err := w.exists(keyExistsSQL, k.ID); {
	case err != nil:
		return err
	case ok:
		return fmt.Errorf("key %s already exists: %w", k.ID, store.ErrConflict)
	}
	switch ok, err := w.exists(hashExistsSQL, k.Hash); {
	case err != nil:
		return err
	case ok:
		return fmt.Errorf("key %s: its hash is another key's: %w", k.ID, store.ErrConflict)
	}
	if err := w.bumpAuth(); err != nil {
		return err
	}
	if _, err := w.exec(insertKeySQL, args...); err != nil {
		return fmt.Errorf("insert key %s: %w", k.ID, err)
	}
	return nil
}

// KeyByHash implements store.AccountStore.
func (s *backend) KeyByHash(ctx context.Context, hash []byte) (account.Key, error) {
	k, err := sqlrow.ScanKey(s.readRow(ctx, keyByHashSQL, hash))
	if isNoRows(err) {
		return account.Key{}, fmt.Errorf("key: %w", store.ErrNotFound)
	}
	return k, s.readErr(err)
}

// GetKey implements store.AccountStore.
func (s *backend) GetKey(ctx context.Context, id string) (account.Key, error) {
	k, err := sqlrow.ScanKey(s.readRow(ctx, getKeySQL, id))
	if isNoRows(err) {
		return account.Key{}, fmt.Errorf("key %s: %w", id, store.ErrNotFound)
	}
	return k, s.readErr(err)
}

// ListKeys implements store.AccountStore: in ID order; the cursor is the
// last ID of the previous page. An empty accountID is account.DefaultID; an
// account that does not exist has no keys.
func (s *backend) ListKeys(ctx context.Context, accountID string, p store.Page) ([]account.Key, string, error) {
	if err := store.KeyCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	sizes, rows, args := listSQL("api_keys", sqlrow.KeyBytes, sqlrow.KeyCols, account.OrDefault(accountID), p.Cursor)
	return readPage(ctx, s, p, sizes, rows, args, sqlrow.ScanKey, func(k account.Key) string { return k.ID })
}

// DeleteKey implements store.AccountStore.
func (s *backend) DeleteKey(ctx context.Context, id string) error {
	return s.write(ctx, func(w *writer) error {
		if err := w.bumpAuth(); err != nil {
			return err
		}
		n, err := w.execN(deleteKeySQL, id)
		if err != nil {
			return fmt.Errorf("delete key %s: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("key %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}

// AuthVersion implements store.AccountStore, on a read connection: it sees
// every write committed before it was called.
func (s *backend) AuthVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.readRow(ctx, authSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("auth version: %w", s.readErr(err))
	}
	return v, nil
}
