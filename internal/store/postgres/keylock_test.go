package postgres

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/engine"
	"github.com/herald-events/herald/internal/testsignal"
)

// TestKeyClaimRaces: a delivery r of key k's earlier event becomes pending
// again (a redeliver, or a publish that drew its sequence first and commits
// last) while node x claims l, of k's later event, and node y claims too.
// Held after its claim statement, before the key lock, x leased l on a
// snapshot without r; y, whose snapshot has r and not x's uncommitted lease,
// takes r, and x's re-check (after y's commit) finds r pending before l and
// gives l back: r is in flight, then l. Held after its re-check, before its
// commit, x keeps l; y leases r but finds k's lock held and gives r back: l
// is in flight; when l fails, r (the earlier event) goes before l's retry.
// Either way one delivery of k is leased at a time (without the key lock,
// x gets l and y gets r in both).
func TestKeyClaimRaces(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(*keyRace)
	}{{"redeliver", (*keyRace).redelivered}, {"publish out of order", (*keyRace).publishedLate}} {
		t.Run(c.name+"/before the key lock", func(t *testing.T) {
			k := newKeyRace(t)
			c.setup(k)
			xs, ys := k.race(engine.ClaimLeasedKeys)
			if len(xs) != 0 || !slices.Equal(ys, []string{k.r}) {
				t.Fatalf("x claimed %v and y %v; want r (%s) on y only", xs, ys, k.r)
			}
			if got := k.leased(); !slices.Equal(got, []string{k.r}) {
				t.Fatalf("leased in k: %v; want r only", got)
			}
			k.record(k.y, k.r, k.rTries+1, k.leaseY.Owner, time.Time{})
			k.expect(k.x, k.leaseX, "after r", k.l)
		})
		t.Run(c.name+"/after the re-check", func(t *testing.T) {
			k := newKeyRace(t)
			c.setup(k)
			xs, ys := k.race(engine.ClaimKeysHeld)
			if !slices.Equal(xs, []string{k.l}) || len(ys) != 0 {
				t.Fatalf("x claimed %v and y %v; want l (%s) on x only", xs, ys, k.l)
			}
			if got := k.leased(); !slices.Equal(got, []string{k.l}) {
				t.Fatalf("leased in k: %v; want l only", got)
			}
			k.expect(k.y, k.leaseY, "r while l is in flight")
			k.record(k.x, k.l, 1, k.leaseX.Owner, k.now.Add(time.Minute))
			k.now = k.now.Add(time.Minute)
			k.leaseX.Until, k.leaseY.Until = k.now.Add(time.Minute), k.now.Add(time.Minute)
			k.expect(k.y, k.leaseY, "at l's retry, r first", k.r)
			k.record(k.y, k.r, k.rTries+1, k.leaseY.Owner, time.Time{})
			k.expect(k.x, k.leaseX, "then l's retry", k.l)
		})
	}
}

// keyRace is two nodes (x, y) on one schema, a fixture subscription and two
// deliveries of key "k": r, of the earlier event, and l, of the later one.
type keyRace struct {
	t       *testing.T
	url     string
	f       *fixture
	x, y    *Store
	r, l    string
	now     time.Time
	leaseX  store.Lease
	leaseY  store.Lease
	reopenR func() // makes r pending again, committed
	rTries  int    // r's attempts before the race
}

func newKeyRace(t *testing.T) *keyRace {
	dbURL := freshSchema(t)
	x, y := openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})
	k := &keyRace{t: t, url: dbURL, x: x, y: y, now: t0.Add(time.Second)}
	k.f = newFixture(t, y)
	k.leaseX = store.Lease{Owner: "node-x", Until: k.now.Add(time.Minute)}
	k.leaseY = store.Lease{Owner: "node-y", Until: k.now.Add(time.Minute)}
	return k
}

// keyed returns an event of the fixture whose delivery has ordering key k.
func (k *keyRace) keyed() store.NewEvent {
	ev := k.f.events(1, t0)[0]
	ev.PartitionKey, ev.Deliveries[0].OrderingKey = "k", "k"
	return ev
}

// redelivered: r was delivered, l is its key's head; r's Redeliver is
// what commits during x's claim.
func (k *keyRace) redelivered() {
	r, l := k.keyed(), k.keyed()
	k.f.publish(k.x, []store.NewEvent{r, l}, store.Lease{})
	k.r, k.l = r.Deliveries[0].ID, l.Deliveries[0].ID
	k.expect(k.x, k.leaseX, "r's first claim", k.r)
	k.record(k.x, k.r, 1, k.leaseX.Owner, time.Time{})
	k.rTries = 1
	k.reopenR = func() {
		if _, err := k.y.Redeliver(k.f.ctx, k.r, k.now); err != nil {
			k.t.Fatal(err)
		}
	}
}

