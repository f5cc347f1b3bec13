package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Accounts and API keys (store.AccountStore).
//
// Every write of either runs in a write transaction of its own (authWrite)
// that first takes the auth version's lock (qLockAuth), then makes its
// checks (a name in use, the account of a key, "no key yet" for
// CreateFirstKey), then writes, and last advances the auth version
// (qBumpAuth). On PostgreSQL the lock is the counter's row, held until the
// transaction ends: such writes are serialised across nodes, so the checks
// still hold when the write commits. On SQLite the one writer serialises
// every write, and the checks, which only read, fail a request before it
// wrote anything (a request that fails after a write rolls its whole group
// commit back). A write that finds it has nothing to do writes nothing,
// leaving the version alone.
var (
	// qLockAuth reads the auth version, locking it until the transaction
	// ends (PostgreSQL: FOR UPDATE; SQLite: a plain read, the one writer
	// being the lock).
	qLockAuth = query("LockAuth")
	// qBumpAuth advances the auth version and returns it; on PostgreSQL it
	// also tells the other nodes when the transaction commits (NOTIFY: the
	// change feed's "auth").
	qBumpAuth = query("BumpAuth")
	// qAuthVersion reads the auth version.
	qAuthVersion = query("AuthVersion")

	// qInsertAccount inserts an account (sqlrow.AccountValues), nothing when
	// its ID or its name is stored.
	qInsertAccount = query("InsertAccount")
	// qGetAccount reads account $1 (sqlrow.AccountCols).
	qGetAccount = query("GetAccount")
	// qAccountByName reads the ID of the account named $1.
	qAccountByName = query("AccountByName")
	// qUpdateAccount sets the name ($2), settings ($3) and updated_at ($4)
	// of account $1.
	qUpdateAccount = query("UpdateAccount")
	// qDeleteAccount deletes account $1.
	qDeleteAccount = query("DeleteAccount")
	// qAccountSubscribed returns a row when account $1 has a subscription,
	// or a source publishes into it.
	qAccountSubscribed = query("AccountSubscribed")
	// qDeleteAccountKeys deletes the keys of account $1.
	qDeleteAccountKeys = query("DeleteAccountKeys")
	// qAccountExists returns a row when account $1 exists; on PostgreSQL it
	// locks the row in key share mode until the transaction ends (an update
	// of its name or settings is not held up): DeleteAccount, which deletes
	// the row before it looks for what is in the account, waits for the
	// caller and then sees what it inserted, or the caller waits and finds
	// the account gone.
	qAccountExists = query("AccountExists")
	// qListAccountSizes and qListAccounts are the account list's page
	// (readPage): account.DefaultID first, then the others in ID order,
	// after the place of the cursor in that order, given as $1 (the cursor
	// is an account other than account.DefaultID) and $2 (the cursor), with
	// the LIMIT $3; a seek of the index accounts_list, whose expression
	// the statements repeat. Sizes: sqlrow.AccountBytes.
	qListAccountSizes = query("ListAccountSizes")
	qListAccounts     = query("ListAccounts")

	// qInsertKey inserts a key (sqlrow.KeyValues), nothing when its ID or
	// its hash is stored.
	qInsertKey = query("InsertKey")
	// qGetKey reads key $1 (sqlrow.KeyCols).
	qGetKey = query("GetKey")
	// qKeyByHash reads the key of hash $1 (sqlrow.KeyCols): one seek of the
	// hash's unique index.
	qKeyByHash = query("KeyByHash")
	// qAnyKey returns a row when any key is stored.
	qAnyKey = query("AnyKey")
	// qDeleteKey deletes key $1.
	qDeleteKey = query("DeleteKey")
	// qListKeySizes and qListKeys are the key list's page (readPage): the
	// keys of account $1 after the ID $2, in ID order, with the LIMIT $3; a
	// seek of api_keys_account (account_id, id). Sizes: sqlrow.KeyBytes.
	qListKeySizes = query("ListKeySizes")
	qListKeys     = query("ListKeys")
)

// authWrite runs fn in a write transaction after taking the auth
// version's lock (qLockAuth), and advances the version (qBumpAuth) once
// fn returns nil having written (wrote true). fn may run more than once.
func (s *Store) authWrite(ctx context.Context, fn func(x driver.Executor) (wrote bool, err error)) error {
	return s.write(ctx, func(x driver.Executor) error {
		var v int64
		if err := x.QueryRow(ctx, qLockAuth).Scan(&v); err != nil {
			return fmt.Errorf("lock the auth version: %w", err)
		}
		switch wrote, err := fn(x); {
		case err != nil:
			return err
		case !wrote:
			return nil
		}
		if err := x.QueryRow(ctx, qBumpAuth).Scan(&v); err != nil {
			return fmt.Errorf("advance the auth version: %w", err)
		}
		return nil
	})
}

