package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Accounts and API keys. Every write of either runs in its own transaction
// that first advances the auth version (bumpAuthSQL), locking the counter's
// row until it ends: such writes are serialised across nodes, so the checks
// each makes before it writes (a name in use, the account of a key, "no key
// yet" for CreateFirstKey) still hold when it commits. A write that finds
// it has nothing to do rolls back, leaving the version alone.
const (
	bumpAuthSQL    = `UPDATE counters SET value = value + 1 WHERE name = 'auth' RETURNING value`
	authVersionSQL = `SELECT value FROM counters WHERE name = 'auth'`

	insertAccountSQL    = `INSERT INTO accounts (` + sqlrow.AccountCols + `) VALUES ($1, $2, $3, $4, $5)`
	getAccountSQL       = `SELECT ` + sqlrow.AccountCols + ` FROM accounts WHERE id = $1`
	accountByNameSQL    = `SELECT id FROM accounts WHERE name = $1`
	updateAccountSQL    = `UPDATE accounts SET name = $2, settings = $3, updated_at = $4 WHERE id = $1`
	deleteAccountSQL    = `DELETE FROM accounts WHERE id = $1`
	accountHasSubsSQL   = `SELECT EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $1)`
	deleteAccountKeySQL = `DELETE FROM api_keys WHERE account_id = $1`

	// listAccountsSQL: account.DefaultID first, then the others in ID order
	// (an ID of the ID alphabet sorts before "acc_default"), after the
	// cursor's place ($1, $2) in that order: a seek of the index
	// accounts_list, whose expression this repeats.
	listAccountsSQL = ` FROM accounts WHERE (id <> '` + account.DefaultID + `', id) > ($1::boolean, $2::text)
ORDER BY id <> '` + account.DefaultID + `', id LIMIT $3`

	insertKeySQL = `INSERT INTO api_keys (` + sqlrow.KeyCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	keyByHashSQL = `SELECT ` + sqlrow.KeyCols + ` FROM api_keys WHERE hash = $1`
	getKeySQL    = `SELECT ` + sqlrow.KeyCols + ` FROM api_keys WHERE id = $1`
	anyKeySQL    = `SELECT EXISTS (SELECT 1 FROM api_keys)`
	deleteKeySQL = `DELETE FROM api_keys WHERE id = $1`

	// accountExistsSQL locks the account's row in key share mode until the
	// transaction ends (an update of its name or settings is not held up):
	// DeleteAccount, which deletes the row before it looks for the
	// account's subscriptions, waits for the caller and then sees what it
	// inserted, or the caller waits and finds the account gone.
	accountExistsSQL = `SELECT 1 FROM accounts WHERE id = $1 FOR KEY SHARE`
)

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

// errNothingToDo rolls back an auth write that found nothing to write.
var errNothingToDo = errors.New("nothing to write")

// authWrite runs fn in a transaction (retried like inTx) after advancing
// the auth version, and tells the other nodes when it commits.
func (s *backend) authWrite(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var v int64
		if err := tx.QueryRow(ctx, bumpAuthSQL).Scan(&v); err != nil {
			return fmt.Errorf("advance the auth version: %w", err)
		}
		if err := s.notify(ctx, tx, changedAuth); err != nil {
			return err
		}
		return fn(tx)
	})
}

// AuthVersion implements store.AccountStore.
func (s *backend) AuthVersion(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	v, err := queryRow(ctx, s, func(sc scanner) (v int64, err error) {
		err = sc.Scan(&v)
		return
	}, authVersionSQL)
	if err != nil {
		return 0, fmt.Errorf("read the auth version: %w", s.err(err))
	}
	return v, nil
}

// CreateAccount implements store.AccountStore. ErrNameTaken (checked first)
// when another account has the name, ErrConflict when the ID exists.
func (s *backend) CreateAccount(ctx context.Context, a account.Account) error {
	err := s.authWrite(ctx, func(tx pgx.Tx) error {
		if err := nameFree(ctx, tx, a.Name, ""); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insertAccountSQL, sqlrow.AccountValues(&a)...)
		return err
	})
	return accountError(err, a)
}