// publishedLate: r's publish draws its sequence first, in a transaction
// still open when l's publish commits; it commits during x's claim.
func (k *keyRace) publishedLate() {
	r, l := k.keyed(), k.keyed()
	k.r, k.l = r.Deliveries[0].ID, l.Deliveries[0].ID
	tx, err := k.y.pool.Begin(k.f.ctx)
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	seq := publishInTx(k.t, k.f.ctx, tx, &r)
	k.f.publish(k.x, []store.NewEvent{l}, store.Lease{})
	if seq >= k.seqOf(k.l) {
		k.t.Fatalf("r's seq %d is not before l's", seq)
	}
	k.reopenR = func() {
		if err := tx.Commit(k.f.ctx); err != nil {
			k.t.Fatal(err)
		}
	}
}

func (k *keyRace) seqOf(id string) int64 {
	d, err := k.x.GetDelivery(k.f.ctx, id)
	if err != nil {
		k.t.Fatal(err)
	}
	return d.EventSeq
}

// race holds x's claim at step, commits r's reopening, claims on y, lets
// x's claim go on, and returns what each claimed.
func (k *keyRace) race(step string) (xs, ys []string) {
	held, release := make(chan struct{}), make(chan struct{})
	k.x.claimStep = func(s string) {
		if s == step {
			close(held)
			<-release
		}
	}
	defer func() { k.x.claimStep = nil }()
	type result struct {
		ids []string
		err error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := k.x.ClaimDue(k.f.ctx, k.f.sub.EndpointID, k.now, 10, k.leaseX)
		done <- result{claimIDs(cs), err}
	}()
	select {
	case <-held:
	case res := <-done:
		k.t.Fatalf("x's claim ended (%v, %v) without reaching %q", res.ids, res.err, step)
	case <-time.After(testsignal.WaitTimeout):
		k.t.Fatalf("x's claim did not reach %q", step)
	}
	k.reopenR()
	cs, err := k.y.ClaimDue(k.f.ctx, k.f.sub.EndpointID, k.now, 10, k.leaseY)
	if err != nil {
		k.t.Fatal(err)
	}
	close(release)
	res := <-done
	if res.err != nil {
		k.t.Fatal(res.err)
	}
	return res.ids, claimIDs(cs)
}

// expect claims on s at k.now and wants exactly ids.
func (k *keyRace) expect(s *Store, lease store.Lease, what string, ids ...string) {
	k.t.Helper()
	cs, err := s.ClaimDue(k.f.ctx, k.f.sub.EndpointID, k.now, 10, lease)
	if got := claimIDs(cs); err != nil || !slices.Equal(got, append([]string{}, ids...)) {
		k.t.Fatalf("%s: claimed %v, %v; want %v", what, got, err, ids)
	}
}

// record ends attempt n of id as delivered, or as failed with a retry at
// retry when it is set.
func (k *keyRace) record(s *Store, id string, n int, owner string, retry time.Time) {
	k.t.Helper()
	o := store.Outcome{
		Attempt: delivery.Attempt{DeliveryID: id, Number: n, StartedAt: k.now, Duration: time.Millisecond,
			StatusCode: 200, Outcome: "http_200"},
		Status: delivery.StatusDelivered, Attempts: n, RoundAttempts: n, LastStatusCode: 200, LastOutcome: "http_200",
		DeliveredAt: k.now, LeaseOwner: owner,
	}
	if !retry.IsZero() {
		o.Attempt.StatusCode, o.Attempt.Outcome, o.LastStatusCode, o.LastOutcome = 503, "http_503", 503, "http_503"
		o.Status, o.DeliveredAt, o.FirstFailure, o.NextAttemptAt = delivery.StatusPending, time.Time{}, k.now, retry
	}
	if _, err := s.Record(k.f.ctx, []store.Outcome{o}); err != nil {
		k.t.Fatal(err)
	}
}

// leased returns the deliveries of key k whose lease is live at k.now.
func (k *keyRace) leased() []string {
	var ids []string
	rows, err := k.x.pool.Query(k.f.ctx, `SELECT id FROM deliveries WHERE ordering_key = 'k'
		AND status = 'pending' AND lease_until >= $1 ORDER BY id`, k.now.UnixMilli())
	if err == nil {
		for rows.Next() {
			var id string
			if err = rows.Scan(&id); err != nil {
				break
			}
			ids = append(ids, id)
		}
		rows.Close()
		err = rows.Err()
	}
	if err != nil {
		k.t.Fatal(err)
	}
	return ids
}

// sent records the statements a pool sends, one entry per round trip (a
// batch is one), each named by sentNames (statement preparation, a round
// trip on a connection's first use of a statement, is not counted).
type sent struct {
	mu    sync.Mutex
	trips []string
}

// sentNames names the statements a claim sends.
var sentNames = map[string]string{queries["ClaimDue"]: "claim", queries["ClaimKeyLocks"]: "key locks",
	queries["ClaimKeyRecheck"]: "re-check", queries["ReleaseLeases"]: "release", queries["ClaimDeadLetters"]: "dead letters",
	"commit": "commit"}

