package store

import (
	"context"

	"github.com/herald-events/herald/internal/account"
)

// AccountStore keeps accounts and their API keys. Every write of either
// advances the auth version (AuthVersion) in its own transaction, so that a
// process caching keys and accounts learns of any change, on any node, by
// reading one number.
type AccountStore interface {
	// CreateAccount inserts a (ID, CreatedAt, UpdatedAt set). ErrNameTaken
	// when another account has the name; ErrConflict when the ID exists.
	CreateAccount(ctx context.Context, a account.Account) error
	// GetAccount returns one account or ErrNotFound.
	GetAccount(ctx context.Context, id string) (account.Account, error)
	// ListAccounts returns a page of accounts in ID order after the cursor
	// (AccountCursorCheck; account.DefaultID sorts first). An item's bytes
	// (MaxPageBytes): its name.
	ListAccounts(ctx context.Context, p Page) ([]account.Account, string, error)
	// UpdateAccount replaces the name and settings of the stored account
	// with the same ID (and its UpdatedAt). ErrNotFound, ErrNameTaken.
	UpdateAccount(ctx context.Context, a account.Account) error
	// DeleteAccount removes an account and its API keys in one transaction.
	// ErrNotFound when absent; ErrConflict for account.DefaultID and for an
	// account that still has subscriptions, or a source publishing into it
	// (its events and finished
	// deliveries stay until retention deletes them).
	DeleteAccount(ctx context.Context, id string) error

	// CreateKey inserts k (ID, Hash, CreatedAt set). ErrNotFound when its
	// account does not exist; ErrConflict when the ID or hash exists.
	CreateKey(ctx context.Context, k account.Key) error
	// CreateFirstKey inserts k only when the store holds no API key at
	// all, and reports whether it did. Of several processes starting at
	// once on one database, exactly one creates its key.
	CreateFirstKey(ctx context.Context, k account.Key) (bool, error)
	// KeyByHash returns the key whose Hash is hash, or ErrNotFound.
	KeyByHash(ctx context.Context, hash []byte) (account.Key, error)
	// GetKey returns one key by ID, or ErrNotFound.
	GetKey(ctx context.Context, id string) (account.Key, error)
	// ListKeys returns a page of an account's keys in ID order after the
	// cursor (KeyCursor). An item's bytes (MaxPageBytes): its name.
	ListKeys(ctx context.Context, accountID string, p Page) ([]account.Key, string, error)
	// DeleteKey removes (revokes) a key. ErrNotFound when absent.
	DeleteKey(ctx context.Context, id string) error
	// AuthVersion returns the auth version: a number that every account
	// and key write advances.
	AuthVersion(ctx context.Context) (int64, error)
}
