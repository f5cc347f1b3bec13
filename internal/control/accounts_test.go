package control_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/control"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlite"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// setup returns a control plane on a real SQLite store and the
// authenticator it tells of its writes. The authenticator never rechecks
// the auth version on its own (it is not run), so whatever it sees of a
// write it sees because the control plane flushed it.
func setup(t *testing.T) (*control.Accounts, *auth.Authenticator) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(t0)
	a := auth.New(st, auth.Options{Clock: clk, Recheck: time.Hour})
	return &control.Accounts{Store: st, Clock: clk, Auth: a}, a
}

// TestKeyWritesTakeEffectAtOnce: a key made through the control plane
// authenticates, and once deleted it no longer does on this node, although
// the authenticator had cached it.
func TestKeyWritesTakeEffectAtOnce(t *testing.T) {
	ctx := context.Background()
	ctl, a := setup(t)
	if _, err := a.Authenticate(ctx, "hk_unknown"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("an unknown key: %v, want ErrUnauthenticated", err)
	}
	secret, k := auth.NewKey("", account.RoleAccount, "ci", t0)
	if err := ctl.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if p, err := a.Authenticate(ctx, secret); err != nil || p.KeyID != k.ID {
		t.Fatalf("the new key authenticates as %+v, %v; want key %s", p, err, k.ID)
	}
	if err := ctl.DeleteKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("the deleted key: %v, want ErrUnauthenticated at once", err)
	}
	if err := ctl.DeleteKey(ctx, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting it again: %v, want store.ErrNotFound", err)
	}
	_, other := auth.NewKey("acc_nobody", account.RolePublish, "", t0)
	if err := ctl.CreateKey(ctx, other); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a key of an account that does not exist: %v, want store.ErrNotFound", err)
	}
}

// TestAccountWritesTakeEffectAtOnce: the authenticator's cached account
// follows an update and a deletion made through the control plane, and a
// change refused by its function writes nothing.
func TestAccountWritesTakeEffectAtOnce(t *testing.T) {
	ctx := context.Background()
	ctl, a := setup(t)
	acc := account.Account{ID: "acc_01kdw7y5r0000000000000000a", Name: "billing", CreatedAt: t0, UpdatedAt: t0}
	if err := ctl.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Account(ctx, acc.ID); err != nil || got.Name != "billing" {
		t.Fatalf("Account = %+v, %v; want billing", got, err)
	}
	refused := errors.New("refused")
	if _, err := ctl.UpdateAccount(ctx, acc.ID, func(a *account.Account) error {
		a.Name = "never"
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("UpdateAccount with a refusing change: %v, want its error", err)
	}
	got, err := ctl.UpdateAccount(ctx, acc.ID, func(a *account.Account) error {
		a.Name = "invoicing"
		return nil
	})
	if err != nil || got.Name != "invoicing" || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("UpdateAccount = %+v, %v; want invoicing, updated at %v", got, err, t0)
	}
	if got, err := a.Account(ctx, acc.ID); err != nil || got.Name != "invoicing" {
		t.Fatalf("Account after the update = %+v, %v; want invoicing at once", got, err)
	}
	if err := ctl.DeleteAccount(ctx, acc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Account(ctx, acc.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Account after the deletion: %v, want store.ErrNotFound at once", err)
	}
	if err := ctl.DeleteAccount(ctx, account.DefaultID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("deleting the default account: %v, want store.ErrConflict", err)
	}
}
