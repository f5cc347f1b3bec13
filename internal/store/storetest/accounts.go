package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

var accountTests = []test{
	{"DefaultExistsAndListsFirst", testAccountDefault},
	{"CreateGetUpdate", testAccountRoundTrip},
	{"NameTakenAndIDConflict", testAccountConflicts},
	{"NotFound", testAccountNotFound},
	{"ListPages", testAccountList},
	{"InvalidCursors", testAccountCursors},
	{"Delete", testAccountDelete},
	{"DeleteRefused", testAccountDeleteRefused},
	{"AuthVersion", testAuthVersion},
}

var keyTests = []test{
	{"CreateGetDelete", testKeyRoundTrip},
	{"Conflicts", testKeyConflicts},
	{"ListPerAccount", testKeyList},
	{"FirstKeyOnce", testFirstKey},
	{"FirstKeyRace", testFirstKeyRace},
}

// account creates an account with a new ID, named name, at b.now.
func (b *bundle) account(name string) account.Account {
	b.t.Helper()
	a := account.Account{ID: b.id("acc_"), Name: name, Settings: account.Settings{FailurePolicy: "queue"},
		CreatedAt: b.now, UpdatedAt: b.now}
	if err := b.s.CreateAccount(b.ctx, a); err != nil {
		b.t.Fatalf("CreateAccount(%s): %v", name, err)
	}
	return a
}

// newKey returns a key of accountID with a new ID and a hash of its own
// (not stored).
func (b *bundle) newKey(accountID, role string) account.Key {
	id := b.id("key_")
	sum := sha256.Sum256([]byte("secret of " + id))
	return account.Key{ID: id, AccountID: accountID, Role: role, Name: "key " + id[len(id)-4:],
		Hash: sum[:], Prefix: "hk_" + id[len(id)-6:], CreatedAt: b.now}
}

// key creates a key of account.
func (b *bundle) key(account, role string) account.Key {
	b.t.Helper()
	k := b.newKey(account, role)
	if err := b.s.CreateKey(b.ctx, k); err != nil {
		b.t.Fatalf("CreateKey: %v", err)
	}
	return k
}

func (b *bundle) getAccount(id string) account.Account {
	b.t.Helper()
	a, err := b.s.GetAccount(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetAccount(%s): %v", id, err)
	}
	return a
}

func (b *bundle) getKey(id string) account.Key {
	b.t.Helper()
	k, err := b.s.GetKey(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetKey(%s): %v", id, err)
	}
	return k
}

func (b *bundle) authVersion() int64 {
	b.t.Helper()
	v, err := b.s.AuthVersion(b.ctx)
	if err != nil {
		b.t.Fatalf("AuthVersion: %v", err)
	}
	return v
}

// listAccounts lists every account with limit, checking the page rule.
func (b *bundle) listAccounts(limit int) []string {
	b.t.Helper()
	return pageIDs(b.t, limit, func(p store.Page) ([]account.Account, string, error) { return b.s.ListAccounts(b.ctx, p) },
		func(a account.Account) string { return a.ID })
}

// listKeys lists every key of accountID with limit.
func (b *bundle) listKeys(accountID string, limit int) []string {
	b.t.Helper()
	return pageIDs(b.t, limit, func(p store.Page) ([]account.Key, string, error) { return b.s.ListKeys(b.ctx, accountID, p) },
		func(k account.Key) string { return k.ID })
}

// testAccountDefault: a new store holds account.DefaultID, which lists first
// (before accounts whose IDs sort before its own) and cannot be replaced.
func testAccountDefault(t *testing.T, b *bundle) {
	d, err := b.s.GetAccount(b.ctx, account.DefaultID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != account.DefaultID || d.Name == "" || d.Settings.FailurePolicy != "retry" || d.CreatedAt.IsZero() {
		t.Fatalf("default account: %+v", d)
	}
	equal(t, "accounts of a new store", b.listAccounts(10), []string{account.DefaultID})
	a, c := b.account("a"), b.account("c")
	if !(a.ID < account.DefaultID) {
		t.Fatalf("test setup: %s should sort before %s", a.ID, account.DefaultID)
	}
	for _, limit := range []int{1, 2, 3, 4} {
		equal(t, fmt.Sprintf("accounts, limit %d", limit), b.listAccounts(limit), []string{account.DefaultID, a.ID, c.ID})
	}
	if err := b.s.CreateAccount(b.ctx, account.Account{ID: account.DefaultID, Name: "another", CreatedAt: b.now, UpdatedAt: b.now}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateAccount(default ID) = %v, want ErrConflict", err)
	}
	if err := b.s.CreateAccount(b.ctx, account.Account{ID: b.id("acc_"), Name: d.Name, CreatedAt: b.now, UpdatedAt: b.now}); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("CreateAccount(default's name) = %v, want ErrNameTaken", err)
	}
	equal(t, "default account after refused creations", b.getAccount(account.DefaultID), d)
}

