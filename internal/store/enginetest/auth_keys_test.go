package enginetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
)

// testAuthVersion: every account and key write advances the auth
// version, reads and refused writes do not.
func testAuthVersion(t *testing.T, b *bundle) {
	v := authVersion(b)
	if v <= 0 {
		t.Fatalf("auth version of a new store %d, want > 0", v)
	}
	advanced := func(what string) {
		t.Helper()
		if got := authVersion(b); got <= v {
			t.Fatalf("%s: auth version %d, was %d: want it to advance", what, got, v)
		} else {
			v = got
		}
	}
	unchanged := func(what string) {
		t.Helper()
		if got := authVersion(b); got != v {
			t.Fatalf("%s: auth version %d, was %d: want it unchanged", what, got, v)
		}
	}
	a := b.account("a")
	advanced("CreateAccount")
	a.Name, a.UpdatedAt = "a2", b.at(time.Second)
	if err := b.s.UpdateAccount(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	advanced("UpdateAccount")
	first := newKey(b, a.ID, account.RoleAdmin)
	if ok, err := b.s.CreateFirstKey(b.ctx, first); err != nil || !ok {
		t.Fatalf("CreateFirstKey = %v, %v", ok, err)
	}
	advanced("CreateFirstKey")
	k := key(b, a.ID, account.RoleAccount)
	advanced("CreateKey")
	if err := b.s.DeleteKey(b.ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	advanced("DeleteKey")
	if err := b.s.DeleteAccount(b.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	advanced("DeleteAccount")

	// Reads.
	_, _ = b.s.GetAccount(b.ctx, account.DefaultID)
	_, _, _ = b.s.ListAccounts(b.ctx, store.Page{})
	_, _ = b.s.GetKey(b.ctx, first.ID)
	_, _ = b.s.KeyByHash(b.ctx, first.Hash)
	_, _, _ = b.s.ListKeys(b.ctx, a.ID, store.Page{})
	unchanged("reads")
	// Refused writes.
	c := b.account("c")
	advanced("CreateAccount")
	kc := key(b, c.ID, account.RoleAccount)
	advanced("CreateKey")
	_ = b.s.CreateAccount(b.ctx, account.Account{ID: b.id("acc_"), Name: "c", CreatedAt: b.now, UpdatedAt: b.now})
	_ = b.s.UpdateAccount(b.ctx, account.Account{ID: b.id("acc_"), Name: "x", UpdatedAt: b.now})
	_ = b.s.DeleteAccount(b.ctx, account.DefaultID)
	_ = b.s.DeleteKey(b.ctx, b.id("key_"))
	_ = b.s.CreateKey(b.ctx, newKey(b, b.id("acc_"), account.RoleAccount))
	dup := newKey(b, c.ID, account.RoleAccount)
	dup.Hash = kc.Hash
	_ = b.s.CreateKey(b.ctx, dup)
	unchanged("refused writes")
	// Subscription writes are not auth writes.
	b.subIn(c.ID, "https://c.example/hook")
	unchanged("CreateSubscription")
}

func testFirstKey(t *testing.T, b *bundle) {
	missing := newKey(b, b.id("acc_"), account.RoleAdmin)
	if ok, err := b.s.CreateFirstKey(b.ctx, missing); !errors.Is(err, store.ErrNotFound) || ok {
		t.Fatalf("CreateFirstKey(unknown account) = %v, %v; want false, ErrNotFound", ok, err)
	}
	first := newKey(b, account.DefaultID, account.RoleAdmin)
	if ok, err := b.s.CreateFirstKey(b.ctx, first); err != nil || !ok {
		t.Fatalf("CreateFirstKey on a store without keys = %v, %v; want true", ok, err)
	}
	equal(t, "first key", getKey(b, first.ID), first)
	second := newKey(b, account.DefaultID, account.RoleAdmin)
	if ok, err := b.s.CreateFirstKey(b.ctx, second); err != nil || ok {
		t.Fatalf("second CreateFirstKey = %v, %v; want false", ok, err)
	}
	if _, err := b.s.GetKey(b.ctx, second.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the second first key was stored (%v)", err)
	}
	// Any key counts, in any account.
	if err := b.s.DeleteKey(b.ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	a := b.account("a")
	key(b, a.ID, account.RolePublish)
	if ok, err := b.s.CreateFirstKey(b.ctx, second); err != nil || ok {
		t.Fatalf("CreateFirstKey with another account's key stored = %v, %v; want false", ok, err)
	}
}

// testFirstKeyRace: of several processes starting at once, exactly one
// creates its first key.
func testFirstKeyRace(t *testing.T, b *bundle) {
	const n = 8
	keys := make([]account.Key, n)
	for i := range keys {
		keys[i] = newKey(b, account.DefaultID, account.RoleAdmin)
	}
	var wg sync.WaitGroup
	created := make([]bool, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			created[i], errs[i] = b.s.CreateFirstKey(b.ctx, keys[i])
		}()
	}
	close(start)
	wg.Wait()
	var winners []string
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("CreateFirstKey %d: %v", i, errs[i])
		}
		if created[i] {
			winners = append(winners, keys[i].ID)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d calls created their first key (%v), want exactly 1", len(winners), winners)
	}
	equal(t, "keys", listKeys(b, account.DefaultID, 100), winners)
}
