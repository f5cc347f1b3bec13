package enginetest

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

// CheckSubscriptionLimit checks MaxSubscriptionsPerAccount. nodes are
// stores on one database, each opened with MaxSubscriptionsPerAccount
// limit (at least 2); the conformance suite's backends pass one, a shared
// backend several (several processes). Twice the limit of creates in one
// account race through every node at once: exactly limit succeed, every
// other one fails with a *store.SubscriptionLimitError naming the limit
// and leaves nothing behind (no subscription, no endpoint row); another
// account still creates its own; and once one of the full account's
// subscriptions is deleted, exactly one more can be created.
func CheckSubscriptionLimit(t *testing.T, limit int, nodes ...store.Store) {
	t.Helper()
	ctx := context.Background()
	at := base
	account := func(name string) string {
		a := account.Account{ID: ids.New("acc_", at), Name: name + "-" + ids.New("", at), CreatedAt: at, UpdatedAt: at}
		if err := nodes[0].CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	full, other := account("full"), account("other")
	n := 0
	var mu sync.Mutex
	newSub := func(acc string) subscription.Subscription {
		mu.Lock()
		defer mu.Unlock()
		n++
		url := fmt.Sprintf("https://limit.example/%d", n)
		return subscription.Subscription{ID: ids.New("sub_", at), AccountID: acc, Name: fmt.Sprintf("limit-%d", n), URL: url,
			EndpointID: nodes[0].EndpointID(acc, url), EventTypes: []string{"x"}, State: "active", CreatedAt: at, UpdatedAt: at}
	}

	var wg sync.WaitGroup
	errs := make([]error, 2*limit)
	subs := make([]subscription.Subscription, 2*limit)
	for i := range errs {
		subs[i] = newSub(full)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = nodes[i%len(nodes)].CreateSubscription(ctx, subs[i])
		}()
	}
	wg.Wait()
	var created []subscription.Subscription
	for i, err := range errs {
		var le *store.SubscriptionLimitError
		switch {
		case err == nil:
			created = append(created, subs[i])
		case errors.As(err, &le) && errors.Is(err, store.ErrSubscriptionLimit) && le.Limit == limit:
			if _, err := nodes[0].GetSubscription(ctx, subs[i].ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("refused %s: GetSubscription = %v, want ErrNotFound", subs[i].ID, err)
			}
			if _, err := nodes[0].GetEndpoint(ctx, subs[i].EndpointID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("refused %s: its endpoint row exists (%v)", subs[i].ID, err)
			}
		default:
			t.Errorf("CreateSubscription %d: %v, want nil or a *SubscriptionLimitError with limit %d", i, err, limit)
		}
	}
	if len(created) != limit {
		t.Fatalf("%d creates at once in an account with a limit of %d: %d succeeded, want exactly %d", len(errs), limit, len(created), limit)
	}
	list, _, err := nodes[len(nodes)-1].ListSubscriptions(ctx, full, store.Page{Limit: 2 * limit})
	if err != nil || len(list) != limit {
		t.Fatalf("ListSubscriptions: %d subscriptions (%v), want %d", len(list), err, limit)
	}

	if err := nodes[len(nodes)-1].CreateSubscription(ctx, newSub(other)); err != nil {
		t.Fatalf("another account's create: %v", err)
	}
	if err := nodes[0].DeleteSubscription(ctx, created[0].ID, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := nodes[len(nodes)-1].CreateSubscription(ctx, newSub(full)); err != nil {
		t.Fatalf("a create after a delete: %v", err)
	}
	if err := nodes[0].CreateSubscription(ctx, newSub(full)); !errors.Is(err, store.ErrSubscriptionLimit) {
		t.Fatalf("a create past the limit again: %v, want ErrSubscriptionLimit", err)
	}
}