func testAccountRoundTrip(t *testing.T, b *bundle) {
	a := b.account("acme")
	equal(t, "created", b.getAccount(a.ID), a)

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
	equal(t, "updated", b.getAccount(a.ID), want)
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
	equal(t, "account after a refused update", b.getAccount(c.ID), c)
	equal(t, "accounts", b.listAccounts(10), []string{account.DefaultID, a.ID, c.ID})
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

func testAccountList(t *testing.T, b *bundle) {
	want := []string{account.DefaultID}
	for i := 0; i < 6; i++ {
		want = append(want, b.account(fmt.Sprintf("account-%d", i)).ID)
	}
	for _, limit := range []int{1, 2, 3, 7, 8} {
		equal(t, fmt.Sprintf("accounts, limit %d", limit), b.listAccounts(limit), want)
	}
	as, next, err := b.s.ListAccounts(b.ctx, store.Page{Limit: 2})
	if err != nil || len(as) != 2 || next != want[1] {
		t.Fatalf("first page: %+v, cursor %q, %v; want 2 accounts and cursor %s", as, next, err, want[1])
	}
	equal(t, "first page", as[1], b.getAccount(want[1]))
	// After the default account's ID come all the others.
	as, _, err = b.s.ListAccounts(b.ctx, store.Page{Cursor: account.DefaultID})
	if err != nil || len(as) != len(want)-1 || as[0].ID != want[1] {
		t.Fatalf("after the default account: %+v, %v", as, err)
	}
}

// testAccountCursors: the account list answers ErrInvalidCursor for a
// cursor not in its format and takes one in its format it never gave.
func testAccountCursors(t *testing.T, b *bundle) {
	a := b.account("a")
	ulid := ids.New("", b.at(time.Hour))
	for _, c := range []string{"acc_", "acc_" + ulid[1:], "acc_" + ulid + "0", "sub_" + ulid, "acc_" + strings.ToUpper(ulid),
		"acc_default ", "default", "acc_default' OR '1'='1", "~"} {
		if as, _, err := b.s.ListAccounts(b.ctx, store.Page{Cursor: c}); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("cursor %q: %d accounts, %v; want ErrInvalidCursor", c, len(as), err)
		}
	}
	for c, want := range map[string][]string{
		"acc_" + strings.Repeat("0", 26): {a.ID},
		"acc_" + ulid:                    {},
		account.DefaultID:                {a.ID},
	} {
		as, next, err := b.s.ListAccounts(b.ctx, store.Page{Cursor: c})
		got := []string{}
		for _, x := range as {
			got = append(got, x.ID)
		}
		if err != nil || next != "" {
			t.Fatalf("cursor %q: cursor %q, %v", c, next, err)
		}
		equal(t, "after cursor "+c, got, want)
	}
}

// testAccountDelete: an account without subscriptions goes with its keys;
// its events and finished deliveries stay.
func testAccountDelete(t *testing.T, b *bundle) {
	a, kept := b.account("a"), b.account("kept")
	k1, k2 := b.key(a.ID, account.RoleAccount), b.key(a.ID, account.RolePublish)
	other := b.key(kept.ID, account.RoleAccount)
	sub := b.subIn(a.ID, "https://a.example/hook")
	ev, seq := b.claimOne(sub, b.now)
	done := ev.Deliveries[0].ID
	b.record(succeeded(done, 1, b.now))
	b.deleteSub(sub)

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
	equal(t, "keys of the deleted account", b.listKeys(a.ID, 10), []string{})
	equal(t, "keys of another account", b.listKeys(kept.ID, 10), []string{other.ID})
	equal(t, "accounts", b.listAccounts(10), []string{account.DefaultID, kept.ID})
	if d := b.get(done); d.Status != delivery.StatusDelivered || d.AccountID != a.ID {
		t.Fatalf("finished delivery of a deleted account: %+v", d)
	}
	if e, err := b.s.GetEvent(b.ctx, seq); err != nil || e.AccountID != a.ID {
		t.Fatalf("event of a deleted account: %+v, %v", e, err)
	}
	if err := b.s.DeleteAccount(b.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DeleteAccount = %v, want ErrNotFound", err)
	}
	if err := b.s.CreateKey(b.ctx, b.newKey(a.ID, account.RoleAccount)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateKey in a deleted account = %v, want ErrNotFound", err)
	}
	// Its name is free again.
	b.account("a")
}

