package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// countingStore is a real SQLite store that counts the reads
// authentication makes.
type countingStore struct {
	*sqlite.Store
	keyReads, accountReads, versionReads atomic.Int64
}

func (c *countingStore) KeyByHash(ctx context.Context, h []byte) (account.Key, error) {
	c.keyReads.Add(1)
	return c.Store.KeyByHash(ctx, h)
}

func (c *countingStore) GetAccount(ctx context.Context, id string) (account.Account, error) {
	c.accountReads.Add(1)
	return c.Store.GetAccount(ctx, id)
}

func (c *countingStore) AuthVersion(ctx context.Context) (int64, error) {
	c.versionReads.Add(1)
	return c.Store.AuthVersion(ctx)
}

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*countingStore, *clock.Fake) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &countingStore{Store: st}, clock.NewFake(t0)
}

func TestKeysAreRandomAndStoredHashed(t *testing.T) {
	s1, k1 := auth.NewKey("", account.RolePublish, "a", t0)
	s2, _ := auth.NewKey("", account.RolePublish, "a", t0)
	if s1 == s2 || !strings.HasPrefix(s1, auth.KeyPrefix) || len(s1) != 46 {
		t.Fatalf("keys %q, %q: want distinct hk_ keys of 46 characters", s1, s2)
	}
	if strings.Contains(string(k1.Hash), s1) || string(k1.Hash) != string(auth.Hash(s1)) || len(k1.Hash) != 32 {
		t.Fatalf("stored hash %x is not the key's SHA-256", k1.Hash)
	}
	if k1.AccountID != account.DefaultID || !strings.HasPrefix(s1, k1.Prefix) || len(k1.Prefix) != 11 {
		t.Fatalf("key %+v: want acc_default and an 11-character prefix of the secret", k1)
	}
}

