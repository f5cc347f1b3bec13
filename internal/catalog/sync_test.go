package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/store/sqlite"
	"github.com/herald-events/herald/internal/subscription"
)

// TestSyncSharesWhatItDoesNotChange: a sync that brings one new
// subscription copies the one shard of each map it writes and rebuilds
// the one group the subscription joins; every other group, and every
// other shard, is the previous snapshot's own. So a sync costs what
// changed, not the number of subscriptions (a create took 17 ms at 10,000
// subscriptions when every sync rebuilt the whole catalog).
func TestSyncSharesWhatItDoesNotChange(t *testing.T) {
	ctx, st := context.Background(), openStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	create := func(id string, types ...string) {
		t.Helper()
		if err := st.CreateSubscription(ctx, subscription.Subscription{ID: id, Name: id, DeliveryMode: subscription.ModePull,
			EventTypes: types, State: "active", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2000 {
		create(fmt.Sprintf("sub_%04d", i), fmt.Sprintf("t%d", i%20))
	}
	c := New(st)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := c.Snapshot()
	create("sub_new", "t3")
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after := c.Snapshot()
	if after.Get("sub_new") == nil || after.size() != 2001 || before.Get("sub_new") != nil {
		t.Fatalf("after: sub_new %v, %d entries; before: sub_new %v", after.Get("sub_new"), after.size(), before.Get("sub_new"))
	}
	if n := differing(before.byID, after.byID); n != 1 {
		t.Errorf("byID: %d shards differ, want 1", n)
	}
	if n := differing(before.groups, after.groups); n != 1 {
		t.Errorf("groups: %d shards differ, want 1", n)
	}
	for i := range 20 {
		k := groupKey{account: account.DefaultID, typ: fmt.Sprintf("t%d", i)}
		same := before.groups.get(k) == after.groups.get(k)
		if same == (i == 3) {
			t.Errorf("group t%d: shared %v, want %v", i, same, i != 3)
		}
	}
	if got := len(mustMatch(t, after, "", "t3", nil)); got != 101 {
		t.Errorf("t3 goes to %d subscriptions, want 101", got)
	}
}

// openStore opens a SQLite store in t's directory, closed when t ends.
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// size is the number of entries.
func (s *Snapshot) size() int { return s.byID.n }

// differing counts the shards a and b do not share.
func differing[K comparable, V any](a, b *shardMap[K, V]) int {
	n := 0
	for i := range a.shards {
		if reflect.ValueOf(a.shards[i]).UnsafePointer() != reflect.ValueOf(b.shards[i]).UnsafePointer() {
			n++
		}
	}
	return n
}

// TestIncrementalSyncMatchesAFullLoad: after each of many random creates,
// changes and deletes in three accounts (types, catch-alls, StringIn
// filters), each followed by a sync, the catalog matches every event
// exactly as one loaded from scratch does.
func TestIncrementalSyncMatchesAFullLoad(t *testing.T) {
	ctx, st := context.Background(), openStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	accounts := []string{account.DefaultID, "acc_b", "acc_c"}
	for _, a := range accounts[1:] {
		if err := st.CreateAccount(ctx, account.Account{ID: a, Name: a, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	types := []string{"t1", "t2", "t3"}
	regions := []string{"eu", "us", "ap"}
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(s *subscription.Subscription) {
		s.EventTypes = nil
		for _, ty := range types {
			if rng.IntN(2) == 0 {
				s.EventTypes = append(s.EventTypes, ty)
			}
		}
		s.Filters.Advanced = nil
		if rng.IntN(2) == 0 {
			raw, _ := json.Marshal([]map[string]any{{"operator_type": "StringIn", "key": "data.region",
				"values": []string{regions[rng.IntN(3)]}}})
			s.Filters.Advanced = raw
		}
	}
	c := New(st)
	var live []subscription.Subscription
	for step := range 300 {
		switch op := rng.IntN(10); {
		case op < 5 || len(live) == 0:
			s := subscription.Subscription{ID: fmt.Sprintf("sub_%04d", step), AccountID: accounts[rng.IntN(3)], Name: fmt.Sprint("s", step),
				DeliveryMode: subscription.ModePull, State: "active", CreatedAt: now, UpdatedAt: now}
			random(&s)
			if err := st.CreateSubscription(ctx, s); err != nil {
				t.Fatal(err)
			}
			live = append(live, s)
		case op < 8:
			i := rng.IntN(len(live))
			random(&live[i])
			if err := st.UpdateSubscription(ctx, live[i]); err != nil {
				t.Fatal(err)
			}
		default:
			i := rng.IntN(len(live))
			if err := st.DeleteSubscription(ctx, live[i].ID, now); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, i, i+1)
		}
		if rng.IntN(3) > 0 { // some syncs bring several changes
			continue
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		full := New(st)
		if err := full.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		got, want := c.Snapshot(), full.Snapshot()
		if got.Version != want.Version || got.size() != want.size() {
			t.Fatalf("step %d: version %d with %d entries, a full load %d with %d", step, got.Version, got.size(), want.Version, want.size())
		}
		for _, acc := range accounts {
			for _, ty := range append(types, "other") {
				for _, region := range regions {
					ev := filter.NewEvent([]byte(`{"data":{"region":"` + region + `"}}`))
					if g, w := entryIDs(mustMatch(t, got, acc, ty, ev)), entryIDs(mustMatch(t, want, acc, ty, ev)); !slices.Equal(g, w) {
						t.Fatalf("step %d: Match(%s, %s, region %s) = %v, a full load %v", step, acc, ty, region, g, w)
					}
				}
			}
		}
	}
}

// mustMatch is s.Match with a context that never ends.
func mustMatch(t *testing.T, s *Snapshot, account, typ string, ev *filter.Event) []*Entry {
	t.Helper()
	out, err := s.Match(context.Background(), account, typ, "", ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func entryIDs(es []*Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}
