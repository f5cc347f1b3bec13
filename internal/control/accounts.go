package control

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/clock"
)

// AuthCache is the authenticator's cache of keys and accounts
// (auth.Authenticator). Flush forgets all of it, so that an account or key
// write takes effect on this node at once; the other nodes learn of it
// from the store's auth version within their recheck interval.
type AuthCache interface {
	Flush()
}

// AccountStore is what the accounts and keys need of the store.
type AccountStore interface {
	CreateAccount(ctx context.Context, a account.Account) error
	GetAccount(ctx context.Context, id string) (account.Account, error)
	UpdateAccount(ctx context.Context, a account.Account) error
	DeleteAccount(ctx context.Context, id string) error
	CreateKey(ctx context.Context, k account.Key) error
	DeleteKey(ctx context.Context, id string) error
}

// Accounts carries out writes of accounts and API keys: each one takes
// effect on this node at once (Auth is flushed), on the others within the
// authenticator's recheck interval. It is safe for concurrent use.
type Accounts struct {
	Store AccountStore
	Clock clock.Clock
	// Auth, when set, is told of every account and key write.
	Auth AuthCache
}

// authWritten returns err, the result of an account or key write; when
// the write succeeded it first makes it take effect on this node (Auth).
func (s *Accounts) authWritten(err error) error {
	if err == nil && s.Auth != nil {
		s.Auth.Flush()
	}
	return err
}

// CreateAccount stores a (validated by the caller: account.Input.New).
// store.ErrNameTaken when another account has its name.
func (s *Accounts) CreateAccount(ctx context.Context, a account.Account) error {
	return s.authWritten(s.Store.CreateAccount(ctx, a))
}

// UpdateAccount reads the account, lets change modify it (an error from
// change is returned and nothing is written), and stores its name and
// settings with UpdatedAt now. It returns the account as stored.
// store.ErrNotFound, store.ErrNameTaken.
func (s *Accounts) UpdateAccount(ctx context.Context, id string, change func(*account.Account) error) (account.Account, error) {
	a, err := s.Store.GetAccount(ctx, id)
	if err != nil {
		return account.Account{}, err
	}
	if err := change(&a); err != nil {
		return account.Account{}, err
	}
	a.UpdatedAt = s.Clock.Now().UTC().Truncate(time.Millisecond)
	if err := s.authWritten(s.Store.UpdateAccount(ctx, a)); err != nil {
		return account.Account{}, err
	}
	return a, nil
}

// DeleteAccount removes an account and revokes its keys. store.ErrNotFound;
// store.ErrConflict for account.DefaultID and for an account that still
// has subscriptions.
func (s *Accounts) DeleteAccount(ctx context.Context, id string) error {
	return s.authWritten(s.Store.DeleteAccount(ctx, id))
}

// CreateKey stores k (made by auth.NewKey, for a checked
// account.KeySpec). store.ErrNotFound when its account does not exist.
func (s *Accounts) CreateKey(ctx context.Context, k account.Key) error {
	return s.authWritten(s.Store.CreateKey(ctx, k))
}

// DeleteKey revokes a key: on this node at once, on the others within the
// authenticator's recheck interval. store.ErrNotFound when absent.
func (s *Accounts) DeleteKey(ctx context.Context, id string) error {
	return s.authWritten(s.Store.DeleteKey(ctx, id))
}
