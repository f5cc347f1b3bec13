package sqlite

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReopen checks that everything committed is there after Close and
// Open, that leases of the previous run are cleared, and that the schema is
// not applied twice.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "herald.db")
	s := open(t, path)
	run := firstRun(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	run.checkKept(t, s)
	run.checkLeasesVoid(t, s)
	ctx := context.Background()
	if dup, err := s.Publish(ctx, run.evs[:1], store.PublishOptions{Lease: run.lease}); err != nil || !dup[0].Duplicate || dup[0].Seq != run.res[0].Seq {
		t.Fatalf("republish after reopen = %+v, %v; want duplicate", dup, err)
	}
	var versions int
	if err := s.readRow(ctx, `SELECT COUNT(*) FROM schema_version`).Scan(&versions); err != nil || versions != SchemaVersion() {
		t.Fatalf("schema_version rows = %d, %v; want %d", versions, err, SchemaVersion())
	}
}

// reopenRun is what TestReopen's first run wrote: a subscription and three
// events with a delivery each, all leased when the store closes: dlv[0]
// at its publish, dlv[1] failed once and due again a minute later, dlv[2]
// claimed.
type reopenRun struct {
	now    time.Time
	lease  store.Lease
	sub    subscription.Subscription
	evs    []store.NewEvent
	dlv    []string
	res    []store.PublishResult
	before map[string]delivery.Delivery // as they were at Close
}