// nameFree returns ErrNameTaken when an account other than id has name.
func nameFree(ctx context.Context, tx pgx.Tx, name, id string) error {
	var other string
	switch err := tx.QueryRow(ctx, accountByNameSQL, name).Scan(&other); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case other != id:
		return fmt.Errorf("account name %q: %w", name, store.ErrNameTaken)
	}
	return nil
}

// accountError maps the unique violations of an account write.
func accountError(err error, a account.Account) error {
	switch {
	case isUnique(err, "accounts_name_key"):
		return fmt.Errorf("account name %q: %w", a.Name, store.ErrNameTaken)
	case isUnique(err, "accounts_pkey"):
		return fmt.Errorf("account %s already exists: %w", a.ID, store.ErrConflict)
	}
	return err
}

// GetAccount implements store.AccountStore.
func (s *backend) GetAccount(ctx context.Context, id string) (account.Account, error) {
	if err := s.checkOpen(); err != nil {
		return account.Account{}, err
	}
	a, err := queryRow(ctx, s, sqlrow.ScanAccount, getAccountSQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return account.Account{}, fmt.Errorf("account %s: %w", id, store.ErrNotFound)
	}
	return a, s.err(err)
}

// ListAccounts implements store.AccountStore: account.DefaultID first, then
// the others in ID order, each page an index seek (accounts_list); the
// cursor is the last ID of the previous page.
func (s *backend) ListAccounts(ctx context.Context, p store.Page) ([]account.Account, string, error) {
	if err := store.AccountCursorCheck(p.Cursor); err != nil {
		return nil, "", err
	}
	// The cursor's place in the order: (false, "") before everything.
	args := []any{p.Cursor != "" && p.Cursor != account.DefaultID, p.Cursor}
	return readPage(ctx, s, p, `SELECT `+sqlrow.AccountBytes+listAccountsSQL, `SELECT `+sqlrow.AccountCols+listAccountsSQL,
		args, sqlrow.ScanAccount, func(a account.Account) string { return a.ID })
}

// UpdateAccount implements store.AccountStore: the name, the settings and
// UpdatedAt take a's values. ErrNotFound, ErrNameTaken.
func (s *backend) UpdateAccount(ctx context.Context, a account.Account) error {
	err := s.authWrite(ctx, func(tx pgx.Tx) error {
		if err := nameFree(ctx, tx, a.Name, a.ID); err != nil {
			return err
		}
		v := sqlrow.AccountValues(&a) // id, name, settings, created_at, updated_at
		tag, err := tx.Exec(ctx, updateAccountSQL, v[0], v[1], v[2], v[4])
		if err == nil && tag.RowsAffected() == 0 {
			return fmt.Errorf("account %s: %w", a.ID, store.ErrNotFound)
		}
		return err
	})
	return accountError(err, a)
}

// DeleteAccount implements store.AccountStore. The account's row is deleted
// before its subscriptions are looked for: a CreateSubscription in it that
// is under way holds the row (accountExists), so the delete waits for it
// and then sees its subscription, and one that comes later finds the
// account gone.
func (s *backend) DeleteAccount(ctx context.Context, id string) error {
	if id == account.DefaultID {
		if err := s.checkOpen(); err != nil {
			return err
		}
		return fmt.Errorf("account %s cannot be deleted: %w", id, store.ErrConflict)
	}
	return s.authWrite(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, deleteAccountSQL, id)
		switch {
		case err != nil:
			return fmt.Errorf("delete account %s: %w", id, err)
		case tag.RowsAffected() == 0:
			return fmt.Errorf("account %s: %w", id, store.ErrNotFound)
		}
		var has bool
		if err := tx.QueryRow(ctx, accountHasSubsSQL, id).Scan(&has); err != nil {
			return fmt.Errorf("delete account %s: %w", id, err)
		}
		if has {
			return fmt.Errorf("account %s still has subscriptions: %w", id, store.ErrConflict)
		}
		if _, err := tx.Exec(ctx, deleteAccountKeySQL, id); err != nil {
			return fmt.Errorf("delete the keys of account %s: %w", id, err)
		}
		return nil
	})
}

