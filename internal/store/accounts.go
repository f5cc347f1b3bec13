package store

import (
	"context"
	"time"
)

// DefaultAccount is the account that always exists: everything written
// without an account (and everything written before accounts existed)
// belongs to it, so a user with one tenant never names one. An empty
// AccountID in any value handed to the store means DefaultAccount.
const DefaultAccount = "acc_default"

// AccountOrDefault returns id, or DefaultAccount when id is empty.
func AccountOrDefault(id string) string {
	if id == "" {
		return DefaultAccount
	}
	return id
}

// AccountStore keeps accounts and their API keys. Every write of either
// advances the auth version (AuthVersion) in its own transaction, so that a
// process caching keys and accounts learns of any change, on any node, by
// reading one number.
type AccountStore interface {
	// CreateAccount inserts a (ID, CreatedAt, UpdatedAt set). ErrNameTaken
	// when another account has the name; ErrConflict when the ID exists.
	CreateAccount(ctx context.Context, a Account) error
	// GetAccount returns one account or ErrNotFound.
	GetAccount(ctx context.Context, id string) (Account, error)
	// ListAccounts returns a page of accounts in ID order after the cursor
	// (AccountCursorCheck; DefaultAccount sorts first). An item's bytes
	// (MaxPageBytes): its name.
	ListAccounts(ctx context.Context, p Page) ([]Account, string, error)
	// UpdateAccount replaces the name and settings of the stored account
	// with the same ID (and its UpdatedAt). ErrNotFound, ErrNameTaken.
	UpdateAccount(ctx context.Context, a Account) error
	// DeleteAccount removes an account and its API keys in one transaction.
	// ErrNotFound when absent; ErrConflict for DefaultAccount and for an
	// account that still has subscriptions (its events and finished
	// deliveries stay until retention deletes them).
	DeleteAccount(ctx context.Context, id string) error

	// CreateKey inserts k (ID, Hash, CreatedAt set). ErrNotFound when its
	// account does not exist; ErrConflict when the ID or hash exists.
	CreateKey(ctx context.Context, k APIKey) error
	// CreateFirstKey inserts k only when the store holds no API key at
	// all, and reports whether it did. Of several processes starting at
	// once on one database, exactly one creates its key.
	CreateFirstKey(ctx context.Context, k APIKey) (bool, error)
	// KeyByHash returns the key whose Hash is hash, or ErrNotFound.
	KeyByHash(ctx context.Context, hash []byte) (APIKey, error)
	// GetKey returns one key by ID, or ErrNotFound.
	GetKey(ctx context.Context, id string) (APIKey, error)
	// ListKeys returns a page of an account's keys in ID order after the
	// cursor (KeyCursor). An item's bytes (MaxPageBytes): its name.
	ListKeys(ctx context.Context, accountID string, p Page) ([]APIKey, string, error)
	// DeleteKey removes (revokes) a key. ErrNotFound when absent.
	DeleteKey(ctx context.Context, id string) error
	// AuthVersion returns the auth version: a number that every account
	// and key write advances.
	AuthVersion(ctx context.Context) (int64, error)
}

// Account is a tenant: everything else belongs to one.
type Account struct {
	ID        string
	Name      string
	Settings  AccountSettings
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AccountSettings are an account's defaults for its subscriptions.
type AccountSettings struct {
	// FailurePolicy is "retry" (the default: a failed push is retried on
	// the subscription's retry policy) or "queue".
	FailurePolicy string `json:"failure_policy"`
}

// Key roles.
const (
	// RoleAdmin manages accounts and keys and acts in every account.
	RoleAdmin = "admin"
	// RoleAccount does everything inside its own account.
	RoleAccount = "account"
	// RolePublish only publishes events in its account.
	RolePublish = "publish"
)

// APIKey is an API key as stored: never the key itself, only its SHA-256.
type APIKey struct {
	ID        string
	AccountID string
	Role      string
	Name      string
	Hash      []byte
	// Prefix is the key's first characters, shown in lists so a user can
	// tell keys apart without the secret.
	Prefix    string
	CreatedAt time.Time
}
