package catalog_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// fixture is a catalog over a real SQLite store.
type fixture struct {
	t   *testing.T
	ctx context.Context
	st  *sqlite.Store
	c   *catalog.Catalog
}

func setup(t *testing.T) *fixture {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &fixture{t: t, ctx: context.Background(), st: st, c: catalog.New(st)}
}

func (f *fixture) create(id string, types []string, prefix, suffix string) store.Subscription {
	f.t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := store.Subscription{ID: id, Name: id, URL: "https://" + id + ".example/", State: "active", EventTypes: types,
		SubjectBeginsWith: prefix, SubjectEndsWith: suffix, RetryPolicy: []byte(`{"preset":"eventgrid"}`),
		CreatedAt: now, UpdatedAt: now}
	if err := f.st.CreateSubscription(f.ctx, s); err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.Sync(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

func ids(es []*catalog.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestMatch(t *testing.T) {
	f := setup(t)
	f.create("s1", []string{"invoice.paid", "invoice.sent"}, "", "")
	f.create("s2", nil, "/invoices/", "")
	f.create("s3", []string{"herald.endpoint.disabled"}, "", "")
	f.create("s4", []string{"invoice.paid"}, "", ".pdf")
	f.sync()
	cases := []struct {
		typ, subject string
		want         []string
	}{
		{"invoice.paid", "/invoices/1.pdf", []string{"s1", "s4", "s2"}},
		{"invoice.paid", "/orders/1.txt", []string{"s1"}},
		{"invoice.sent", "/invoices/1", []string{"s1", "s2"}},
		{"other", "/invoices/1", []string{"s2"}},
		{"herald.endpoint.disabled", "/invoices/x", []string{"s3"}}, // the catch-all does not get herald.*
	}
	for _, tc := range cases {
		got := ids(f.c.Snapshot().Match("", tc.typ, tc.subject, nil))
		if len(got) != len(tc.want) {
			t.Errorf("Match(%s, %s) = %v, want %v", tc.typ, tc.subject, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Match(%s, %s) = %v, want %v", tc.typ, tc.subject, got, tc.want)
				break
			}
		}
	}
	if err := f.st.DeleteSubscription(f.ctx, "s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := ids(f.c.Snapshot().Match("", "invoice.sent", "/x", nil)); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

// TestSyncIsIncrementalAndVersioned: each sync applies only what changed,
// and a snapshot taken before keeps its version and contents.
func TestSyncIsIncrementalAndVersioned(t *testing.T) {
	f := setup(t)
	if f.c.Version() != 0 {
		t.Fatalf("new catalog at version %d", f.c.Version())
	}
	a := f.create("a", []string{"t1"}, "", "")
	f.sync()
	v1 := f.c.Snapshot()
	if v1.Version <= 0 || v1.Get("a") == nil {
		t.Fatalf("after the first sync: version %d, a %v", v1.Version, v1.Get("a"))
	}
	a.EventTypes = []string{"t2"}
	if err := f.st.UpdateSubscription(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	f.create("b", []string{"t1"}, "", "")
	if err := f.c.SyncTo(f.ctx, v1.Version); err != nil || f.c.Version() != v1.Version {
		t.Fatalf("SyncTo an old version read anyway: %v, version %d", err, f.c.Version())
	}
	if err := f.c.SyncTo(f.ctx, v1.Version+2); err != nil {
		t.Fatal(err)
	}
	v2 := f.c.Snapshot()
	if v2.Version != v1.Version+2 {
		t.Fatalf("version %d, want %d", v2.Version, v1.Version+2)
	}
	if got := ids(v2.Match("", "t1", "", nil)); len(got) != 1 || got[0] != "b" {
		t.Fatalf("t1 now goes to %v, want [b]", got)
	}
	if got := ids(v2.Match("", "t2", "", nil)); len(got) != 1 || got[0] != "a" {
		t.Fatalf("t2 now goes to %v, want [a]", got)
	}
	if got := ids(v1.Match("", "t1", "", nil)); len(got) != 1 || got[0] != "a" {
		t.Fatalf("the old snapshot changed: t1 goes to %v", got)
	}
	if err := f.st.DeleteSubscription(f.ctx, "a", time.Now()); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if f.c.Get("a") != nil || f.c.Get("b") == nil || f.c.Len() != 1 {
		t.Fatalf("after deleting a: a %v, b %v, len %d", f.c.Get("a"), f.c.Get("b"), f.c.Len())
	}
}

// TestSyncSkipsABadPolicy: a subscription whose stored policy does not
// resolve is left out and reported; the others load.
func TestSyncSkipsABadPolicy(t *testing.T) {
	f := setup(t)
	f.create("good", nil, "", "")
	bad := f.create("bad", nil, "", "")
	bad.RetryPolicy = []byte(`{"preset":"no-such-preset"}`)
	if err := f.st.UpdateSubscription(f.ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Sync(f.ctx); err == nil {
		t.Fatal("Sync reported no error for a bad policy")
	}
	if f.c.Get("good") == nil || f.c.Get("bad") != nil {
		t.Fatalf("good %v, bad %v", f.c.Get("good"), f.c.Get("bad"))
	}
}

// TestMatchIsPerAccount: an event matches only the subscriptions of the
// account it is published in, whether they list its type or take every
// type.
func TestMatchIsPerAccount(t *testing.T) {
	f := setup(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := f.st.CreateAccount(f.ctx, store.Account{ID: "acc_other", Name: "other", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	f.create("d-typed", []string{"t"}, "", "")
	f.create("d-any", nil, "", "")
	for _, id := range []string{"o-typed", "o-any"} {
		s := store.Subscription{ID: id, AccountID: "acc_other", Name: id, URL: "https://" + id + ".example/", State: "active",
			RetryPolicy: []byte(`{"preset":"eventgrid"}`), CreatedAt: now, UpdatedAt: now}
		if id == "o-typed" {
			s.EventTypes = []string{"t"}
		}
		if err := f.st.CreateSubscription(f.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	f.sync()
	snap := f.c.Snapshot()
	for acc, want := range map[string][]string{"": {"d-typed", "d-any"}, store.DefaultAccount: {"d-typed", "d-any"},
		"acc_other": {"o-typed", "o-any"}, "acc_none": nil} {
		got := ids(snap.Match(acc, "t", "", nil))
		if len(got) != len(want) || len(got) > 0 && (got[0] != want[0] || got[1] != want[1]) {
			t.Errorf("Match(%q, t) = %v, want %v", acc, got, want)
		}
	}
}
