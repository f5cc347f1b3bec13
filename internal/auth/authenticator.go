package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// ErrUnauthenticated: no key, or a key Herald does not know (never made,
// or revoked).
var ErrUnauthenticated = errors.New("missing or unknown API key")

// Principal is who a request acts as: its key's role and account. The
// HERALD_ADMIN_KEY is an admin of account.DefaultID with KeyID "env".
type Principal struct {
	KeyID     string
	AccountID string
	Role      string
}

// Store is what authentication reads: keys by hash, accounts, and the auth
// version that every account and key write advances.
type Store interface {
	KeyByHash(ctx context.Context, hash []byte) (account.Key, error)
	GetAccount(ctx context.Context, id string) (account.Account, error)
	AuthVersion(ctx context.Context) (int64, error)
}

// Defaults.
const (
	// DefaultRecheck is how often the cache reads the auth version: a
	// revoked key or deleted account stops working on every node at most
	// this long (plus one store read) after the change. On the node that
	// made the change it stops at once.
	DefaultRecheck = time.Second
	// DefaultCacheSize bounds the keys and accounts the cache holds (each
	// map); unknown keys are cached too, so a client retrying a bad key
	// costs no store read.
	DefaultCacheSize = 10_000
)

// Authenticator authenticates API keys. Keys and accounts once read are
// kept in memory, so a request costs no store read in steady state; every
// Recheck the cache reads the store's auth version (one small read per
// node, whatever the traffic) and forgets everything when it moved. It is
// safe for concurrent use.
type Authenticator struct {
	store     Store
	clock     clock.Clock
	log       *slog.Logger
	recheck   time.Duration
	size      int
	adminHash []byte          // HERALD_ADMIN_KEY's hash, or nil
	rechecks  *startstop.Loop // runs Check every recheck

	mu       sync.Mutex
	gen      uint64 // advanced by every flush
	version  int64  // the auth version the cache reflects (0: unknown)
	keys     map[string]keyEntry
	accounts map[string]account.Account
}

type keyEntry struct {
	key   account.Key
	known bool
}

// Options configure an Authenticator; zero fields take the defaults.
type Options struct {
	// AdminKey, when not empty, is always accepted as an admin key of
	// account.DefaultID (HERALD_ADMIN_KEY). It is never stored.
	AdminKey  string
	Recheck   time.Duration
	CacheSize int
	Clock     clock.Clock
	Logger    *slog.Logger
}

// New returns an authenticator reading st. Start keeps it current.
func New(st Store, o Options) *Authenticator {
	a := &Authenticator{store: st, clock: o.Clock, log: o.Logger, recheck: o.Recheck, size: o.CacheSize}
	if a.clock == nil {
		a.clock = clock.Real{}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.recheck <= 0 {
		a.recheck = DefaultRecheck
	}
	if a.size <= 0 {
		a.size = DefaultCacheSize
	}
	if o.AdminKey != "" {
		a.adminHash = Hash(o.AdminKey)
	}
	a.keys, a.accounts = map[string]keyEntry{}, map[string]account.Account{}
	a.rechecks = startstop.NewPeriodic("auth recheck", a.clock, a.recheck, a.Check)
	return a
}

// Recheck is how often the cache reads the auth version (see Start).
func (a *Authenticator) Recheck() time.Duration { return a.recheck }

// Authenticate returns the principal of a bearer key, or
// ErrUnauthenticated. A key seen before (known or not) costs no store read
// until the auth version moves.
func (a *Authenticator) Authenticate(ctx context.Context, key string) (Principal, error) {
	if key == "" || len(key) > MaxKeyLen {
		return Principal{}, ErrUnauthenticated
	}
	return a.AuthenticateHash(ctx, Hash(key))
}

// AuthenticateHash is Authenticate for a key known by its hash (Hash): the
// console keeps the hash of the key a session signed in with, and checks it
// on every request through the same cache, so that revoking the key ends
// the session as it ends the key's API requests.
func (a *Authenticator) AuthenticateHash(ctx context.Context, h []byte) (Principal, error) {
	if len(h) != sha256.Size {
		return Principal{}, ErrUnauthenticated
	}
	if a.adminHash != nil && sameHash(h, a.adminHash) {
		return Principal{KeyID: "env", AccountID: account.DefaultID, Role: account.RoleAdmin}, nil
	}
	a.mu.Lock()
	e, ok := a.keys[string(h)]
	gen := a.gen
	a.mu.Unlock()
	if !ok {
		k, err := a.store.KeyByHash(ctx, h)
		switch {
		case errors.Is(err, store.ErrNotFound):
			e = keyEntry{}
		case err != nil:
			return Principal{}, err
		default:
			e = keyEntry{key: k, known: true}
		}
		a.mu.Lock()
		if a.gen == gen { // not flushed meanwhile: the read is still current
			if len(a.keys) >= a.size {
				evictOne(a.keys)
			}
			a.keys[string(h)] = e
		}
		a.mu.Unlock()
	}
	if !e.known {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{KeyID: e.key.ID, AccountID: e.key.AccountID, Role: e.key.Role}, nil
}

// Account returns an account (store.ErrNotFound when there is none),
// cached like keys.
func (a *Authenticator) Account(ctx context.Context, id string) (account.Account, error) {
	a.mu.Lock()
	acc, ok := a.accounts[id]
	gen := a.gen
	a.mu.Unlock()
	if ok {
		return acc, nil
	}
	acc, err := a.store.GetAccount(ctx, id)
	if err != nil {
		return account.Account{}, err
	}
	a.mu.Lock()
	if a.gen == gen {
		if len(a.accounts) >= a.size {
			evictOne(a.accounts)
		}
		a.accounts[id] = acc
	}
	a.mu.Unlock()
	return acc, nil
}

// Flush forgets every cached key and account. The control plane
// (control.Service) calls it after its account and key writes, so that
// they take effect on this node at once.
func (a *Authenticator) Flush() {
	a.mu.Lock()
	a.flushLocked()
	a.mu.Unlock()
}

func (a *Authenticator) flushLocked() {
	a.gen++
	clear(a.keys)
	clear(a.accounts)
}

// Start keeps the cache current until Stop (or ctx ends): Check every
// Recheck on the injected clock, the first one Recheck after Start.
func (a *Authenticator) Start(ctx context.Context) error { return a.rechecks.Start(ctx) }

// Stop ends the rechecks and waits for the one in progress.
func (a *Authenticator) Stop() { a.rechecks.Stop() }

// Started is closed once the rechecks run.
func (a *Authenticator) Started() <-chan struct{} { return a.rechecks.Started() }

// Stopped is closed once the rechecks have stopped.
func (a *Authenticator) Stopped() <-chan struct{} { return a.rechecks.Stopped() }

// Loops returns the loop that runs the rechecks (tests read its signals).
func (a *Authenticator) Loops() []*startstop.Loop { return []*startstop.Loop{a.rechecks} }

// Check reads the auth version once and flushes the cache when it moved.
// A failed read is logged and the cache kept: the store being briefly
// unreachable does not log everyone out.
func (a *Authenticator) Check(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	v, err := a.store.AuthVersion(rctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("reading the auth version", "err", err)
		}
		return
	}
	a.mu.Lock()
	if v != a.version {
		a.version = v
		a.flushLocked()
	}
	a.mu.Unlock()
}

// evictOne deletes an arbitrary entry (Go's map order) to make room.
func evictOne[V any](m map[string]V) {
	for k := range m {
		delete(m, k)
		return
	}
}