// testAccountDeleteRefused: the default account and an account with
// subscriptions stay, with their keys.
func testAccountDeleteRefused(t *testing.T, b *bundle) {
	dk := b.key(account.DefaultID, account.RoleAdmin)
	if err := b.s.DeleteAccount(b.ctx, account.DefaultID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteAccount(default) = %v, want ErrConflict", err)
	}
	a := b.account("a")
	k := b.key(a.ID, account.RoleAccount)
	sub := b.subIn(a.ID, "https://a.example/hook")
	v := b.authVersion()
	if err := b.s.DeleteAccount(b.ctx, a.ID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteAccount(with a subscription) = %v, want ErrConflict", err)
	}
	if got := b.authVersion(); got != v {
		t.Fatalf("a refused DeleteAccount moved the auth version from %d to %d", v, got)
	}
	equal(t, "account", b.getAccount(a.ID), a)
	equal(t, "key", b.getKey(k.ID), k)
	equal(t, "default key", b.getKey(dk.ID), dk)
	b.endpoint(sub.EndpointID)
	b.deleteSub(sub)
	if err := b.s.DeleteAccount(b.ctx, a.ID); err != nil {
		t.Fatalf("DeleteAccount after its subscription went = %v", err)
	}
}

// testAuthVersion: every account and key write advances the auth
// version, reads and refused writes do not.
func testAuthVersion(t *testing.T, b *bundle) {
	v := b.authVersion()
	if v <= 0 {
		t.Fatalf("auth version of a new store %d, want > 0", v)
	}
	advanced := func(what string) {
		t.Helper()
		if got := b.authVersion(); got <= v {
			t.Fatalf("%s: auth version %d, was %d: want it to advance", what, got, v)
		} else {
			v = got
		}
	}
	unchanged := func(what string) {
		t.Helper()
		if got := b.authVersion(); got != v {
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
	first := b.newKey(a.ID, account.RoleAdmin)
	if ok, err := b.s.CreateFirstKey(b.ctx, first); err != nil || !ok {
		t.Fatalf("CreateFirstKey = %v, %v", ok, err)
	}
	advanced("CreateFirstKey")
	k := b.key(a.ID, account.RoleAccount)
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
	kc := b.key(c.ID, account.RoleAccount)
	advanced("CreateKey")
	_ = b.s.CreateAccount(b.ctx, account.Account{ID: b.id("acc_"), Name: "c", CreatedAt: b.now, UpdatedAt: b.now})
	_ = b.s.UpdateAccount(b.ctx, account.Account{ID: b.id("acc_"), Name: "x", UpdatedAt: b.now})
	_ = b.s.DeleteAccount(b.ctx, account.DefaultID)
	_ = b.s.DeleteKey(b.ctx, b.id("key_"))
	_ = b.s.CreateKey(b.ctx, b.newKey(b.id("acc_"), account.RoleAccount))
	dup := b.newKey(c.ID, account.RoleAccount)
	dup.Hash = kc.Hash
	_ = b.s.CreateKey(b.ctx, dup)
	unchanged("refused writes")
	// Subscription writes are not auth writes.
	b.subIn(c.ID, "https://c.example/hook")
	unchanged("CreateSubscription")
}

func testKeyRoundTrip(t *testing.T, b *bundle) {
	a := b.account("a")
	k := b.key(a.ID, account.RolePublish)
	equal(t, "GetKey", b.getKey(k.ID), k)
	byHash, err := b.s.KeyByHash(b.ctx, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "KeyByHash", byHash, k)
	// A key without an account is the default account's.
	d := b.newKey("", account.RoleAdmin)
	if err := b.s.CreateKey(b.ctx, d); err != nil {
		t.Fatal(err)
	}
	d.AccountID = account.DefaultID
	equal(t, "key of the default account", b.getKey(d.ID), d)

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
	equal(t, "the other key", b.getKey(d.ID), d)
}

func testKeyConflicts(t *testing.T, b *bundle) {
	a := b.account("a")
	k := b.key(a.ID, account.RoleAccount)
	sameID := b.newKey(a.ID, account.RoleAccount)
	sameID.ID = k.ID
	if err := b.s.CreateKey(b.ctx, sameID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateKey(existing ID) = %v, want ErrConflict", err)
	}
	sameHash := b.newKey(account.DefaultID, account.RoleAccount)
	sameHash.Hash = k.Hash
	if err := b.s.CreateKey(b.ctx, sameHash); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateKey(existing hash) = %v, want ErrConflict", err)
	}
	missing := b.newKey(b.id("acc_"), account.RoleAccount)
	if err := b.s.CreateKey(b.ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateKey(unknown account) = %v, want ErrNotFound", err)
	}
	for _, id := range []string{sameHash.ID, missing.ID} {
		if _, err := b.s.GetKey(b.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("refused key %s was stored (%v)", id, err)
		}
	}
	equal(t, "key", b.getKey(k.ID), k)
}

func testKeyList(t *testing.T, b *bundle) {
	a, c := b.account("a"), b.account("c")
	var ofA, ofC []string
	for i := 0; i < 7; i++ {
		if i%3 == 2 {
			ofC = append(ofC, b.key(c.ID, account.RoleAccount).ID)
		} else {
			ofA = append(ofA, b.key(a.ID, account.RolePublish).ID)
		}
	}
	for _, limit := range []int{1, 2, 5, 6} {
		equal(t, fmt.Sprintf("keys of a, limit %d", limit), b.listKeys(a.ID, limit), ofA)
		equal(t, fmt.Sprintf("keys of c, limit %d", limit), b.listKeys(c.ID, limit), ofC)
	}
	equal(t, "keys of the default account", b.listKeys(account.DefaultID, 10), []string{})
	ks, _, err := b.s.ListKeys(b.ctx, a.ID, store.Page{Limit: 1})
	if err != nil || len(ks) != 1 {
		t.Fatalf("ListKeys = %+v, %v", ks, err)
	}
	equal(t, "listed key", ks[0], b.getKey(ofA[0]))
	ulid := ids.New("", b.at(time.Hour))
	for _, cursor := range []string{"key_", "key_" + ulid[1:], "acc_" + ulid, "sub_" + ulid, "x"} {
		if _, _, err := b.s.ListKeys(b.ctx, a.ID, store.Page{Cursor: cursor}); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("ListKeys(cursor %q) = %v, want ErrInvalidCursor", cursor, err)
		}
	}
	if ks, _, err := b.s.ListKeys(b.ctx, a.ID, store.Page{Cursor: "key_" + strings.Repeat("0", 26)}); err != nil || len(ks) != len(ofA) {
		t.Fatalf("ListKeys(cursor before every key) = %d keys, %v; want %d", len(ks), err, len(ofA))
	}
}

func testFirstKey(t *testing.T, b *bundle) {
	missing := b.newKey(b.id("acc_"), account.RoleAdmin)
	if ok, err := b.s.CreateFirstKey(b.ctx, missing); !errors.Is(err, store.ErrNotFound) || ok {
		t.Fatalf("CreateFirstKey(unknown account) = %v, %v; want false, ErrNotFound", ok, err)
	}
	first := b.newKey(account.DefaultID, account.RoleAdmin)
	if ok, err := b.s.CreateFirstKey(b.ctx, first); err != nil || !ok {
		t.Fatalf("CreateFirstKey on a store without keys = %v, %v; want true", ok, err)
	}
	equal(t, "first key", b.getKey(first.ID), first)
	second := b.newKey(account.DefaultID, account.RoleAdmin)
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
	b.key(a.ID, account.RolePublish)
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
		keys[i] = b.newKey(account.DefaultID, account.RoleAdmin)
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
	equal(t, "keys", b.listKeys(account.DefaultID, 100), winners)
}
