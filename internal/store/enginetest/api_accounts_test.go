package enginetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
)

// newKey returns a key of account with a new ID and a hash of its own
// (not stored).
func newKey(b *bundle, accountID, role string) account.Key {
	id := b.id("key_")
	sum := sha256.Sum256([]byte("secret of " + id))
	return account.Key{ID: id, AccountID: accountID, Role: role, Name: "key " + id[len(id)-4:],
		Hash: sum[:], Prefix: "hk_" + id[len(id)-6:], CreatedAt: b.now}
}

// key creates a key of account.
func key(b *bundle, accountID, role string) account.Key {
	b.t.Helper()
	k := newKey(b, accountID, role)
	if err := b.s.CreateKey(b.ctx, k); err != nil {
		b.t.Fatalf("CreateKey: %v", err)
	}
	return k
}

func getAccount(b *bundle, id string) account.Account {
	b.t.Helper()
	a, err := b.s.GetAccount(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetAccount(%s): %v", id, err)
	}
	return a
}

func getKey(b *bundle, id string) account.Key {
	b.t.Helper()
	k, err := b.s.GetKey(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetKey(%s): %v", id, err)
	}
	return k
}

func authVersion(b *bundle) int64 {
	b.t.Helper()
	v, err := b.s.AuthVersion(b.ctx)
	if err != nil {
		b.t.Fatalf("AuthVersion: %v", err)
	}
	return v
}

// listAccounts lists every account with limit, checking the page rule.
func listAccounts(b *bundle, limit int) []string {
	b.t.Helper()
	return pageIDs(b.t, limit, func(p store.Page) ([]account.Account, string, error) { return b.s.ListAccounts(b.ctx, p) },
		func(a account.Account) string { return a.ID })
}

// listKeys lists every key of account with limit.
func listKeys(b *bundle, accountID string, limit int) []string {
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
	equal(t, "accounts of a new store", listAccounts(b, 10), []string{account.DefaultID})
	a, c := b.account("a"), b.account("c")
	if !(a.ID < account.DefaultID) {
		t.Fatalf("test setup: %s should sort before %s", a.ID, account.DefaultID)
	}
	for _, limit := range []int{1, 2, 3, 4} {
		equal(t, fmt.Sprintf("accounts, limit %d", limit), listAccounts(b, limit), []string{account.DefaultID, a.ID, c.ID})
	}
	if err := b.s.CreateAccount(b.ctx, account.Account{ID: account.DefaultID, Name: "another", CreatedAt: b.now, UpdatedAt: b.now}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateAccount(default ID) = %v, want ErrConflict", err)
	}
	if err := b.s.CreateAccount(b.ctx, account.Account{ID: b.id("acc_"), Name: d.Name, CreatedAt: b.now, UpdatedAt: b.now}); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("CreateAccount(default's name) = %v, want ErrNameTaken", err)
	}
	equal(t, "default account after refused creations", getAccount(b, account.DefaultID), d)
}

func testAccountList(t *testing.T, b *bundle) {
	want := []string{account.DefaultID}
	for i := 0; i < 6; i++ {
		want = append(want, b.account(fmt.Sprintf("account-%d", i)).ID)
	}
	for _, limit := range []int{1, 2, 3, 7, 8} {
		equal(t, fmt.Sprintf("accounts, limit %d", limit), listAccounts(b, limit), want)
	}
	as, next, err := b.s.ListAccounts(b.ctx, store.Page{Limit: 2})
	if err != nil || len(as) != 2 || next != want[1] {
		t.Fatalf("first page: %+v, cursor %q, %v; want 2 accounts and cursor %s", as, next, err, want[1])
	}
	equal(t, "first page", as[1], getAccount(b, want[1]))
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

func testKeyList(t *testing.T, b *bundle) {
	a, c := b.account("a"), b.account("c")
	var ofA, ofC []string
	for i := 0; i < 7; i++ {
		if i%3 == 2 {
			ofC = append(ofC, key(b, c.ID, account.RoleAccount).ID)
		} else {
			ofA = append(ofA, key(b, a.ID, account.RolePublish).ID)
		}
	}
	for _, limit := range []int{1, 2, 5, 6} {
		equal(t, fmt.Sprintf("keys of a, limit %d", limit), listKeys(b, a.ID, limit), ofA)
		equal(t, fmt.Sprintf("keys of c, limit %d", limit), listKeys(b, c.ID, limit), ofC)
	}
	equal(t, "keys of the default account", listKeys(b, account.DefaultID, 10), []string{})
	ks, _, err := b.s.ListKeys(b.ctx, a.ID, store.Page{Limit: 1})
	if err != nil || len(ks) != 1 {
		t.Fatalf("ListKeys = %+v, %v", ks, err)
	}
	equal(t, "listed key", ks[0], getKey(b, ofA[0]))
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