func TestBearerKey(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer hk_x": "hk_x", "bearer hk_x": "hk_x", "Bearer  hk_x ": "hk_x",
		"": "", "hk_x": "", "Basic aGs6eA==": "", "Bearer": "",
	} {
		if got := auth.BearerKey(h); got != want {
			t.Errorf("BearerKey(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestCacheReadsNothingInSteadyState: after the first request of a key
// (known or unknown), authenticating it again reads nothing from the store,
// however often; the only steady read is the version check, once per
// Recheck.
func TestCacheReadsNothingInSteadyState(t *testing.T) {
	st, clk := setup(t)
	ctx := context.Background()
	secret, k := auth.NewKey("", account.RoleAccount, "k", t0)
	if err := st.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	a := auth.New(st, auth.Options{Clock: clk})
	for i := 0; i < 1000; i++ {
		p, err := a.Authenticate(ctx, secret)
		if err != nil || p.KeyID != k.ID || p.Role != account.RoleAccount || p.AccountID != account.DefaultID {
			t.Fatalf("authenticate: %+v, %v", p, err)
		}
		if _, err := a.Authenticate(ctx, "hk_unknown"); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("unknown key: %v", err)
		}
		if _, err := a.Account(ctx, account.DefaultID); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := st.keyReads.Load(), st.accountReads.Load(); n != 2 || m != 1 {
		t.Fatalf("%d key reads and %d account reads for 1000 requests of each; want 2 and 1", n, m)
	}
	a.Check(ctx) // the version read: the first sets it, and flushes
	a.Check(ctx) // unchanged: keeps the cache
	if _, err := a.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if n := st.keyReads.Load(); n != 3 {
		t.Fatalf("%d key reads; want 3 (one after the first version read)", n)
	}
}

// TestRevocationOnAnotherAuthenticator: two authenticators on one store
// (two nodes). A key revoked through the store keeps working on the other
// node until its next version check, which the fake clock's Recheck brings,
// and not after it.
func TestRevocationOnAnotherAuthenticator(t *testing.T) {
	st, clk := setup(t)
	ctx := context.Background()
	secret, k := auth.NewKey("", account.RolePublish, "k", t0)
	if err := st.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	other := auth.New(st, auth.Options{Clock: clk, Recheck: time.Second})
	other.Check(ctx)
	rechecks := &other.Loops()[0].TestSignals
	rechecks.Slept.Init(t)
	rechecks.Woke.Init(t)
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	if until := rechecks.Slept.WaitOrTimeout(); !until.Equal(t0.Add(time.Second)) {
		t.Fatalf("the first recheck is due at %v, want %v (one Recheck after Start)", until, t0.Add(time.Second))
	}
	if _, err := other.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	// Still cached: the revocation is not seen before the next check.
	if _, err := other.Authenticate(ctx, secret); err != nil {
		t.Fatalf("before the recheck: %v", err)
	}
	clk.Advance(time.Second)
	rechecks.Woke.WaitOrTimeout()
	rechecks.Slept.WaitOrTimeout() // the recheck is done
	if _, err := other.Authenticate(ctx, secret); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("after the recheck: %v, want the revoked key refused", err)
	}
	other.Stop()
	<-other.Stopped()
}

// TestAdminKeyFromEnvironment: HERALD_ADMIN_KEY is an admin of the default
// account without a store read; nothing else near it is.
func TestAdminKeyFromEnvironment(t *testing.T) {
	st, clk := setup(t)
	const admin = "an-admin-key-of-enough-length"
	a := auth.New(st, auth.Options{Clock: clk, AdminKey: admin})
	p, err := a.Authenticate(context.Background(), admin)
	if err != nil || p.Role != account.RoleAdmin || p.AccountID != account.DefaultID {
		t.Fatalf("admin key: %+v, %v", p, err)
	}
	if st.keyReads.Load() != 0 {
		t.Fatal("the environment's admin key was looked up in the store")
	}
	if _, err := a.Authenticate(context.Background(), admin+"x"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("a longer key: %v", err)
	}
	if _, err := a.Authenticate(context.Background(), strings.Repeat("k", auth.MaxKeyLen+1)); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("an over-long key: %v", err)
	}
}

// TestCacheIsBounded: with a cache of 8, many distinct keys never hold
// more than 8 entries (observed as reads: each evicted key is read again).
func TestCacheIsBounded(t *testing.T) {
	st, clk := setup(t)
	a := auth.New(st, auth.Options{Clock: clk, CacheSize: 8})
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		_, _ = a.Authenticate(ctx, "hk_unknown_"+string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	before := st.keyReads.Load()
	for i := 0; i < 100; i++ {
		_, _ = a.Authenticate(ctx, "hk_unknown_"+string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	if got := st.keyReads.Load() - before; got < 92 {
		t.Fatalf("%d reads on the second pass over 100 keys with a cache of 8: the cache holds more than 8", got)
	}
}

// TestAuthenticateHash: a key known by its hash authenticates as the key
// does, through the same cache (no second read), and stops when the key is
// revoked; the admin key's hash is the admin; anything not a SHA-256 is
// unauthenticated without a read.
func TestAuthenticateHash(t *testing.T) {
	st, clk := setup(t)
	ctx := context.Background()
	a := auth.New(st, auth.Options{Clock: clk, AdminKey: "the-admin-key-0123456789abcdef"})
	secret, k := auth.NewKey("", account.RoleAccount, "console", t0)
	if err := st.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	p, err := a.AuthenticateHash(ctx, auth.Hash(secret))
	if err != nil || p.KeyID != k.ID || p.Role != account.RoleAccount || p.AccountID != account.DefaultID {
		t.Fatalf("AuthenticateHash = %+v, %v; want key %s of role account", p, err, k.ID)
	}
	if n := st.keyReads.Load(); n != 1 {
		t.Fatalf("%d key reads; want 1: the hash shares the key's cache entry", n)
	}
	if p, err := a.AuthenticateHash(ctx, auth.Hash("the-admin-key-0123456789abcdef")); err != nil || p.Role != account.RoleAdmin || p.KeyID != "env" {
		t.Fatalf("the admin key's hash: %+v, %v; want the env admin", p, err)
	}
	for _, h := range [][]byte{nil, []byte("short"), append(auth.Hash(secret), 0)} {
		if _, err := a.AuthenticateHash(ctx, h); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("AuthenticateHash(%x) = %v; want ErrUnauthenticated", h, err)
		}
	}
	if n := st.keyReads.Load(); n != 1 {
		t.Fatalf("%d key reads; want 1: a hash of the wrong length is refused without a read", n)
	}
	if err := st.DeleteKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	a.Flush() // what control.Service does after a key write
	if _, err := a.AuthenticateHash(ctx, auth.Hash(secret)); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("the revoked key's hash: %v; want ErrUnauthenticated", err)
	}
}
