package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// TestDeleteAccountRacesSubscription: an account deleted on one node while
// another creates a subscription in it never leaves a subscription of a
// deleted account behind: either the delete is refused (ErrConflict), or
// the subscription is (ErrNotFound).
func TestDeleteAccountRacesSubscription(t *testing.T) {
	dbURL := freshSchema(t)
	a, b := openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})
	ctx := context.Background()
	for i := range 40 {
		acc := account.Account{ID: ids.New("acc_", t0), Name: fmt.Sprintf("race-%d", i), CreatedAt: t0, UpdatedAt: t0}
		if err := a.CreateAccount(ctx, acc); err != nil {
			t.Fatal(err)
		}
		u := fmt.Sprintf("https://race.example/%d", i)
		sub := subscription.Subscription{ID: ids.New("sub_", t0), AccountID: acc.ID, Name: "s", URL: u,
			EndpointID: a.EndpointID(acc.ID, u), State: "active", CreatedAt: t0, UpdatedAt: t0}
		var created, deleted error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); created = a.CreateSubscription(ctx, sub) }()
		go func() { defer wg.Done(); deleted = b.DeleteAccount(ctx, acc.ID) }()
		wg.Wait()
		switch {
		case created == nil && errors.Is(deleted, store.ErrConflict):
			if _, err := a.GetAccount(ctx, acc.ID); err != nil {
				t.Fatalf("round %d: the account of a created subscription: %v", i, err)
			}
		case errors.Is(created, store.ErrNotFound) && deleted == nil:
			if _, err := a.GetSubscription(ctx, sub.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("round %d: a subscription of a deleted account was stored (%v)", i, err)
			}
			if _, err := a.GetEndpoint(ctx, sub.EndpointID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("round %d: an endpoint of a deleted account was stored (%v)", i, err)
			}
		default:
			t.Fatalf("round %d: CreateSubscription = %v, DeleteAccount = %v", i, created, deleted)
		}
	}
}

// TestAuthChangeNotified: an account or key write on one node signals
// AuthChanged on another.
func TestAuthChangeNotified(t *testing.T) {
	dbURL := freshSchema(t)
	a, b := openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})
	wait := func(what string) {
		t.Helper()
		select {
		case <-b.AuthChanged():
		case <-time.After(10 * time.Second):
			t.Fatalf("no AuthChanged signal %s", what)
		}
	}
	wait("once listening") // every kind is signalled when the listener connects
	if err := a.CreateAccount(context.Background(), account.Account{ID: ids.New("acc_", t0), Name: "n", CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	wait("after CreateAccount on another node")
}