// firstRun writes TestReopen's first run on s.
func firstRun(t *testing.T, s *Store) *reopenRun {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &reopenRun{now: now, lease: store.Lease{Owner: "run-1", Until: now.Add(time.Hour)}, before: map[string]delivery.Delivery{}}
	url := "https://a.example/hook"
	r.sub = subscription.Subscription{ID: ids.New("sub_", now), Name: "a", URL: url, EndpointID: s.EndpointID("", url),
		EventTypes: []string{"x"}, State: "active", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSubscription(ctx, r.sub); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		id := ids.New("dlv_", now.Add(time.Duration(i)*time.Millisecond))
		r.dlv = append(r.dlv, id)
		r.evs = append(r.evs, store.NewEvent{ID: "e" + string(rune('0'+i)), Source: "/s", Type: "t", Payload: []byte(`{}`),
			PublishedAt: now, Deliveries: []store.NewDelivery{{ID: id, SubscriptionID: r.sub.ID, EndpointID: r.sub.EndpointID, Claimed: i == 0}}})
	}
	var err error
	if r.res, err = s.Publish(ctx, r.evs, store.PublishOptions{Lease: r.lease}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimDue(ctx, r.sub.EndpointID, now, 1, r.lease); err != nil || len(got) != 1 || got[0].ID != r.dlv[1] {
		t.Fatalf("ClaimDue = %v, %v", got, err)
	}
	out := store.Outcome{Attempt: delivery.Attempt{DeliveryID: r.dlv[1], Number: 1, StartedAt: now, StatusCode: 500,
		Outcome: "http_500", ResponseBody: []byte("oops")},
		Status: delivery.StatusPending, Attempts: 1, RoundAttempts: 1, FirstFailure: now, NextAttemptAt: now.Add(time.Minute),
		LastStatusCode: 500, LastOutcome: "http_500"}
	if _, err := s.Record(ctx, []store.Outcome{out}); err != nil {
		t.Fatal(err)
	}
	// Lease dlv[2] too: after the restart, all three must be claimable.
	if got, err := s.ClaimDue(ctx, r.sub.EndpointID, now, 10, r.lease); err != nil || len(got) != 1 || got[0].ID != r.dlv[2] {
		t.Fatalf("ClaimDue = %v, %v", got, err)
	}
	for _, id := range r.dlv {
		if r.before[id], err = s.GetDelivery(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s.NextDue(ctx, r.sub.EndpointID); !ok {
		// dlv[1] is due again at +1m.
		t.Fatal("retry not due")
	}
	return r
}

// checkKept: the subscription, the deliveries (as they were), the events
// and the attempt are there after the reopen.
func (r *reopenRun) checkKept(t *testing.T, s *Store) {
	ctx := context.Background()
	gotSub, err := s.GetSubscription(ctx, r.sub.ID)
	if err != nil || gotSub.Name != "a" || gotSub.URL != r.sub.URL {
		t.Fatalf("subscription after reopen: %+v, %v", gotSub, err)
	}
	for i, id := range r.dlv {
		d, err := s.GetDelivery(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d != r.before[id] {
			t.Fatalf("delivery %s changed across reopen:\n%+v\n%+v", id, d, r.before[id])
		}
		e, err := s.GetEvent(ctx, r.res[i].Seq)
		if err != nil || e.ID != r.evs[i].ID {
			t.Fatalf("event %d after reopen: %+v, %v", r.res[i].Seq, e, err)
		}
	}
	as, _, err := s.ListAttempts(ctx, r.dlv[1], store.Page{})
	if err != nil || len(as) != 1 || string(as[0].ResponseBody) != "oops" {
		t.Fatalf("attempts after reopen: %+v, %v", as, err)
	}
}

// checkLeasesVoid: the leases of the previous run are void, so another
// owner claims all three deliveries, fresh first, then the retry.
func (r *reopenRun) checkLeasesVoid(t *testing.T, s *Store) {
	got, err := s.ClaimDue(context.Background(), r.sub.EndpointID, r.now.Add(time.Minute), 10, store.Lease{Owner: "run-2", Until: r.now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var claimed []string
	for _, c := range got {
		claimed = append(claimed, c.ID)
	}
	if want := []string{r.dlv[0], r.dlv[2], r.dlv[1]}; strings.Join(claimed, ",") != strings.Join(want, ",") {
		t.Fatalf("claimed after reopen %v, want %v (fresh, then the retry)", claimed, want)
	}
}

// TestOneStorePerFile checks that a second Open of the same file fails while
// the first store is open, and succeeds after Close.
func TestOneStorePerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s := open(t, path)
	if s2, err := Open(context.Background(), path, Options{}); err == nil {
		s2.Close()
		t.Fatal("second Open of the same file succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path)
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s := open(t, path)
	err := s.rawWrite(context.Background(), func(w *writeConn) error {
		_, err := w.exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future', 0)`, SchemaVersion()+1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s2, err := Open(context.Background(), path, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("Open(newer schema) = %v, want an error", err)
	}
}

func TestOpenBadPath(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", filepath.Join(t.TempDir(), "a?b.db")} {
		if s, err := Open(context.Background(), p, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	// A parent that is a file.
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(context.Background(), filepath.Join(f, "herald.db"), Options{}); err == nil {
		s.Close()
		t.Error("Open under a file succeeded")
	}
}

// waitQueued waits until n requests wait in the writer's queue.
func waitQueued(t testing.TB, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.Waiting() < n; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", s.Waiting(), n)
		}
	}
}

// openLogged opens a store in a new directory that logs to the returned
// buffer.
func openLogged(t *testing.T) (*Store, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"),
		Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &logs
}

// holdWriter keeps the writer busy until the returned function is called,
// so that requests made meanwhile queue up into one batch.
func holdWriter(t testing.TB, s *Store) (release func()) {
	hold, done := make(chan struct{}), make(chan struct{})
	go s.rawWrite(context.Background(), func(w *writeConn) error { close(hold); <-done; return nil })
	<-hold
	return func() { close(done) }
}

// TestGroupCommit checks that concurrent Publish calls share one commit.
func TestGroupCommit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	release := holdWriter(t, s)
	before := s.Stats()
	const n = 50
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		ev := store.NewEvent{ID: ids.New("evt_", now), Source: "/s", Type: "t", Payload: []byte("{}"), PublishedAt: now,
			Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", now), SubscriptionID: "sub_x", EndpointID: "ep_x"}}}
		go func() {
			_, err := s.Publish(ctx, []store.NewEvent{ev}, store.PublishOptions{})
			errs <- err
		}()
	}
	waitQueued(t, s, n)
	release()
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	after := s.Stats()
	// The held request's commit, then one for all 50.
	if commits, reqs := after.Commits-before.Commits, after.Requests-before.Requests; commits != 2 || reqs != n+1 {
		t.Fatalf("%d requests took %d commits; want %d in 2", reqs, commits, n+1)
	}
	if fresh, _, err := s.CountPending(ctx); err != nil || fresh != n {
		t.Fatalf("CountPending = %d, %v; want %d", fresh, err, n)
	}
}

// TestBatchAbortRetriesOthers checks the path where a request fails after
// it wrote (a constraint, or SQLite ending the whole transaction on a full
// disk or an I/O error): that request fails with nothing of it kept, and
// the others run again and commit. A request that fails before writing
// leaves the batch's transaction alone.
func TestBatchAbortRetriesOthers(t *testing.T) {
	s, logs := openLogged(t)
	ctx := context.Background()

	// A failure before any write: one commit for the held request, one
	// for the batch of four, and no retry.
	release := holdWriter(t, s)
	before := s.Stats()
	clean := errors.New("clean")
	results := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			results <- s.rawWrite(ctx, func(w *writeConn) error {
				if i == 2 {
					var n int
					if err := w.scanRow(`SELECT COUNT(*) FROM endpoints`, nil, &n); err != nil {
						return err
					}
					return clean
				}
				_, err := w.exec(`INSERT INTO endpoints (id, url, created_at) VALUES (?, 'u', 0)`, "ep_0"+string(rune('a'+i)))
				return err
			})
		}()
	}
	waitQueued(t, s, 4)
	release()
	for i := 0; i < 4; i++ {
		if err := <-results; err != nil && !errors.Is(err, clean) {
			t.Fatal(err)
		}
	}
	if after := s.Stats(); after.Commits-before.Commits != 2 || strings.Contains(logs.String(), "rolled back") {
		t.Fatalf("%d commits, log:\n%s; want 2 and no rollback", after.Commits-before.Commits, logs.String())
	}

	release = holdWriter(t, s)
	boom := errors.New("boom")
	results = make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			results <- s.rawWrite(ctx, func(w *writeConn) error {
				if _, err := w.exec(`INSERT INTO endpoints (id, url, created_at) VALUES (?, 'u', 0)`, "ep_"+string(rune('a'+i))); err != nil {
					return err
				}
				if i == 1 {
					return boom
				}
				return nil
			})
		}()
	}
	waitQueued(t, s, 3)
	release()
	var failed int
	for i := 0; i < 3; i++ {
		if err := <-results; errors.Is(err, boom) {
			failed++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if failed != 1 {
		t.Fatalf("%d requests failed, want 1", failed)
	}
	if !strings.Contains(logs.String(), "write batch rolled back") {
		t.Fatalf("the batch was not aborted and retried; log:\n%s", logs.String())
	}
	var got string
	if err := s.readRow(ctx, `SELECT group_concat(id, ',') FROM (SELECT id FROM endpoints ORDER BY id)`).Scan(&got); err != nil || got != "ep_0a,ep_0b,ep_0d,ep_a,ep_c" {
		t.Fatalf("endpoints = %q, %v; want ep_0a,ep_0b,ep_0d,ep_a,ep_c", got, err)
	}
	// The writer is still healthy.
	if err := s.rawWrite(ctx, func(w *writeConn) error { _, err := w.exec(`DELETE FROM endpoints`); return err }); err != nil {
		t.Fatal(err)
	}
}

// TestPragmas checks the settings durability depends on (a publish is
// answered only once it is on disk) on the write connection, and that readers cannot write.
func TestPragmas(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	ctx := context.Background()
	var mode string
	var sync, busy int
	err := s.rawWrite(ctx, func(w *writeConn) error {
		if err := w.scanRow(`PRAGMA journal_mode`, nil, &mode); err != nil {
			return err
		}
		if err := w.scanRow(`PRAGMA synchronous`, nil, &sync); err != nil {
			return err
		}
		return w.scanRow(`PRAGMA busy_timeout`, nil, &busy)
	})
	if err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 || busy != 5000 {
		t.Fatalf("journal_mode %q, synchronous %d, busy_timeout %d; want wal, 2 (FULL), 5000", mode, sync, busy)
	}
	if _, err := s.readDB.ExecContext(ctx, `DELETE FROM endpoints`); err == nil {
		t.Fatal("a read connection could write")
	}
}

// TestExtendLeasesWritesUntil: a lease never expires in this store, but
// ExtendLeases still moves lease_until (and only for the owner's pending
// deliveries).
func TestExtendLeasesWritesUntil(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var evs []store.NewEvent
	var dlv []string
	for i := range 2 {
		id := ids.New("dlv_", now.Add(time.Duration(i)*time.Millisecond))
		dlv = append(dlv, id)
		evs = append(evs, store.NewEvent{ID: "e" + string(rune('0'+i)), Source: "/s", Type: "t", Payload: []byte(`{}`),
			PublishedAt: now, Deliveries: []store.NewDelivery{{ID: id, SubscriptionID: "sub_x", EndpointID: "ep_x", Claimed: true}}})
	}
	if _, err := s.Publish(ctx, evs[:1], store.PublishOptions{Lease: store.Lease{Owner: "a", Until: now.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(ctx, evs[1:], store.PublishOptions{Lease: store.Lease{Owner: "b", Until: now.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	kept, err := s.ExtendLeases(ctx, []string{dlv[0], dlv[1], dlv[0]}, store.Lease{Owner: "a", Until: now.Add(time.Hour)})
	if err != nil || len(kept) != 1 || kept[0] != dlv[0] {
		t.Fatalf("ExtendLeases = %v, %v; want [%s]", kept, err, dlv[0])
	}
	for i, want := range []time.Time{now.Add(time.Hour), now.Add(time.Minute)} {
		var until int64
		if err := s.readRow(ctx, `SELECT lease_until FROM deliveries WHERE id = ?`, dlv[i]).Scan(&until); err != nil {
			t.Fatal(err)
		}
		if until != want.UnixMilli() {
			t.Errorf("delivery %d: lease_until %v, want %v", i, time.UnixMilli(until).UTC(), want)
		}
	}
}

// pullSubscription creates a pull subscription named name.
func pullSubscription(t *testing.T, s *Store, name string, now time.Time) subscription.Subscription {
	t.Helper()
	sub := subscription.Subscription{ID: ids.New("sub_", now), Name: name, EventTypes: []string{"x"}, DeadLetter: true,
		State: subscription.StateActive, DeliveryMode: subscription.ModePull, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSubscription(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

// queuedEvent is an event published at now with one queued delivery to
// each of subs.
func queuedEvent(id string, now time.Time, subs ...subscription.Subscription) store.NewEvent {
	ev := store.NewEvent{ID: id, Source: "/s", Type: "x", Payload: []byte(`{}`), PublishedAt: now}
	for i, sub := range subs {
		ev.Deliveries = append(ev.Deliveries, store.NewDelivery{ID: ids.New("dlv_", now.Add(time.Duration(i)*time.Millisecond)),
			SubscriptionID: sub.ID, EndpointID: sub.EndpointID, Queued: true})
	}
	return ev
}

// TestLocksSurviveReopen: unlike leases, the locks of received deliveries
// are kept across Close and Open: a locked delivery is not received again
// before its lock ends, and its token still settles it.
func TestLocksSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := open(t, path)
	sub := pullSubscription(t, s, "pull", now)
	if _, err := s.Publish(ctx, []store.NewEvent{queuedEvent("e1", now, sub), queuedEvent("e2", now, sub)}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Receive(ctx, store.ReceiveRequest{SubscriptionID: sub.ID, Now: now, Max: 1, LockFor: time.Hour})
	if err != nil || len(res.Received) != 1 {
		t.Fatalf("Receive = %+v, %v", res, err)
	}
	locked := res.Received[0]
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	d, err := s.GetDelivery(ctx, locked.ID)
	if err != nil || d != locked.Delivery {
		t.Fatalf("locked delivery after reopen:\n%+v, %v\nwant %+v", d, err, locked.Delivery)
	}
	res, err = s.Receive(ctx, store.ReceiveRequest{SubscriptionID: sub.ID, Now: now.Add(time.Minute), Max: 10, LockFor: time.Hour})
	if err != nil || len(res.Received) != 1 || res.Received[0].ID == locked.ID || !res.NextAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("Receive after reopen = %+v, %v; want only the unlocked delivery, NextAt the lock's end", res, err)
	}
	got, err := s.Settle(ctx, store.SettleRequest{SubscriptionID: sub.ID, Action: store.Acknowledge,
		Tokens: []string{locked.LockToken}, Now: now.Add(time.Minute)})
	if err != nil || len(got) != 1 || got[0] != nil {
		t.Fatalf("Settle after reopen = %v, %v; want the lock held", got, err)
	}
}

// TestOnQueued checks which commits call Options.OnQueued, with which
// subscriptions (each once), and that it runs after the commit with no
// lock of the store held: it reads and writes the store itself.
func TestOnQueued(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	log := &onQueuedLog{t: t}
	var s *Store
	var err error
	s, err = Open(ctx, filepath.Join(t.TempDir(), "herald.db"), Options{OnQueued: func(subs []string) {
		n, err := s.CountQueued(ctx)
		if err != nil {
			t.Error(err)
		}
		if _, err := s.Receive(ctx, store.ReceiveRequest{SubscriptionID: "sub_none", Now: now, Max: 1, LockFor: time.Minute}); err != nil {
			t.Error(err)
		}
		log.calls, log.counts = append(log.calls, append([]string(nil), subs...)), append(log.counts, n)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p, q := pullSubscription(t, s, "p", now), pullSubscription(t, s, "q", now)
	url := "https://a.example/hook"
	a := subscription.Subscription{ID: ids.New("sub_", now), Name: "a", URL: url, EndpointID: s.EndpointID("", url),
		EventTypes: []string{"x"}, State: subscription.StateActive, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSubscription(ctx, a); err != nil {
		t.Fatal(err)
	}
	log.expect("subscription writes")
	pending := onQueuedPublishes(t, s, log, now, p, q, a)
	onQueuedSettles(t, s, log, now, p)
	onQueuedRecords(t, s, log, now, a, pending)
}

// onQueuedLog is what TestOnQueued's OnQueued was called with: the
// subscriptions of each call, and the queued deliveries it counted.
type onQueuedLog struct {
	t      *testing.T
	calls  [][]string
	counts []int64
}

// expect checks that the store called OnQueued once with want since the
// last expect, or not at all when want is empty.
func (l *onQueuedLog) expect(what string, want ...string) {
	l.t.Helper()
	var got []string
	if len(l.calls) > 1 {
		l.t.Fatalf("%s: %d calls %v, want at most one", what, len(l.calls), l.calls)
	}
	if len(l.calls) == 1 {
		got = l.calls[0]
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		l.t.Fatalf("%s: OnQueued(%v), want (%v)", what, got, want)
	}
	l.calls = nil
}

// onQueuedPublishes: a Publish of queued deliveries tells of their
// subscriptions after its commit; one of a duplicate, or of pending
// deliveries (which it returns: one claimed, leased to "me", of a), tells
// nothing.
func onQueuedPublishes(t *testing.T, s *Store, log *onQueuedLog, now time.Time, p, q, a subscription.Subscription) store.NewEvent {
	ctx := context.Background()
	e1, e2 := queuedEvent("e1", now, p, q), queuedEvent("e2", now, q, p)
	if _, err := s.Publish(ctx, []store.NewEvent{e1, e2}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	log.expect("Publish", p.ID, q.ID)
	if log.counts[0] != 4 {
		t.Fatalf("OnQueued saw %d queued deliveries, want 4: it must run after the commit", log.counts[0])
	}
	if _, err := s.Publish(ctx, []store.NewEvent{e1}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	log.expect("Publish of a duplicate")
	pending := store.NewEvent{ID: "e3", Source: "/s", Type: "x", Payload: []byte(`{}`), PublishedAt: now,
		Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", now), SubscriptionID: a.ID, EndpointID: a.EndpointID, Claimed: true},
			{ID: ids.New("dlv_", now), SubscriptionID: a.ID, EndpointID: a.EndpointID}}}
	if _, err := s.Publish(ctx, []store.NewEvent{pending}, store.PublishOptions{Lease: store.Lease{Owner: "me", Until: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	log.expect("Publish of pending deliveries")
	return pending
}

// onQueuedSettles: only a Release that releases something tells (of its
// subscription); a Receive, a Renew and an Acknowledge do not.
func onQueuedSettles(t *testing.T, s *Store, log *onQueuedLog, now time.Time, p subscription.Subscription) {
	ctx := context.Background()
	res, err := s.Receive(ctx, store.ReceiveRequest{SubscriptionID: p.ID, Now: now, Max: 2, LockFor: time.Minute})
	if err != nil || len(res.Received) != 2 {
		t.Fatalf("Receive = %+v, %v", res, err)
	}
	log.expect("Receive")
	settle := func(action store.LockAction, token string) {
		t.Helper()
		got, err := s.Settle(ctx, store.SettleRequest{SubscriptionID: p.ID, Action: action, Tokens: []string{token}, Now: now, LockFor: time.Minute})
		if err != nil || got[0] != nil {
			t.Fatalf("Settle = %v, %v", got, err)
		}
	}
	settle(store.Renew, res.Received[0].LockToken)
	settle(store.Acknowledge, res.Received[0].LockToken)
	log.expect("Acknowledge")
	settle(store.Release, res.Received[1].LockToken)
	log.expect("Release", p.ID)
	if got, err := s.Settle(ctx, store.SettleRequest{SubscriptionID: p.ID, Action: store.Release,
		Tokens: []string{res.Received[1].LockToken}, Now: now}); err != nil || got[0] == nil {
		t.Fatalf("Settle of a settled token = %v, %v", got, err)
	}
	log.expect("Release of nothing")
}

// onQueuedRecords: a Record that queues a delivery and deactivates its
// subscription a tells of a; one for a delivery no longer pending does
// not.
func onQueuedRecords(t *testing.T, s *Store, log *onQueuedLog, now time.Time, a subscription.Subscription, pending store.NewEvent) {
	ctx := context.Background()
	failed := store.Outcome{Attempt: delivery.Attempt{DeliveryID: pending.Deliveries[0].ID, Number: 1, StartedAt: now},
		Status: delivery.StatusQueued, Attempts: 1, RoundAttempts: 1, NextAttemptAt: now, Deactivate: true, LeaseOwner: "me"}
	if _, err := s.Record(ctx, []store.Outcome{failed}); err != nil {
		t.Fatal(err)
	}
	log.expect("Record", a.ID)
	if sub, err := s.GetSubscription(ctx, a.ID); err != nil || sub.State != subscription.StateDeactivated {
		t.Fatalf("subscription after a deactivation: %+v, %v", sub, err)
	}
	again := failed
	again.Attempt.Number, again.LeaseOwner = 2, ""
	if _, err := s.Record(ctx, []store.Outcome{again}); err != nil {
		t.Fatal(err)
	}
	log.expect("Record of a delivery no longer pending")
}

// TestMergedPublishes checks Publish requests that follow one another in a
// batch, written together: a guard that fails answers its request alone; a
// write that fails (a delivery ID already stored) rolls the batch back and
// runs each request on its own, where only the culprit fails; an event
// published twice in the batch is the second one's duplicate, as it would
// be one call after the other.
func TestMergedPublishes(t *testing.T) {
	s, logs := openLogged(t)
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	newEvent := func(deliveryID string) store.NewEvent {
		return store.NewEvent{ID: ids.New("evt_", now), Source: "/s", Type: "t", Payload: []byte("{}"), PublishedAt: now,
			Deliveries: []store.NewDelivery{{ID: deliveryID, SubscriptionID: "sub_x", EndpointID: "ep_x"}}}
	}
	taken := newEvent(ids.New("dlv_", now))
	if _, err := s.Publish(ctx, []store.NewEvent{taken}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSubscription(ctx, subscription.Subscription{ID: "sub_v", Name: "v", URL: "https://v.example/",
		EndpointID: s.EndpointID("", "https://v.example/"), EventTypes: []string{"t"}, State: "active",
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}

	first := newEvent(ids.New("dlv_", now))
	again := first
	again.Deliveries = []store.NewDelivery{{ID: ids.New("dlv_", now), SubscriptionID: "sub_x", EndpointID: "ep_x"}}
	calls := []struct {
		ev   store.NewEvent
		opts store.PublishOptions
	}{
		{first, store.PublishOptions{}},
		{newEvent(taken.Deliveries[0].ID), store.PublishOptions{}},                // fails writing
		{again, store.PublishOptions{}},                                           // first's duplicate
		{newEvent(ids.New("dlv_", now)), store.PublishOptions{CatalogVersion: 1}}, // stale
		{newEvent(ids.New("dlv_", now)), store.PublishOptions{}},
	}
	release := holdWriter(t, s)
	type answer struct {
		res []store.PublishResult
		err error
	}
	answers := make([]chan answer, len(calls))
	for i, c := range calls {
		answers[i] = make(chan answer, 1)
		go func() {
			res, err := s.Publish(ctx, []store.NewEvent{c.ev}, c.opts)
			answers[i] <- answer{res, err}
		}()
		waitQueued(t, s, i+1) // in this order
	}
	release()
	got := make([]answer, len(calls))
	for i := range calls {
		got[i] = <-answers[i]
	}
	for _, i := range []int{0, 2, 4} {
		if got[i].err != nil {
			t.Fatalf("call %d: %v", i, got[i].err)
		}
	}
	if got[1].err == nil || !strings.Contains(got[1].err.Error(), "insert deliveries") {
		t.Fatalf("call 1 (a delivery ID already stored) = %v; want its insert's error", got[1].err)
	}
	if !errors.Is(got[3].err, store.ErrStaleCatalog) {
		t.Fatalf("call 3 (stale catalog) = %v; want ErrStaleCatalog", got[3].err)
	}
	if r := got[2].res[0]; !r.Duplicate || r.Seq != got[0].res[0].Seq {
		t.Fatalf("call 2 = %+v; want the duplicate of seq %d", r, got[0].res[0].Seq)
	}
	if !strings.Contains(logs.String(), "writing its requests one by one") {
		t.Fatalf("the merged write did not fail and retry; log:\n%s", logs.String())
	}
	for _, i := range []int{0, 4} {
		e, err := s.GetEvent(ctx, got[i].res[0].Seq)
		if err != nil || e.ID != calls[i].ev.ID {
			t.Fatalf("call %d's event: %+v, %v", i, e, err)
		}
		if _, err := s.GetDelivery(ctx, calls[i].ev.Deliveries[0].ID); err != nil {
			t.Fatalf("call %d's delivery: %v", i, err)
		}
	}
	for _, i := range []int{1, 3} { // nothing of theirs was kept
		res, err := s.Publish(ctx, []store.NewEvent{newEventLike(calls[i].ev)}, store.PublishOptions{})
		if err != nil || res[0].Duplicate {
			t.Fatalf("call %d's event published again: %+v, %v; want a new event", i, res, err)
		}
	}
	if _, err := s.GetDelivery(ctx, again.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the duplicate's delivery was written (err %v)", err)
	}
}

// newEventLike is ev with a fresh delivery ID.
func newEventLike(ev store.NewEvent) store.NewEvent {
	ev.Deliveries = []store.NewDelivery{{ID: ids.New("dlv_", ev.PublishedAt), SubscriptionID: "sub_x", EndpointID: "ep_x"}}
	return ev
}