// AuthVersion implements store.AccountStore: it sees every write committed
// before it was called.
func (s *Store) AuthVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.drv.Reader().QueryRow(ctx, qAuthVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the auth version: %w", err)
	}
	return v, nil
}

// CreateAccount implements store.AccountStore: ErrNameTaken (checked
// first) when another account has the name, ErrConflict when the ID
// exists.
func (s *Store) CreateAccount(ctx context.Context, a account.Account) error {
	args := sqlrow.AccountValues(&a)
	return s.authWrite(ctx, func(x driver.Executor) (bool, error) {
		if err := accountNameFree(ctx, x, a.Name, ""); err != nil {
			return false, err
		}
		switch n, err := x.Exec(ctx, qInsertAccount, args...); {
		case err != nil:
			return false, fmt.Errorf("insert account %s: %w", a.ID, err)
		case n == 0: // the name is free: the ID is taken
			return false, fmt.Errorf("account %s already exists: %w", a.ID, store.ErrConflict)
		}
		return true, nil
	})
}

// accountNameFree returns ErrNameTaken when an account other than id has name.
func accountNameFree(ctx context.Context, x driver.Executor, name, id string) error {
	var other string
	switch err := x.QueryRow(ctx, qAccountByName, name).Scan(&other); {
	case errors.Is(err, driver.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("read account name %q: %w", name, err)
	case other != id:
		return fmt.Errorf("account name %q: %w", name, store.ErrNameTaken)
	}
	return nil
}

// GetAccount implements store.AccountStore.
func (s *Store) GetAccount(ctx context.Context, id string) (account.Account, error) {
	a, err := sqlrow.ScanAccount(s.drv.Reader().QueryRow(ctx, qGetAccount, id))
	if errors.Is(err, driver.ErrNoRows) {
		return account.Account{}, fmt.Errorf("account %s: %w", id, store.ErrNotFound)
	}
	return a, err
}

// ListAccounts implements store.AccountStore: account.DefaultID first, then
// the others in ID order, each page an index seek (accounts_list); the
// cursor is the last ID of the previous page.
func (s *Store) ListAccounts(ctx context.Context, p store.Page) ([]account.Account, string, error) {
	if err := store.AccountCursorCheck(p.Cursor); err != nil {
		return nil, "", err
	}
	// The cursor's place in the order: (false, "") before everything.
	args := []any{p.Cursor != "" && p.Cursor != account.DefaultID, p.Cursor}
	return readPage(ctx, s, p, qListAccountSizes, qListAccounts, args, sqlrow.ScanAccount,
		func(a account.Account) string { return a.ID })
}

// UpdateAccount implements store.AccountStore: the name, the settings and
// UpdatedAt take a's values; the ID and CreatedAt stay. ErrNameTaken
// (checked first), ErrNotFound.
func (s *Store) UpdateAccount(ctx context.Context, a account.Account) error {
	v := sqlrow.AccountValues(&a) // id, name, settings, created_at, updated_at
	return s.authWrite(ctx, func(x driver.Executor) (bool, error) {
		if err := accountNameFree(ctx, x, a.Name, a.ID); err != nil {
			return false, err
		}
		switch n, err := x.Exec(ctx, qUpdateAccount, v[0], v[1], v[2], v[4]); {
		case err != nil:
			return false, fmt.Errorf("update account %s: %w", a.ID, err)
		case n == 0:
			return false, fmt.Errorf("account %s: %w", a.ID, store.ErrNotFound)
		}
		return true, nil
	})
}

// DeleteAccount implements store.AccountStore, with the account's keys:
// ErrConflict for account.DefaultID, which always exists, and for an
// account that still has subscriptions, or a source that publishes into
// it; ErrNotFound. The account's row is
// deleted before its subscriptions are looked for: on PostgreSQL a
// CreateSubscription in it that is under way holds the row
// (qAccountExists), so the delete waits for it and then sees its
// subscription, and one that comes later finds the account gone; on SQLite
// the one writer runs neither meanwhile.
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	if id == account.DefaultID {
		// Through the driver, which answers ErrClosed after Close.
		return s.drv.Snapshot(ctx, func(driver.Executor) error {
			return fmt.Errorf("account %s cannot be deleted: %w", id, store.ErrConflict)
		})
	}
	return s.authWrite(ctx, func(x driver.Executor) (bool, error) {
		switch n, err := x.Exec(ctx, qDeleteAccount, id); {
		case err != nil:
			return false, fmt.Errorf("delete account %s: %w", id, err)
		case n == 0:
			return false, fmt.Errorf("account %s: %w", id, store.ErrNotFound)
		}
		var one int
		switch err := x.QueryRow(ctx, qAccountSubscribed, id).Scan(&one); {
		case err == nil:
			return false, fmt.Errorf("account %s still has subscriptions or sources: %w", id, store.ErrConflict)
		case !errors.Is(err, driver.ErrNoRows):
			return false, fmt.Errorf("read the subscriptions of account %s: %w", id, err)
		}
		if _, err := x.Exec(ctx, qDeleteAccountKeys, id); err != nil {
			return false, fmt.Errorf("delete the keys of account %s: %w", id, err)
		}
		return true, nil
	})
}

