package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
	"github.com/herald-events/herald/internal/testsignal"
)

// stagedFixture is a store that stages every publish of more than 10 rows,
// with one push and 999 pull subscriptions of one type.
type stagedFixture struct {
	t    *testing.T
	ctx  context.Context
	path string
	s    *Store
	now  time.Time
	push subscription.Subscription
	pull []subscription.Subscription
}

func newStagedFixture(t *testing.T) *stagedFixture {
	f := &stagedFixture{t: t, ctx: context.Background(), path: filepath.Join(t.TempDir(), "herald.db"),
		now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	var err error
	if f.s, err = Open(f.ctx, f.path, Options{MaxTxRows: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.s.Close() })
	url := "https://staged.example/hook"
	f.push = subscription.Subscription{ID: ids.New("sub_", f.now), Name: "push", URL: url, EndpointID: f.s.EndpointID(account.DefaultID, url),
		EventTypes: []string{"x"}, State: "active", CreatedAt: f.now, UpdatedAt: f.now}
	if err := f.s.CreateSubscription(f.ctx, f.push); err != nil {
		t.Fatal(err)
	}
	for i := range 999 {
		sub := subscription.Subscription{ID: ids.New("sub_", f.now), Name: fmt.Sprint("pull-", i), DeliveryMode: subscription.ModePull,
			EventTypes: []string{"x"}, State: "active", CreatedAt: f.now, UpdatedAt: f.now}
		if err := f.s.CreateSubscription(f.ctx, sub); err != nil {
			t.Fatal(err)
		}
		f.pull = append(f.pull, sub)
	}
	return f
}

// event returns an event with one delivery per subscription: the push
// one's neither claimed nor queued (the dispatcher does not hold it). Its
// delivery IDs come from one sequence, as a publish's do, so the steps
// write them in the order of the subscriptions: push, then pull[0], …
func (f *stagedFixture) event(id string) store.NewEvent {
	next := ids.Sequence("dlv_", f.now)
	ev := store.NewEvent{ID: id, Source: "/staged", Type: "x", Payload: []byte(`{}`), PublishedAt: f.now,
		Deliveries: []store.NewDelivery{{ID: next(), SubscriptionID: f.push.ID, EndpointID: f.push.EndpointID}}}
	for _, sub := range f.pull {
		ev.Deliveries = append(ev.Deliveries, store.NewDelivery{ID: next(), SubscriptionID: sub.ID, Queued: true})
	}
	return ev
}

// staging reports whether a staged publish has committed its first step
// and not its last (its counter is stored).
func (f *stagedFixture) staging() bool {
	f.t.Helper()
	var n int
	if err := f.s.readRow(f.ctx, `SELECT COUNT(*) FROM counters WHERE name LIKE 'staged:%'`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n > 0
}

// publishing starts publishing ev (1,000 deliveries: 100 steps) with opts
// and returns once its first step committed, with the channel its result
// comes on. The publish then waits until the next write request is queued
// (holdAfterStep), and that request is written before its second step, so
// the caller's next write comes between two steps whatever the load.
func (f *stagedFixture) publishing(ev store.NewEvent, opts store.PublishOptions) <-chan error {
	f.t.Helper()
	f.s.TestSignals.StagedStep.Init(f.t)
	f.s.HoldStagedAfter(1)
	done := make(chan error, 1)
	go func() {
		_, err := f.s.Publish(f.ctx, []store.NewEvent{ev}, opts)
		done <- err
	}()
	timeout := time.NewTimer(testsignal.WaitTimeout)
	defer timeout.Stop()
	select {
	case <-f.s.TestSignals.StagedStep.C():
	case err := <-done:
		f.t.Fatalf("the publish ended (%v) before its first step committed", err)
	case <-timeout.C:
		f.t.Fatalf("no step of the publish committed within %v", testsignal.WaitTimeout)
	}
	if !f.staging() {
		f.t.Fatal("the publish's first step committed and no staged counter is stored")
	}
	return done
}

// TestStagedPublishInvisibleUntilDone: while a publish of 1,000 deliveries
// is written in steps of 10 rows, no read shows any of it (not the event's
// deliveries in a list or by ID, not a receive, not the due scan), and
// other writes go on between its steps; once it returns, everything is
// there: every delivery listed, the pull subscriptions' receivable and the
// push subscription's due.
func TestStagedPublishInvisibleUntilDone(t *testing.T) {
	f := newStagedFixture(t)
	ev := f.event("big")
	done := f.publishing(ev, store.PublishOptions{})
	conclusive := 0
	for other := 0; ; other++ {
		var (
			list, _, lerr = f.s.ListDeliveries(f.ctx, store.DeliveryFilter{Page: store.Page{Limit: 100}})
			_, gerr       = f.s.GetDelivery(f.ctx, ev.Deliveries[500].ID)
			rec, rerr     = f.s.Receive(f.ctx, store.ReceiveRequest{SubscriptionID: f.pull[0].ID, Now: f.now.Add(time.Minute), Max: 10, LockFor: time.Minute})
			due, derr     = f.s.DueEndpoints(f.ctx)
		)
		// A small publish of another event, written between two steps.
		small := store.NewEvent{ID: fmt.Sprint("small-", other), Source: "/other", Type: "y", Payload: []byte(`{}`), PublishedAt: f.now}
		_, perr := f.s.Publish(f.ctx, []store.NewEvent{small}, store.PublishOptions{})
		if err := errors.Join(lerr, rerr, derr, perr); err != nil {
			t.Fatal(err)
		}
		if !f.staging() {
			break // the reads may have come after the last step
		}
		conclusive++
		if len(list) > 0 || !errors.Is(gerr, store.ErrNotFound) || len(rec.Received) > 0 || !rec.NextAt.IsZero() || len(due) > 0 {
			t.Fatalf("mid-publish: %d deliveries listed, GetDelivery %v, %d received (next at %v), due %v; want none of it",
				len(list), gerr, len(rec.Received), rec.NextAt, due)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if conclusive == 0 {
		t.Fatal("no read came between two steps of the publish")
	}
	t.Logf("%d rounds of reads and small publishes between the publish's steps", conclusive)
	n := 0
	for cursor := ""; ; {
		page, next, err := f.s.ListDeliveries(f.ctx, store.DeliveryFilter{Page: store.Page{Limit: 1000, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page)
		if cursor = next; cursor == "" {
			break
		}
	}
	if n != 1000 {
		t.Fatalf("%d deliveries listed after the publish, want 1000", n)
	}
	// pull[1]: the last reads above may have come after the last step.
	rec, err := f.s.Receive(f.ctx, store.ReceiveRequest{SubscriptionID: f.pull[1].ID, Now: f.now.Add(time.Minute), Max: 10, LockFor: time.Minute})
	if err != nil || len(rec.Received) != 1 {
		t.Fatalf("receive after the publish: %d (%v), want 1", len(rec.Received), err)
	}
	due, err := f.s.DueEndpoints(f.ctx)
	if err != nil || len(due) != 1 || due[0].EndpointID != f.push.EndpointID {
		t.Fatalf("due after the publish: %v (%v), want the push subscription's endpoint", due, err)
	}
}

// TestStagedPublishCrash: the database as a crash in the middle of a
// staged publish leaves it (copied while the writer is held between two of
// its steps) opens with none of the publish's deliveries and no trace of
// it, and the event can be published again: it was never acknowledged, so
// it is not a duplicate.
func TestStagedPublishCrash(t *testing.T) {
	f := newStagedFixture(t)
	before, _, err := f.s.ListDeliveries(f.ctx, store.DeliveryFilter{Page: store.Page{Limit: 10}})
	if err != nil || len(before) != 0 {
		t.Fatalf("%d deliveries before (%v)", len(before), err)
	}
	kept := store.NewEvent{ID: "kept", Source: "/staged", Type: "y", Payload: []byte(`{}`), PublishedAt: f.now,
		Deliveries: []store.NewDelivery{{ID: ids.New("dlv_", f.now), SubscriptionID: f.push.ID, EndpointID: f.push.EndpointID}}}
	if _, err := f.s.Publish(f.ctx, []store.NewEvent{kept}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := f.event("big")
	done := f.publishing(ev, store.PublishOptions{})

	// Hold the writer in a request of its own, between two steps, and copy
	// the files: what a crash at that moment leaves on disk.
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = f.s.rawWrite(f.ctx, func(w *writeConn) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	if !f.staging() {
		close(release)
		t.Fatal("the publish finished before the writer was held, though it waits after its first step for the next request")
	}
	crashed := filepath.Join(t.TempDir(), "herald.db")
	for _, suffix := range []string{"", "-wal"} {
		copyFile(t, f.path+suffix, crashed+suffix)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	s := open(t, crashed)
	var counters int
	if err := s.readRow(f.ctx, `SELECT COUNT(*) FROM counters WHERE name LIKE 'staged:%'`).Scan(&counters); err != nil || counters != 0 {
		t.Fatalf("%d staged counters after Open (%v), want 0", counters, err)
	}
	var rows int
	if err := s.readRow(f.ctx, `SELECT COUNT(*) FROM deliveries`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d delivery rows after Open (%v), want only the kept event's", rows, err)
	}
	res, err := s.Publish(f.ctx, []store.NewEvent{ev}, store.PublishOptions{})
	if err != nil || res[0].Duplicate {
		t.Fatalf("publishing the interrupted event again: %+v, %v; want it stored anew", res, err)
	}
	if err := s.readRow(f.ctx, `SELECT COUNT(*) FROM deliveries`).Scan(&rows); err != nil || rows != 1001 {
		t.Fatalf("%d delivery rows after publishing again (%v), want 1001", rows, err)
	}
}

// TestStagedPublishRefusedMidway: a subscription the publish matched is
// deleted between two of its steps (its first and second: publishing),
// the last one, whose delivery the last step writes (the first step
// writes 9 rows: a subscription whose delivery it wrote loses it to the
// delete, and the publish goes on). The publish is refused as stale (the
// caller matches again) and what its earlier steps wrote is deleted.
func TestStagedPublishRefusedMidway(t *testing.T) {
	f := newStagedFixture(t)
	var v int64
	if err := f.s.readRow(f.ctx, `SELECT value FROM counters WHERE name = 'catalog'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	done := f.publishing(f.event("big"), store.PublishOptions{CatalogVersion: v})
	if err := f.s.DeleteSubscription(f.ctx, f.pull[len(f.pull)-1].ID, f.now); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, store.ErrStaleCatalog) {
		t.Fatalf("Publish = %v, want ErrStaleCatalog", err)
	}
	var rows, counters int
	if err := f.s.readRow(f.ctx, `SELECT COUNT(*) FROM deliveries`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d delivery rows after the refusal (%v), want 0", rows, err)
	}
	if err := f.s.readRow(f.ctx, `SELECT COUNT(*) FROM counters WHERE name LIKE 'staged:%'`).Scan(&counters); err != nil || counters != 0 {
		t.Fatalf("%d staged counters after the refusal (%v), want 0", counters, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