func (s *sent) add(sqls ...string) {
	var names []string
	for _, q := range sqls {
		name, ok := sentNames[q]
		if !ok && strings.HasPrefix(q, "SET LOCAL") {
			continue // the rest of the BEGIN
		}
		if !ok && strings.HasPrefix(q, "BEGIN") {
			name, ok = "begin", true
		}
		if !ok {
			name = q
		}
		names = append(names, name)
	}
	s.mu.Lock()
	s.trips = append(s.trips, strings.Join(names, " + "))
	s.mu.Unlock()
}

// take returns the round trips recorded since the last take.
func (s *sent) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	trips := s.trips
	s.trips = nil
	return trips
}

func (s *sent) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.add(d.SQL)
	return ctx
}
func (s *sent) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (s *sent) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var sqls []string
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
	}
	s.add(sqls...)
	return ctx
}
func (s *sent) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (s *sent) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestClaimRoundTrips: a claim that leases no keyed delivery sends what it
// did before the key lock (the claim with its transaction's BEGIN, then
// the commit: tx.go); one that leases keyed
// deliveries sends one round trip more, the key locks and the re-check
// together, and one more again, the release, when a key's lock is busy (as
// it is for a key whose hash another one shares): that delivery is given
// back and claimed once the lock is free.
func TestClaimRoundTrips(t *testing.T) {
	k := newKeyRace(t)
	tr := k.traceX()
	unkeyed := k.f.events(1, t0)
	k.f.publish(k.y, unkeyed, store.Lease{})
	tr.take()
	k.expect(k.x, k.leaseX, "an unkeyed delivery", unkeyed[0].Deliveries[0].ID)
	if got, want := tr.take(), []string{"begin + claim", "commit"}; !slices.Equal(got, want) {
		t.Fatalf("unkeyed claim sent %q; want %q", got, want)
	}

	first, second := k.keyed(), k.keyed()
	second.PartitionKey, second.Deliveries[0].OrderingKey = "k2", "k2"
	k.f.publish(k.y, []store.NewEvent{first, second}, store.Lease{})
	holder, err := k.y.pool.Begin(k.f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(k.f.ctx)
	if _, err := holder.Exec(k.f.ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext('k2'))`, k.f.sub.ID); err != nil {
		t.Fatal(err)
	}
	tr.take()
	k.expect(k.x, k.leaseX, "k's delivery, k2's lock busy", first.Deliveries[0].ID)
	if got, want := tr.take(), []string{"begin + claim", "key locks + re-check", "release", "commit"}; !slices.Equal(got, want) {
		t.Fatalf("keyed claim with a busy lock sent %q; want %q", got, want)
	}
	if err := holder.Rollback(k.f.ctx); err != nil {
		t.Fatal(err)
	}
	k.expect(k.x, k.leaseX, "k2's delivery, its lock free", second.Deliveries[0].ID)
	if got, want := tr.take(), []string{"begin + claim", "key locks + re-check", "commit"}; !slices.Equal(got, want) {
		t.Fatalf("keyed claim sent %q; want %q", got, want)
	}
}

// traceX swaps x's pool for one that records what it sends. x has not used
// its pool since Open, and its writers are idle until a publish.
func (k *keyRace) traceX() *sent {
	cfg, err := poolConfig(k.url, k.x.opts)
	if err != nil {
		k.t.Fatal(err)
	}
	tr := &sent{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(k.f.ctx, cfg)
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(k.x.pool.Close)
	k.x.pool = pool
	return tr
}

// publishInTx writes ev and its (pending) deliveries in tx with the
// engine's statements, as a publish batch would, and returns its seq.
func publishInTx(t *testing.T, ctx context.Context, tx pgx.Tx, ev *store.NewEvent) int64 {
	t.Helper()
	x := txExec{tx}
	acc, at := account.OrDefault(ev.AccountID), ev.PublishedAt.UnixMilli()
	var seq int64
	err := x.Query(ctx, "InsertEvents", func(r driver.Row) error {
		var a, id, src string
		return r.Scan(&seq, &a, &id, &src)
	}, []string{acc}, []string{ev.ID}, []string{ev.Source}, []string{ev.Type}, []string{ev.Subject},
		[]int64{at}, [][]byte{ev.Payload}, []string{""}, []string(nil))
	if err != nil || seq == 0 {
		t.Fatalf("insert event: seq %d, %v", seq, err)
	}
	for _, d := range ev.Deliveries {
		if _, err := x.Exec(ctx, "InsertDeliveries", []string{d.ID}, []string{acc}, []string{d.SubscriptionID},
			[]string{d.EndpointID}, []int64{seq}, []string{"pending"}, []int64{at}, []string{""}, []int64{0},
			[]string{d.OrderingKey}); err != nil {
			t.Fatal(err)
		}
	}
	return seq
}