// CreateKey implements store.AccountStore. An empty AccountID is
// account.DefaultID. ErrNotFound when the account does not exist,
// ErrConflict when the ID or the hash exists.
func (s *Store) CreateKey(ctx context.Context, k account.Key) error {
	return s.authWrite(ctx, func(x driver.Executor) (bool, error) { return true, insertKey(ctx, x, &k) })
}

// CreateFirstKey implements store.AccountStore: it creates k only when no
// key exists, and reports whether it did. The check and the insert hold
// the auth version's lock (authWrite): of several calls racing, on one
// SQLite file or on nodes sharing a PostgreSQL database, exactly one
// creates its key, and the others, once it commits, find a key and write
// nothing.
func (s *Store) CreateFirstKey(ctx context.Context, k account.Key) (bool, error) {
	var created bool
	err := s.authWrite(ctx, func(x driver.Executor) (bool, error) {
		created = false
		var one int
		switch err := x.QueryRow(ctx, qAnyKey).Scan(&one); {
		case err == nil:
			return false, nil
		case !errors.Is(err, driver.ErrNoRows):
			return false, fmt.Errorf("look for keys: %w", err)
		}
		if err := insertKey(ctx, x, &k); err != nil {
			return false, err
		}
		created = true
		return true, nil
	})
	if err != nil {
		return false, err
	}
	return created, nil
}

// insertKey inserts k if its account exists (qAccountExists) and neither
// its ID nor its hash does.
func insertKey(ctx context.Context, x driver.Executor, k *account.Key) error {
	acc := account.OrDefault(k.AccountID)
	var one int
	switch err := x.QueryRow(ctx, qAccountExists, acc).Scan(&one); {
	case errors.Is(err, driver.ErrNoRows):
		return fmt.Errorf("account %s: %w", acc, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("read account %s: %w", acc, err)
	}
	v := sqlrow.KeyValues(k)
	v[4] = orEmpty(k.Hash) // NOT NULL; a key always has one
	n, err := x.Exec(ctx, qInsertKey, v...)
	if err != nil {
		return fmt.Errorf("insert key %s: %w", k.ID, err)
	}
	if n > 0 {
		return nil
	}
	switch _, err := sqlrow.ScanKey(x.QueryRow(ctx, qGetKey, k.ID)); {
	case err == nil:
		return fmt.Errorf("key %s already exists: %w", k.ID, store.ErrConflict)
	case errors.Is(err, driver.ErrNoRows):
		return fmt.Errorf("key %s: another key has its hash: %w", k.ID, store.ErrConflict)
	default:
		return fmt.Errorf("read key %s: %w", k.ID, err)
	}
}

// KeyByHash implements store.AccountStore.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (account.Key, error) {
	k, err := sqlrow.ScanKey(s.drv.Reader().QueryRow(ctx, qKeyByHash, orEmpty(hash)))
	if errors.Is(err, driver.ErrNoRows) {
		return account.Key{}, fmt.Errorf("key: %w", store.ErrNotFound)
	}
	return k, err
}

// GetKey implements store.AccountStore.
func (s *Store) GetKey(ctx context.Context, id string) (account.Key, error) {
	k, err := sqlrow.ScanKey(s.drv.Reader().QueryRow(ctx, qGetKey, id))
	if errors.Is(err, driver.ErrNoRows) {
		return account.Key{}, fmt.Errorf("key %s: %w", id, store.ErrNotFound)
	}
	return k, err
}

// ListKeys implements store.AccountStore: in ID order, a seek of the
// (account_id, id) index; the cursor is the last ID of the previous page.
// An empty accountID is account.DefaultID; an account that does not exist
// has no keys.
func (s *Store) ListKeys(ctx context.Context, accountID string, p store.Page) ([]account.Key, string, error) {
	if err := store.KeyCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	return readPage(ctx, s, p, qListKeySizes, qListKeys, []any{account.OrDefault(accountID), p.Cursor},
		sqlrow.ScanKey, func(k account.Key) string { return k.ID })
}

// DeleteKey implements store.AccountStore: ErrNotFound when there is no
// such key.
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	return s.authWrite(ctx, func(x driver.Executor) (bool, error) {
		switch n, err := x.Exec(ctx, qDeleteKey, id); {
		case err != nil:
			return false, fmt.Errorf("delete key %s: %w", id, err)
		case n == 0:
			return false, fmt.Errorf("key %s: %w", id, store.ErrNotFound)
		}
		return true, nil
	})
}
