package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

func testAccountRoundTrip(t *testing.T, b *bundle) {
	a := b.account("acme")
	equal(t, "created", getAccount(b, a.ID), a)

	// UpdateAccount replaces the name, the settings and UpdatedAt; not
	// CreatedAt.
	up := a
	up.Name, up.Settings.FailurePolicy = "acme corp", "retry"
	up.CreatedAt, up.UpdatedAt = b.at(time.Hour), b.at(time.Minute)
	if err := b.s.UpdateAccount(b.ctx, up); err != nil {
		t.Fatal(err)
	}
	want := up
	want.CreatedAt = a.CreatedAt
	equal(t, "updated", getAccount(b, a.ID), want)
	// Keeping its own name is fine; the old name is free again.
	if err := b.s.UpdateAccount(b.ctx, up); err != nil {
		t.Fatalf("UpdateAccount(same name) = %v", err)
	}
	b.account("acme")
}

func testAccountConflicts(t *testing.T, b *bundle) {
	a, c := b.account("a"), b.account("c")
	if err := b.s.CreateAccount(b.ctx, account.Account{ID: b.id("acc_"), Name: "a", CreatedAt: b.now, UpdatedAt: b.now}); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("CreateAccount(taken name) = %v, want ErrNameTaken", err)
	}
	if err := b.s.CreateAccount(b.ctx, account.Account{ID: a.ID, Name: "new", CreatedAt: b.now, UpdatedAt: b.now}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateAccount(existing ID) = %v, want ErrConflict", err)
	}
	up := c
	up.Name, up.UpdatedAt = "a", b.at(time.Second)
	if err := b.s.UpdateAccount(b.ctx, up); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("UpdateAccount(taken name) = %v, want ErrNameTaken", err)
	}
	equal(t, "account after a refused update", getAccount(b, c.ID), c)
	equal(t, "accounts", listAccounts(b, 10), []string{account.DefaultID, a.ID, c.ID})
}

func testAccountNotFound(t *testing.T, b *bundle) {
	id := b.id("acc_")
	if _, err := b.s.GetAccount(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetAccount(unknown) = %v, want ErrNotFound", err)
	}
	if err := b.s.UpdateAccount(b.ctx, account.Account{ID: id, Name: "x", UpdatedAt: b.now}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateAccount(unknown) = %v, want ErrNotFound", err)
	}
	if err := b.s.DeleteAccount(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteAccount(unknown) = %v, want ErrNotFound", err)
	}
	sub := subscription.Subscription{ID: b.id("sub_"), AccountID: id, Name: "s", URL: "https://x.example/",
		EndpointID: b.s.EndpointID(id, "https://x.example/"), State: "active", CreatedAt: b.now, UpdatedAt: b.now}
	if err := b.s.CreateSubscription(b.ctx, sub); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateSubscription(unknown account) = %v, want ErrNotFound", err)
	}
	if _, err := b.s.GetSubscription(b.ctx, sub.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a subscription of an unknown account was stored (%v)", err)
	}
	if _, err := b.s.GetEndpoint(b.ctx, sub.EndpointID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an endpoint of an unknown account was stored (%v)", err)
	}
}

// testAccountDelete: an account without subscriptions goes with its keys;
// its events and finished deliveries stay.
func testAccountDelete(t *testing.T, b *bundle) {
	a, kept := b.account("a"), b.account("kept")
	k1, k2 := key(b, a.ID, account.RoleAccount), key(b, a.ID, account.RolePublish)
	other := key(b, kept.ID, account.RoleAccount)
	sub := b.subIn(a.ID, "https://a.example/hook")
	ev, seq := b.claimOne(sub, b.now)
	done := ev.Deliveries[0].ID
	b.record(succeeded(done, 1, b.now))
	deleteSub(b, sub)

	if err := b.s.DeleteAccount(b.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.GetAccount(b.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetAccount after delete = %v, want ErrNotFound", err)
	}
	for _, k := range []account.Key{k1, k2} {
		if _, err := b.s.GetKey(b.ctx, k.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetKey(%s) of a deleted account = %v, want ErrNotFound", k.ID, err)
		}
		if _, err := b.s.KeyByHash(b.ctx, k.Hash); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("KeyByHash of a deleted account's key = %v, want ErrNotFound", err)
		}
	}
	equal(t, "keys of the deleted account", listKeys(b, a.ID, 10), []string{})
	equal(t, "keys of another account", listKeys(b, kept.ID, 10), []string{other.ID})
	equal(t, "accounts", listAccounts(b, 10), []string{account.DefaultID, kept.ID})
	if d := b.get(done); d.Status != delivery.StatusDelivered || d.AccountID != a.ID {
		t.Fatalf("finished delivery of a deleted account: %+v", d)
	}
	if e, err := b.s.GetEvent(b.ctx, seq); err != nil || e.AccountID != a.ID {
		t.Fatalf("event of a deleted account: %+v, %v", e, err)
	}
	if err := b.s.DeleteAccount(b.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DeleteAccount = %v, want ErrNotFound", err)
	}
	if err := b.s.CreateKey(b.ctx, newKey(b, a.ID, account.RoleAccount)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateKey in a deleted account = %v, want ErrNotFound", err)
	}
	// Its name is free again.
	b.account("a")
}

