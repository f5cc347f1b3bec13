package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/expr"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/store/sqlite"
	"github.com/herald-events/herald/internal/subscription"
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

func (f *fixture) create(id string, types []string, prefix, suffix string) subscription.Subscription {
	f.t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := subscription.Subscription{ID: id, Name: id, URL: "https://" + id + ".example/", State: "active", EventTypes: types,
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

// match is Snapshot.Match with a context that never ends.
func match(t *testing.T, snap *catalog.Snapshot, account, typ, subject string, ev *filter.Event) []*catalog.Entry {
	t.Helper()
	es, err := snap.Match(context.Background(), account, typ, subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	return es
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
		{"HERALD.endpoint.disabled", "/invoices/x", nil},            // nor in any letter case (s3 lists the type as written)
		{"Herald.test", "/invoices/x", nil},
	}
	for _, tc := range cases {
		got := ids(match(t, f.c.Snapshot(), "", tc.typ, tc.subject, nil))
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
	if got := ids(match(t, f.c.Snapshot(), "", "invoice.sent", "/x", nil)); len(got) != 0 {
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
	if got := ids(match(t, v2, "", "t1", "", nil)); len(got) != 1 || got[0] != "b" {
		t.Fatalf("t1 now goes to %v, want [b]", got)
	}
	if got := ids(match(t, v2, "", "t2", "", nil)); len(got) != 1 || got[0] != "a" {
		t.Fatalf("t2 now goes to %v, want [a]", got)
	}
	if got := ids(match(t, v1, "", "t1", "", nil)); len(got) != 1 || got[0] != "a" {
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
	if err := f.st.CreateAccount(f.ctx, account.Account{ID: "acc_other", Name: "other", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	f.create("d-typed", []string{"t"}, "", "")
	f.create("d-any", nil, "", "")
	for _, id := range []string{"o-typed", "o-any"} {
		s := subscription.Subscription{ID: id, AccountID: "acc_other", Name: id, URL: "https://" + id + ".example/", State: "active",
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
	for acc, want := range map[string][]string{"": {"d-typed", "d-any"}, account.DefaultID: {"d-typed", "d-any"},
		"acc_other": {"o-typed", "o-any"}, "acc_none": nil} {
		got := ids(match(t, snap, acc, "t", "", nil))
		if len(got) != len(want) || len(got) > 0 && (got[0] != want[0] || got[1] != want[1]) {
			t.Errorf("Match(%q, t) = %v, want %v", acc, got, want)
		}
	}
}

// createFiltered creates a subscription to type t with these advanced
// filters.
func (f *fixture) createFiltered(id, filters string) {
	f.t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := subscription.Subscription{ID: id, Name: id, URL: "https://" + id + ".example/", State: "active", EventTypes: []string{"t"},
		Filters: subscription.FilterOptions{Advanced: []byte(filters)}, RetryPolicy: []byte(`{"preset":"eventgrid"}`),
		CreatedAt: now, UpdatedAt: now}
	if err := f.st.CreateSubscription(f.ctx, s); err != nil {
		f.t.Fatal(err)
	}
}

// regionsEvent is a stored event whose data.region holds n/2 "zz" then n/2
// "eu", and data.n n numbers 0, 1, ...: the attack of issue 21 on a
// StringIn filter (every "eu" element made the subscription a candidate
// again, and each time its filters scanned the array anew).
func regionsEvent(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"specversion":"1.0","id":"e","source":"/s","type":"t","data":{"region":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i < n/2 {
			b.WriteString(`"zz"`)
		} else {
			b.WriteString(`"eu"`)
		}
	}
	b.WriteString(`],"n":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// TestMatchLinearInTheEventsSize: matching an event whose arrays are 4
// times longer tests about 4 times as many values (filter.Event.Tested
// counts them: the work, not the time), for subscriptions indexed by a
// StringIn filter on the array and for others that filter the arrays with
// every kind of operator. Before each candidate was yielded once per
// matching element and rescanned the array each time: 16 times the work.
func TestMatchLinearInTheEventsSize(t *testing.T) {
	f := setup(t)
	f.createFiltered("in", `[{"operator_type": "StringIn", "key": "data.region", "values": ["eu", "us"]}]`)
	f.createFiltered("in-and", `[{"operator_type": "StringIn", "key": "data.region", "values": ["EU"]},
		{"operator_type": "StringNotIn", "key": "data.region", "values": ["asia"]},
		{"operator_type": "NumberIn", "key": "data.n", "values": [-1, -2]},
		{"operator_type": "StringContains", "key": "data.region", "values": ["x"]}]`)
	f.createFiltered("other-ops", `[{"operator_type": "StringEndsWith", "key": "data.region", "values": ["u"]},
		{"operator_type": "StringBeginsWith", "key": "data.region", "values": ["e"]},
		{"operator_type": "NumberInRange", "key": "data.n", "values": [[-5, -1], [1e9, 2e9]]},
		{"operator_type": "NumberNotIn", "key": "data.n", "values": [-3]},
		{"operator_type": "NumberGreaterThan", "key": "data.n", "value": 1e9}]`)
	f.sync()
	snap := f.c.Snapshot()
	work := func(n int) int {
		ev := filter.NewEvent(regionsEvent(n))
		if got := ids(match(t, snap, "", "t", "", ev)); len(got) != 1 || got[0] != "in" {
			t.Fatalf("n=%d: matched %v, want [in]", n, got)
		}
		return ev.Tested()
	}
	const n = 2000
	small, large := work(n), work(4*n)
	t.Logf("values tested: %d at n=%d, %d at 4n", small, n, large)
	if small < n || large > 4*small+100 {
		t.Fatalf("tested %d values at n=%d and %d at 4n: want about 4 times as many, not more", small, n, large)
	}
}

// TestMatchStopsWhenCancelled: Match looks at its context before it starts
// and again within every filter.CheckEvery filter tests, and stops with
// its error: a cancelled publish does not go on matching its event against
// every subscription.
func TestMatchStopsWhenCancelled(t *testing.T) {
	f := setup(t)
	const subs = 300
	for i := range subs {
		f.createFiltered(fmt.Sprintf("s%03d", i), `[{"operator_type": "StringIn", "key": "data.region", "values": ["eu"]}]`)
	}
	f.sync()
	snap := f.c.Snapshot()
	const n = 1000
	ev := filter.NewEvent(regionsEvent(n))
	if got := match(t, snap, "", "t", "", ev); len(got) != subs {
		t.Fatalf("matched %d subscriptions, want %d", len(got), subs)
	}
	if ev.Tested() < 10*filter.CheckEvery {
		t.Fatalf("the whole match cost %d tests: too few for the test", ev.Tested())
	}
	for _, calls := range []int{0, 1, 2} {
		ev := filter.NewEvent(regionsEvent(n))
		es, err := snap.Match(&endsAfter{context.Background(), calls, context.Canceled}, "", "t", "", ev)
		if !errors.Is(err, context.Canceled) || es != nil {
			t.Fatalf("cancelled after %d looks: %d entries, error %v", calls, len(es), err)
		}
		if ev.Tested() > calls*filter.CheckEvery+1 {
			t.Errorf("cancelled after %d looks: %d tests spent, want at most %d", calls, ev.Tested(), calls*filter.CheckEvery+1)
		}
	}
}

// heavyFilters are 24 StringNotContains filters (the attack battery's),
// on data.region: each tests every element of regionsEvent's array.
func heavyFilters() string {
	var b strings.Builder
	b.WriteString("[")
	for i := range 24 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"operator_type": "StringNotContains", "key": "data.region", "values": ["zz%d"]}`, i)
	}
	b.WriteString("]")
	return b.String()
}

// TestMatchStopsWithinTestsOfItsContextsEnd: a few candidates whose
// filters each test a long array (480,000 tests a subscription): when the
// client goes, or the request's deadline passes, after Match began, Match
// stops within a few thousand tests with the context's error, not at the
// next 64th candidate. Before, it looked at its context only between
// candidates, every 64 of them, so it ran all three to their end.
func TestMatchStopsWithinTestsOfItsContextsEnd(t *testing.T) {
	f := setup(t)
	for i := range 3 {
		f.createFiltered(fmt.Sprint("heavy", i), heavyFilters())
	}
	f.sync()
	snap := f.c.Snapshot()
	payload := regionsEvent(20_000)
	for _, end := range []error{context.Canceled, context.DeadlineExceeded} {
		ev := filter.NewEvent(payload)
		// Match's first look finds the context alive; the next does not.
		es, err := snap.Match(&endsAfter{context.Background(), 1, end}, "", "t", "", ev)
		if !errors.Is(err, end) || es != nil {
			t.Errorf("%v after Match began: %d entries, error %v; want %v", end, len(es), err, end)
		}
		if ev.Tested() > 10_000 {
			t.Errorf("%v after Match began: %d tests spent after it; want at most a few thousand", end, ev.Tested())
		}
	}
}

// endsAfter is a context whose Err is nil for its first n calls and err
// after.
type endsAfter struct {
	context.Context
	n   int
	err error
}

func (c *endsAfter) Err() error {
	if c.n--; c.n < 0 {
		return c.err
	}
	return nil
}

// TestExpensiveExpressionsSpendThePublishBudget: a filter_expression's
// cel-go cost counts catalog.TestsPerCostUnit filter tests a unit against
// the publish's matching budget, which is the request's, not each
// subscription's: five subscriptions whose expressions each spend the
// cost limit pass a budget of 10 million tests (they counted one test a
// unit before, 5 million in all, and took about five times as long as
// the budget's filter tests), and matching stops with a *filter.WorkError
// within one evaluation of the budget's end.
func TestExpensiveExpressionsSpendThePublishBudget(t *testing.T) {
	f := setup(t)
	const subs = 5
	for i := range subs {
		now := time.Now().UTC().Truncate(time.Millisecond)
		s := subscription.Subscription{ID: fmt.Sprintf("x%d", i), Name: fmt.Sprintf("x%d", i), URL: "https://x.example/", State: "active",
			EventTypes: []string{"t"}, Filters: subscription.FilterOptions{Expression: `data.region.all(a, data.region.all(b, b != "q"))`},
			RetryPolicy: []byte(`{"preset":"eventgrid"}`), CreatedAt: now, UpdatedAt: now}
		if err := f.st.CreateSubscription(f.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	f.sync()
	const budget = 10_000_000
	ev := filter.NewEvent(regionsEvent(2000))
	ev.PaceBy(filter.NewPacer(context.Background(), budget, nil))
	es, err := f.c.Snapshot().Match(context.Background(), "", "t", "", ev)
	if !errors.Is(err, filter.ErrWork) || es != nil {
		t.Fatalf("%d entries, %v; want a *filter.WorkError", len(es), err)
	}
	if max := budget + catalog.ExpressionTests(expr.CostLimit) + subs; ev.Tested() > max {
		t.Errorf("%d tests spent; want at most %d (the budget and one evaluation)", ev.Tested(), max)
	}
}
