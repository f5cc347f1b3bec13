package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// testURL, freshSchema and withSearchPath are pgtest's: the shared way
// tests get a PostgreSQL database (skipped without HERALD_TEST_POSTGRES_URL
// outside CI).
var (
	testURL        = pgtest.BaseURL
	freshSchema    = pgtest.SchemaURL
	withSearchPath = pgtest.WithSearchPath
)

// openAt opens a Store on dbURL, closed when the test ends.
func openAt(t testing.TB, dbURL string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dbURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConcurrentOpen starts several nodes at once on a fresh schema: the
// migration lock makes exactly one of them apply each migration, and every
// node ends up with a working store.
func TestConcurrentOpen(t *testing.T) {
	dbURL := freshSchema(t)
	const nodes = 6
	stores := make([]*Store, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = Open(context.Background(), dbURL, Options{})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	var n, maxV int
	if err := stores[0].pool.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_version`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != SchemaVersion() || maxV != SchemaVersion() {
		t.Fatalf("schema_version has %d rows up to %d; want %d", n, maxV, SchemaVersion())
	}
	for i, s := range stores {
		if err := s.Ping(context.Background()); err != nil {
			t.Fatalf("node %d: Ping: %v", i, err)
		}
	}
	// Migrate alone is a no-op on an up-to-date schema.
	if err := Migrate(context.Background(), dbURL, nil); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
}

// TestMigrateRefusesNewerSchema: a schema written by a newer build is not
// used.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	dbURL := freshSchema(t)
	if err := Migrate(context.Background(), dbURL, nil); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, dbURL, Options{})
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO schema_version VALUES ($1, 'future.sql', 0)`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dbURL, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this build") {
		t.Fatalf("Open on a newer schema = %v, want refusal", err)
	}
}

// fixture is a subscription on a shared schema and helpers to publish to it.
type fixture struct {
	t   *testing.T
	ctx context.Context
	url string
	sub subscription.Subscription
	now time.Time
	n   int
}

var t0 = time.Date(2031, time.June, 7, 8, 9, 10, 0, time.UTC)

func newFixture(t *testing.T, s *Store) *fixture {
	f := &fixture{t: t, ctx: context.Background(), now: t0}
	u := "https://a.example/hook"
	f.sub = subscription.Subscription{ID: ids.New("sub_", t0), Name: "a", URL: u, EndpointID: s.EndpointID("", u),
		EventTypes: []string{"x"}, State: "active", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateSubscription(f.ctx, f.sub); err != nil {
		t.Fatal(err)
	}
	return f
}

// events returns n events with one delivery each to the fixture's
// subscription, published at `at`.
func (f *fixture) events(n int, at time.Time) []store.NewEvent {
	evs := make([]store.NewEvent, n)
	for i := range evs {
		f.n++
		evs[i] = store.NewEvent{ID: fmt.Sprintf("evt-%d", f.n), Source: "/test", Type: "x",
			Payload: []byte(`{"n":1}`), PublishedAt: at,
			Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", at), SubscriptionID: f.sub.ID, EndpointID: f.sub.EndpointID}}}
	}
	return evs
}

func (f *fixture) publish(s *Store, evs []store.NewEvent, lease store.Lease) []store.PublishResult {
	f.t.Helper()
	res, err := s.Publish(f.ctx, evs, store.PublishOptions{Lease: lease})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func claimIDs(cs []store.Claimed) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// TestLeaseExpiryTakeover: node A claims with a lease until t+30s; node B
// claiming at t+31s takes the delivery over; A's late outcome, recorded with
// its LeaseOwner, is logged but leaves B's state alone, and B's applies.
func TestLeaseExpiryTakeover(t *testing.T) {
	dbURL := freshSchema(t)
	clk := clock.NewFake(t0)
	a := openAt(t, dbURL, Options{Clock: clk})
	b := openAt(t, dbURL, Options{Clock: clk})
	f := newFixture(t, a)
	evs := f.events(1, t0)
	f.publish(a, evs, store.Lease{})
	id := evs[0].Deliveries[0].ID
	ep := f.sub.EndpointID

	leaseA := store.Lease{Owner: "node-a", Until: t0.Add(30 * time.Second)}
	got, err := a.ClaimDue(f.ctx, ep, t0, 10, leaseA)
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("A's claim = %v, %v", claimIDs(got), err)
	}
	// Before the lease ends (and at its last millisecond) B gets nothing,
	// and the delivery is not due.
	for _, at := range []time.Time{t0.Add(10 * time.Second), t0.Add(30 * time.Second)} {
		clk.Set(at)
		leaseB := store.Lease{Owner: "node-b", Until: at.Add(30 * time.Second)}
		if got, err := b.ClaimDue(f.ctx, ep, at, 10, leaseB); err != nil || len(got) != 0 {
			t.Fatalf("B's claim at %v = %v, %v; want nothing while A's lease holds", at, claimIDs(got), err)
		}
		if _, ok, err := b.NextDue(f.ctx, ep); err != nil || ok {
			t.Fatalf("NextDue at %v = ok %v, %v; want none while leased", at, ok, err)
		}
		if _, err := b.Redeliver(f.ctx, id, at); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Redeliver while leased = %v, want ErrConflict", err)
		}
	}
	// Expired: due again for the loader, at its original due time.
	clk.Set(t0.Add(31 * time.Second))
	if at, ok, err := b.NextDue(f.ctx, ep); err != nil || !ok || !at.Equal(t0) {
		t.Fatalf("NextDue after expiry = %v, %v, %v; want %v", at, ok, err, t0)
	}
	due, err := b.DueEndpoints(f.ctx)
	if err != nil || len(due) != 1 || due[0].EndpointID != ep || !due[0].NextDue.Equal(t0) {
		t.Fatalf("DueEndpoints after expiry = %+v, %v", due, err)
	}
	now := t0.Add(31 * time.Second)
	leaseB := store.Lease{Owner: "node-b", Until: now.Add(30 * time.Second)}
	got, err = b.ClaimDue(f.ctx, ep, now, 10, leaseB)
	if err != nil || len(got) != 1 || got[0].ID != id || got[0].Attempts != 0 {
		t.Fatalf("B's takeover = %+v, %v", got, err)
	}
	if _, ok, _ := b.NextDue(f.ctx, ep); ok {
		t.Fatal("due while B holds the lease")
	}

	// A finishes late: its outcome is logged, the state stays B's.
	late := store.Outcome{
		Attempt: delivery.Attempt{DeliveryID: id, Number: 1, StartedAt: t0.Add(time.Second),
			Duration: 29 * time.Second, StatusCode: 200, Outcome: "http_200"},
		Status: delivery.StatusDelivered, Attempts: 1, RoundAttempts: 1, LastStatusCode: 200, LastOutcome: "http_200",
		DeliveredAt: t0.Add(30 * time.Second), LeaseOwner: "node-a",
	}
	if _, err := a.Record(f.ctx, []store.Outcome{late}); err != nil {
		t.Fatal(err)
	}
	d, err := b.GetDelivery(f.ctx, id)
	if err != nil || d.Status != delivery.StatusPending || d.Attempts != 0 {
		t.Fatalf("after A's stale Record: %+v, %v", d, err)
	}
	if _, err := b.Redeliver(f.ctx, id, now); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("B's lease was cleared by A's stale Record (Redeliver = %v)", err)
	}
	// B's own outcome applies (its attempt is number 2).
	mine := late
	mine.Attempt.Number, mine.Attempt.StartedAt, mine.Attempts, mine.RoundAttempts = 2, now, 2, 2
	mine.DeliveredAt, mine.LeaseOwner = now.Add(time.Second), "node-b"
	if _, err := b.Record(f.ctx, []store.Outcome{mine}); err != nil {
		t.Fatal(err)
	}
	d, err = a.GetDelivery(f.ctx, id)
	if err != nil || d.Status != delivery.StatusDelivered || d.Attempts != 2 || !d.LastAttemptAt.Equal(now) {
		t.Fatalf("after B's Record: %+v, %v", d, err)
	}
	as, _, err := a.ListAttempts(f.ctx, id, store.Page{})
	if err != nil || len(as) != 2 {
		t.Fatalf("attempt log %+v, %v; want both attempts", as, err)
	}
}

// TestDedupAcrossNodes: two nodes publish the same events at the same time;
// each event is stored once: exactly one of its publishes is not a
// duplicate, both report the same sequence, and only that one's deliveries
// exist.
func TestDedupAcrossNodes(t *testing.T) {
	dbURL := freshSchema(t)
	nodes := []*Store{openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})}
	f := newFixture(t, nodes[0])
	const events, callers = 300, 4
	base := f.events(events, t0)
	results := make([][]store.PublishResult, 2*callers)
	copies := make([][]store.NewEvent, 2*callers)
	var wg sync.WaitGroup
	errc := make(chan error, 2*callers)
	for c := range copies {
		// Each caller publishes every event with its own delivery IDs, in
		// its own order (reversed for odd callers), in calls of 10.
		evs := make([]store.NewEvent, events)
		for i := range evs {
			j := i
			if c%2 == 1 {
				j = events - 1 - i
			}
			evs[i] = base[j]
			evs[i].Deliveries = []store.NewDelivery{{ID: ids.New("dlv_", t0), SubscriptionID: f.sub.ID, EndpointID: f.sub.EndpointID}}
		}
		copies[c] = evs
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[c%2]
			for i := 0; i < events; i += 10 {
				res, err := s.Publish(f.ctx, evs[i:i+10], store.PublishOptions{})
				if err != nil {
					errc <- err
					return
				}
				results[c] = append(results[c], res...)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	type first struct {
		seq    int64
		stored int
		dlv    string
	}
	byEvent := map[string]*first{}
	for c, evs := range copies {
		for i, ev := range evs {
			r := results[c][i]
			fe := byEvent[ev.ID]
			if fe == nil {
				fe = &first{seq: r.Seq}
				byEvent[ev.ID] = fe
			}
			if r.Seq != fe.seq {
				t.Fatalf("event %s: sequences %d and %d", ev.ID, r.Seq, fe.seq)
			}
			if !r.Duplicate {
				fe.stored++
				fe.dlv = ev.Deliveries[0].ID
			}
			_, err := nodes[0].GetDelivery(f.ctx, ev.Deliveries[0].ID)
			if r.Duplicate != errors.Is(err, store.ErrNotFound) {
				t.Fatalf("event %s: duplicate %v but delivery lookup %v", ev.ID, r.Duplicate, err)
			}
		}
	}
	for id, fe := range byEvent {
		if fe.stored != 1 {
			t.Fatalf("event %s stored by %d publishes, want exactly 1", id, fe.stored)
		}
	}
	if fresh, _, err := nodes[1].CountPending(f.ctx); err != nil || fresh != events {
		t.Fatalf("CountPending = %d, %v; want %d", fresh, err, events)
	}
	// Inserting in key order keeps concurrent publishes of the same events
	// from deadlocking (each deadlock would cost deadlock_timeout, 1s).
	for i, s := range nodes {
		if st := s.Stats(); st.Retried != 0 || st.Isolated != 0 {
			t.Errorf("node %d: %+v; want no retried or isolated batches", i, st)
		}
	}
}

// TestExtendLeases: only the owner's pending leases are extended; a lease
// taken over by another node is reported lost.
func TestExtendLeases(t *testing.T) {
	dbURL := freshSchema(t)
	s := openAt(t, dbURL, Options{})
	f := newFixture(t, s)
	evs := f.events(3, t0)
	f.publish(s, evs, store.Lease{})
	ep := f.sub.EndpointID
	a := store.Lease{Owner: "node-a", Until: t0.Add(30 * time.Second)}
	got, err := s.ClaimDue(f.ctx, ep, t0, 3, a)
	if err != nil || len(got) != 3 {
		t.Fatalf("claim = %v, %v", claimIDs(got), err)
	}
	all := claimIDs(got)
	// Delivery 0 is taken over by node-b after expiry; 1 is finished.
	b := store.Lease{Owner: "node-b", Until: t0.Add(2 * time.Minute)}
	if err := s.Release(f.ctx, all[1:], "node-a"); err != nil { // let only all[0] stay leased to A...
		t.Fatal(err)
	}
	if _, err := s.ClaimDue(f.ctx, ep, t0.Add(31*time.Second), 3, a); err != nil { // ...A claims 1 and 2 back
		t.Fatal(err)
	}
	if got, err := s.ClaimDue(f.ctx, ep, t0.Add(31*time.Second), 1, b); err != nil || len(got) != 1 || got[0].ID != all[0] {
		t.Fatalf("takeover = %v, %v", claimIDs(got), err)
	}
	if _, err := s.Record(f.ctx, []store.Outcome{{Attempt: delivery.Attempt{DeliveryID: all[1], Number: 1, StartedAt: t0},
		Status: delivery.StatusDelivered, Attempts: 1, RoundAttempts: 1, DeliveredAt: t0, LeaseOwner: "node-a"}}); err != nil {
		t.Fatal(err)
	}
	kept, err := s.ExtendLeases(f.ctx, append(all, "dlv_unknown"), store.Lease{Owner: "node-a", Until: t0.Add(5 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0] != all[2] {
		t.Fatalf("ExtendLeases kept %v, want only %s", kept, all[2])
	}
	// A release by the former owner leaves node-b's lease alone.
	if err := s.Release(f.ctx, all, "node-a"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimDue(f.ctx, ep, t0.Add(32*time.Second), 3, a); err != nil || len(got) != 1 || got[0].ID != all[2] {
		t.Fatalf("claim after Release = %v, %v; want only %s", claimIDs(got), err, all[2])
	}
	if kept, err = s.ExtendLeases(f.ctx, all[2:], store.Lease{Owner: "node-a", Until: t0.Add(5 * time.Minute)}); err != nil || len(kept) != 1 {
		t.Fatalf("ExtendLeases = %v, %v", kept, err)
	}
	// The extended lease holds past its first expiry.
	if got, err := s.ClaimDue(f.ctx, ep, t0.Add(4*time.Minute), 3, b); err != nil || len(got) != 1 || got[0].ID != all[0] {
		t.Fatalf("claim at +4m = %v, %v; want only %s (b's expired lease)", claimIDs(got), err, all[0])
	}
}

// TestRecordCleansText: PostgreSQL text holds only valid UTF-8 without
// NUL bytes, so an attempt's free-form diagnostics (error, outcome) are
// stored with invalid sequences replaced by U+FFFD and NULs removed (the
// SQLite store keeps them byte for byte).
func TestRecordCleansText(t *testing.T) {
	s := openAt(t, freshSchema(t), Options{})
	f := newFixture(t, s)
	evs := f.events(1, t0)
	f.publish(s, evs, store.Lease{})
	id := evs[0].Deliveries[0].ID
	o := store.Outcome{Attempt: delivery.Attempt{DeliveryID: id, Number: 1, StartedAt: t0, StatusCode: 500,
		Outcome: "http_500\xff", Error: "bad \xff byte and a NUL \x00"},
		Status: delivery.StatusPending, Attempts: 1, RoundAttempts: 1, FirstFailure: t0, NextAttemptAt: t0.Add(time.Minute),
		LastOutcome: "http\x00_500"}
	if _, err := s.Record(f.ctx, []store.Outcome{o}); err != nil {
		t.Fatal(err)
	}
	as, _, err := s.ListAttempts(f.ctx, id, store.Page{})
	if err != nil || len(as) != 1 {
		t.Fatalf("attempts %+v, %v", as, err)
	}
	if as[0].Error != "bad \uFFFD byte and a NUL " || as[0].Outcome != "http_500\uFFFD" {
		t.Fatalf("attempt error stored as %q, outcome %q", as[0].Error, as[0].Outcome)
	}
	if d, err := s.GetDelivery(f.ctx, id); err != nil || d.LastOutcome != "http_500" {
		t.Fatalf("last outcome stored as %q (%v)", d.LastOutcome, err)
	}
}

// TestDueWithExpiredLeases checks DueEndpoints, NextDue and CountPending
// against leases judged by Options.Clock.
func TestDueWithExpiredLeases(t *testing.T) {
	clk := clock.NewFake(t0)
	s := openAt(t, freshSchema(t), Options{Clock: clk})
	f := newFixture(t, s)
	held := f.events(2, t0)
	for i := range held {
		held[i].Deliveries[0].Claimed = true
	}
	f.publish(s, held[:1], store.Lease{Owner: "x", Until: t0.Add(time.Minute)})
	f.publish(s, held[1:], store.Lease{Owner: "x", Until: t0.Add(2 * time.Minute)})
	f.publish(s, f.events(1, t0.Add(time.Hour)), store.Lease{})
	ep := f.sub.EndpointID
	check := func(want time.Time) {
		t.Helper()
		at, ok, err := s.NextDue(f.ctx, ep)
		if err != nil || !ok || !at.Equal(want) {
			t.Fatalf("NextDue at %v = %v, %v, %v; want %v", clk.Now(), at, ok, err, want)
		}
		due, err := s.DueEndpoints(f.ctx)
		if err != nil || len(due) != 1 || !due[0].NextDue.Equal(want) {
			t.Fatalf("DueEndpoints at %v = %+v, %v; want %v", clk.Now(), due, err, want)
		}
	}
	check(t0.Add(time.Hour))
	clk.Set(t0.Add(time.Minute + time.Millisecond))
	check(t0)
	if fresh, retry, err := s.CountPending(f.ctx); err != nil || fresh != 3 || retry != 0 {
		t.Fatalf("CountPending = %d, %d, %v", fresh, retry, err)
	}
	got, err := s.ClaimDue(f.ctx, ep, clk.Now(), 10, store.Lease{Owner: "y", Until: clk.Now().Add(time.Minute)})
	if err != nil || len(got) != 1 || got[0].ID != held[0].Deliveries[0].ID {
		t.Fatalf("claim = %v, %v; want the expired one only", claimIDs(got), err)
	}
	check(t0.Add(time.Hour))
}

// TestOppositeOrderPublishNoDeadlock: two nodes publish the same events at
// once in opposite orders, round after round. Each event is stored once,
// and no transaction deadlocks.
func TestOppositeOrderPublishNoDeadlock(t *testing.T) {
	dbURL := freshSchema(t)
	nodes := []*Store{openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})}
	f := newFixture(t, nodes[0])
	for round := range 30 {
		evs := f.events(50, t0)
		rev := make([]store.NewEvent, len(evs))
		for i := range evs {
			rev[len(evs)-1-i] = evs[i]
			rev[len(evs)-1-i].Deliveries = []store.NewDelivery{{ID: ids.New("dlv_", t0), SubscriptionID: f.sub.ID, EndpointID: f.sub.EndpointID}}
		}
		var wg sync.WaitGroup
		res := make([][]store.PublishResult, 2)
		errs := make([]error, 2)
		for n, in := range [][]store.NewEvent{evs, rev} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[n], errs[n] = nodes[n].Publish(f.ctx, in, store.PublishOptions{})
			}()
		}
		wg.Wait()
		for n, err := range errs {
			if err != nil {
				t.Fatalf("round %d node %d: %v", round, n, err)
			}
		}
		for i := range evs {
			a, b := res[0][i], res[1][len(evs)-1-i]
			if a.Seq != b.Seq || a.Duplicate == b.Duplicate {
				t.Fatalf("round %d event %d: %+v and %+v; want one original, same seq", round, i, a, b)
			}
		}
	}
	for i, s := range nodes {
		if st := s.Stats(); st.Retried != 0 {
			t.Errorf("node %d: %+v; want no retried batches", i, st)
		}
	}
}

// TestEndpointIDsKeyed: every store opened on one schema makes the same
// endpoint IDs (the key is the schema's), again after a reopen, and
// another schema (another installation) makes others, neither the unkeyed
// hash of earlier releases.
func TestEndpointIDsKeyed(t *testing.T) {
	const url = "https://usr:pw@a.example/hook"
	dbURL := freshSchema(t)
	a, b := openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})
	other := openAt(t, freshSchema(t), Options{})
	id := a.EndpointID("", url)
	if b.EndpointID("", url) != id || b.EndpointID("acc_x", url) != a.EndpointID("acc_x", url) {
		t.Fatalf("two stores on one schema make %s and %s", id, b.EndpointID("", url))
	}
	if o := other.EndpointID("", url); o == id || id == sqlrow.LegacyEndpointID("", url) || len(id) != 23 {
		t.Fatalf("the IDs of one URL in two installations: %s and %s (the unkeyed one: %s)", id, o, sqlrow.LegacyEndpointID("", url))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if again := openAt(t, dbURL, Options{}).EndpointID("", url); again != id {
		t.Fatalf("the ID after a reopen: %s, want %s", again, id)
	}
}