// testAccountDeleteRefused: the default account and an account with
// subscriptions stay, with their keys.
func testAccountDeleteRefused(t *testing.T, b *bundle) {
	dk := key(b, account.DefaultID, account.RoleAdmin)
	if err := b.s.DeleteAccount(b.ctx, account.DefaultID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteAccount(default) = %v, want ErrConflict", err)
	}
	a := b.account("a")
	k := key(b, a.ID, account.RoleAccount)
	sub := b.subIn(a.ID, "https://a.example/hook")
	v := authVersion(b)
	if err := b.s.DeleteAccount(b.ctx, a.ID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteAccount(with a subscription) = %v, want ErrConflict", err)
	}
	if got := authVersion(b); got != v {
		t.Fatalf("a refused DeleteAccount moved the auth version from %d to %d", v, got)
	}
	equal(t, "account", getAccount(b, a.ID), a)
	equal(t, "key", getKey(b, k.ID), k)
	equal(t, "default key", getKey(b, dk.ID), dk)
	readEndpoint(b, sub.EndpointID)
	deleteSub(b, sub)
	if err := b.s.DeleteAccount(b.ctx, a.ID); err != nil {
		t.Fatalf("DeleteAccount after its subscription went = %v", err)
	}
}

func testKeyRoundTrip(t *testing.T, b *bundle) {
	a := b.account("a")
	k := key(b, a.ID, account.RolePublish)
	equal(t, "GetKey", getKey(b, k.ID), k)
	byHash, err := b.s.KeyByHash(b.ctx, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "KeyByHash", byHash, k)
	// A key without an account is the default account's.
	d := newKey(b, "", account.RoleAdmin)
	if err := b.s.CreateKey(b.ctx, d); err != nil {
		t.Fatal(err)
	}
	d.AccountID = account.DefaultID
	equal(t, "key of the default account", getKey(b, d.ID), d)

	if err := b.s.DeleteKey(b.ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.GetKey(b.ctx, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetKey after delete = %v, want ErrNotFound", err)
	}
	if _, err := b.s.KeyByHash(b.ctx, k.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("KeyByHash after delete = %v, want ErrNotFound", err)
	}
	if err := b.s.DeleteKey(b.ctx, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DeleteKey = %v, want ErrNotFound", err)
	}
	equal(t, "the other key", getKey(b, d.ID), d)
}

func testKeyConflicts(t *testing.T, b *bundle) {
	a := b.account("a")
	k := key(b, a.ID, account.RoleAccount)
	sameID := newKey(b, a.ID, account.RoleAccount)
	sameID.ID = k.ID
	if err := b.s.CreateKey(b.ctx, sameID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateKey(existing ID) = %v, want ErrConflict", err)
	}
	sameHash := newKey(b, account.DefaultID, account.RoleAccount)
	sameHash.Hash = k.Hash
	if err := b.s.CreateKey(b.ctx, sameHash); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateKey(existing hash) = %v, want ErrConflict", err)
	}
	missing := newKey(b, b.id("acc_"), account.RoleAccount)
	if err := b.s.CreateKey(b.ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateKey(unknown account) = %v, want ErrNotFound", err)
	}
	for _, id := range []string{sameHash.ID, missing.ID} {
		if _, err := b.s.GetKey(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("refused key %s was stored (%v)", id, err)
		}
	}
	equal(t, "key", getKey(b, k.ID), k)
}