// CreateKey implements store.AccountStore. An empty AccountID is
// account.DefaultID. ErrNotFound when the account does not exist, ErrConflict
// when the ID or the hash exists.
func (s *backend) CreateKey(ctx context.Context, k account.Key) error {
	return keyError(s.authWrite(ctx, func(tx pgx.Tx) error { return insertKey(ctx, tx, &k) }), k)
}

// CreateFirstKey implements store.AccountStore: under the auth version's
// row lock (see authWrite), so of several nodes racing on one database the
// first to take the lock inserts its key and the others, once it commits,
// find a key and write nothing.
func (s *backend) CreateFirstKey(ctx context.Context, k account.Key) (bool, error) {
	err := s.authWrite(ctx, func(tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, anyKeySQL).Scan(&found); err != nil {
			return fmt.Errorf("look for keys: %w", err)
		}
		if found {
			return errNothingToDo
		}
		return insertKey(ctx, tx, &k)
	})
	if errors.Is(err, errNothingToDo) {
		return false, nil
	}
	if err != nil {
		return false, keyError(err, k)
	}
	return true, nil
}

// insertKey inserts k in tx if its account exists.
func insertKey(ctx context.Context, tx pgx.Tx, k *account.Key) error {
	if err := accountExists(ctx, tx, account.OrDefault(k.AccountID)); err != nil {
		return err
	}
	hash := k.Hash
	if hash == nil {
		hash = []byte{} // NOT NULL; a key always has one
	}
	v := sqlrow.KeyValues(k)
	v[4] = hash
	_, err := tx.Exec(ctx, insertKeySQL, v...)
	return err
}

// keyError maps the unique violations of a key write.
func keyError(err error, k account.Key) error {
	switch {
	case isUnique(err, "api_keys_pkey"):
		return fmt.Errorf("key %s already exists: %w", k.ID, store.ErrConflict)
	case isUnique(err, "api_keys_hash_key"):
		return fmt.Errorf("key %s: another key has its hash: %w", k.ID, store.ErrConflict)
	}
	return err
}

// KeyByHash implements store.AccountStore: one seek of the hash's unique
// index.
func (s *backend) KeyByHash(ctx context.Context, hash []byte) (account.Key, error) {
	if err := s.checkOpen(); err != nil {
		return account.Key{}, err
	}
	if hash == nil {
		hash = []byte{}
	}
	k, err := queryRow(ctx, s, sqlrow.ScanKey, keyByHashSQL, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return account.Key{}, fmt.Errorf("key: %w", store.ErrNotFound)
	}
	return k, s.err(err)
}

// GetKey implements store.AccountStore.
func (s *backend) GetKey(ctx context.Context, id string) (account.Key, error) {
	if err := s.checkOpen(); err != nil {
		return account.Key{}, err
	}
	k, err := queryRow(ctx, s, sqlrow.ScanKey, getKeySQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return account.Key{}, fmt.Errorf("key %s: %w", id, store.ErrNotFound)
	}
	return k, s.err(err)
}

// ListKeys implements store.AccountStore: in ID order, a seek of the
// (account_id, id) index; the cursor is the last ID of the previous page.
// An empty accountID is account.DefaultID.
func (s *backend) ListKeys(ctx context.Context, accountID string, p store.Page) ([]account.Key, string, error) {
	if err := store.KeyCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	return listByID(ctx, s, "api_keys", sqlrow.KeyBytes, sqlrow.KeyCols, account.OrDefault(accountID), p,
		sqlrow.ScanKey, func(k account.Key) string { return k.ID })
}

// DeleteKey implements store.AccountStore.
func (s *backend) DeleteKey(ctx context.Context, id string) error {
	return s.authWrite(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, deleteKeySQL, id)
		switch {
		case err != nil:
			return fmt.Errorf("delete key %s: %w", id, err)
		case tag.RowsAffected() == 0:
			return fmt.Errorf("key %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}
