package process

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serveFlags are the extra flags every herald in these tests runs with. A
// small per-endpoint concurrency and a receiver that answers after a few
// milliseconds keep deliveries in flight for long enough to kill the process
// among them.
var serveFlags = []string{"--endpoint-max-concurrency", "8"}

// waitNonePending waits until the subscription has no pending delivery:
// nothing due, in flight, or pushed with its outcome not yet committed.
func waitNonePending(t *testing.T, h *herald, subID string, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "no pending deliveries", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := h.deliveryCount(ctx, subID, "pending")
		if err != nil {
			return false, err.Error()
		}
		return n == 0, fmt.Sprintf("%d pending", n)
	})
}

// checkSettled waits until the subscription (the only one rcv serves) has
// no pending delivery and only then reads both sides: the events of Herald's
// delivered deliveries must be exactly the distinct events the receiver
// answered 200, read after that point (deliveries of publishes whose answer
// the test never saw may still be arriving until then), one delivery each,
// and must include every event of want.
func checkSettled(t *testing.T, h *herald, subID string, rcv *receiver, want []string) {
	t.Helper()
	waitNonePending(t, h, subID, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ds, err := h.deliveries(ctx, url.Values{"subscription_id": {subID}, "status": {"delivered"}})
	if err != nil {
		t.Fatalf("listing delivered deliveries: %v", err)
	}
	got := rcv.received() // read after nothing is pending: final
	delivered := make(map[string]bool, len(ds))
	var twice, notReceived, notDelivered, missing []string
	for _, d := range ds {
		if delivered[d.EventID] {
			twice = append(twice, d.EventID)
		}
		delivered[d.EventID] = true
		if !got[d.EventID] {
			notReceived = append(notReceived, d.EventID)
		}
	}
	for id := range got {
		if !delivered[id] {
			notDelivered = append(notDelivered, id)
		}
	}
	for _, id := range want {
		if !delivered[id] {
			missing = append(missing, id)
		}
	}
	for _, l := range [][]string{twice, notReceived, notDelivered, missing} {
		sort.Strings(l)
	}
	if len(ds) != len(got) {
		t.Errorf("Herald lists %d deliveries as delivered, want %d: the distinct events the receiver got once nothing was pending", len(ds), len(got))
	}
	if len(twice) > 0 {
		t.Errorf("%d events have more than one delivered delivery, e.g. %v", len(twice), head(twice, 5))
	}
	if len(notReceived) > 0 {
		t.Errorf("%d events Herald lists as delivered never reached the receiver, e.g. %v", len(notReceived), head(notReceived, 5))
	}
	if len(notDelivered) > 0 {
		t.Errorf("%d events the receiver got are not delivered in Herald's list, e.g. %v", len(notDelivered), head(notDelivered, 5))
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d events that must be delivered are not in Herald's delivered list, e.g. %v", len(missing), len(want), head(missing, 5))
	}
}

// TestSIGKILLMidDeliveryLosesNothing publishes 2,000 events, SIGKILLs Herald
// while their deliveries are arriving at the receiver, starts it again on the
// same data directory and requires every event to arrive at least once
// (no accepted delivery vanishes in a crash, and every one not known to be
// finished is attempted again). Duplicates are allowed and logged.
func TestSIGKILLMidDeliveryLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	const (
		total     = 2000
		batch     = 100
		killAfter = total / 5 // distinct events received before the SIGKILL
	)
	dataDir := t.TempDir()
	// Pushes are held at the receiver's gate until every event is published,
	// so the kill comes after all 2,000 were acknowledged and while most of
	// their deliveries are still to come.
	rcv := newReceiver(t, 3*time.Millisecond, true)
	h1 := startHerald(t, "herald-1", dataDir, serveFlags...)
	subID := h1.createSubscription(t, "process-mid-delivery", rcv.URL())

	ids := make([]string, total)
	known := make(map[string]bool, total)
	for i := range ids {
		ids[i] = fmt.Sprintf("mid-%05d", i)
		known[ids[i]] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	for i := 0; i < total; i += batch {
		if err := h1.publish(ctx, ids[i:i+batch]); err != nil {
			t.Fatalf("publishing events %d..%d: %v", i, i+batch-1, err)
		}
	}
	t.Logf("published %d events in %d requests in %s", total, total/batch, time.Since(start).Round(time.Millisecond))

	rcv.openUntil(t, killAfter, total)
	beforeKill := rcv.stats()
	h1.kill()
	// Pushes the receiver was still handling end, received or aborted,
	// before their count is read.
	rcv.waitIdle(t, 5*time.Second)
	atKill := rcv.stats()
	t.Logf("SIGKILL after %d of %d events arrived (%d pushes in flight at the receiver just before)", atKill.Distinct, total, beforeKill.InFlight)
	if atKill.Distinct >= total {
		t.Fatalf("all %d events arrived before the SIGKILL: the test did not kill Herald mid-delivery", total)
	}

	restart := time.Now()
	h2 := startHerald(t, "herald-2", dataDir, serveFlags...)
	waitFor(t, 45*time.Second, "every event to arrive after the restart", func() (bool, string) {
		m := rcv.missing(ids)
		return len(m) == 0, fmt.Sprintf("%d of %d events never arrived, e.g. %v", len(m), total, head(m, 5))
	})
	t.Logf("all %d events arrived %s after the restart", total, time.Since(restart).Round(time.Millisecond))
	checkSettled(t, h2, subID, rcv, ids)
	if u := rcv.unexpected(known); len(u) > 0 {
		t.Errorf("the receiver got %d events never published, e.g. %v", len(u), head(u, 5))
	}
	st := rcv.stats()
	t.Logf("receiver: %d pushes, %d aborted by the SIGKILL, %d duplicate receipts over %d events (allowed: at-least-once)",
		st.Requests, st.Aborted, st.Duplicates, st.DuplicatedIDs)
}

// ackOutcome is what one publisher of TestAcknowledgedPublishSurvivesSIGKILL
// saw: the events of its batches answered 202, those of the publish that
// failed, and how it failed (and whether that was after the SIGKILL began).
type ackOutcome struct {
	acked, unacked []string
	err            error
	errAfterKill   bool
}

// ackPublishers publish batches of events through one herald from several
// goroutines without pause, each until its first failed publish or until
// the context ends. enough is closed once enoughAt batches are acknowledged.
type ackPublishers struct {
	wg         sync.WaitGroup
	killing    atomic.Bool // set just before the SIGKILL
	ackBatches atomic.Int64
	enough     chan struct{}
	enoughOnce sync.Once
	outcomes   []ackOutcome // one per publisher, read after wg.Wait
}

// startAckPublishers starts publishers goroutines publishing batches of
// batch events (ids ack-pP-bNNNNN-eEE) through h.
func startAckPublishers(ctx context.Context, h *herald, publishers, batch int, enoughAt int64) *ackPublishers {
	ap := &ackPublishers{enough: make(chan struct{}), outcomes: make([]ackOutcome, publishers)}
	for p := range publishers {
		ap.wg.Add(1)
		go func() {
			defer ap.wg.Done()
			ap.publish(ctx, h, p, batch, enoughAt)
		}()
	}
	return ap
}

// publish is publisher p's loop.
func (ap *ackPublishers) publish(ctx context.Context, h *herald, p, batch int, enoughAt int64) {
	o := &ap.outcomes[p]
	for n := 0; ctx.Err() == nil; n++ {
		ids := make([]string, batch)
		for i := range ids {
			ids[i] = fmt.Sprintf("ack-p%d-b%05d-e%02d", p, n, i)
		}
		if err := h.publish(ctx, ids); err != nil {
			// Only a 202 counts as acknowledged; the publisher stops
			// at its first error.
			o.unacked = append(o.unacked, ids...)
			o.err, o.errAfterKill = err, ap.killing.Load()
			return
		}
		o.acked = append(o.acked, ids...)
		if ap.ackBatches.Add(1) >= enoughAt {
			ap.enoughOnce.Do(func() { close(ap.enough) })
		}
	}
}

// tally gathers the publishers' events once they have stopped: acknowledged,
// unanswered, and both (known). Every publisher must have stopped at an
// error that came after the SIGKILL.
func (ap *ackPublishers) tally(t *testing.T) (acked, unacked []string, known map[string]bool) {
	t.Helper()
	known = map[string]bool{}
	for p, o := range ap.outcomes {
		acked = append(acked, o.acked...)
		unacked = append(unacked, o.unacked...)
		for _, id := range o.acked {
			known[id] = true
		}
		for _, id := range o.unacked {
			known[id] = true
		}
		switch {
		case o.err == nil:
			t.Errorf("publisher %d stopped without an error", p)
		case !o.errAfterKill:
			t.Errorf("publisher %d failed before the SIGKILL: %v", p, o.err)
		default:
			t.Logf("publisher %d: %d events acknowledged, then: %v", p, len(o.acked), o.err)
		}
	}
	return acked, unacked, known
}

// TestAcknowledgedPublishSurvivesSIGKILL publishes small batches from a few
// goroutines without pause, SIGKILLs Herald while they publish, starts it
// again and requires every event whose publish was answered 202 to arrive
// (a publish is answered 2xx only once the event and all its deliveries are
// committed durably). Events whose publish got no answer may or may not
// arrive; how many did is logged.
func TestAcknowledgedPublishSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	const (
		publishers       = 4
		batch            = 10
		killAfterBatches = 100 // acknowledged batches before the SIGKILL
	)
	dataDir := t.TempDir()
	rcv := newReceiver(t, time.Millisecond, false)
	h1 := startHerald(t, "herald-1", dataDir, serveFlags...)
	subID := h1.createSubscription(t, "process-publish", rcv.URL())

	ctx, cancel := context.WithCancel(context.Background())
	ap := startAckPublishers(ctx, h1, publishers, batch, killAfterBatches)
	defer ap.wg.Wait()
	defer cancel() // runs first: stops the publishers if the test ends early

	published := time.Now()
	select {
	case <-ap.enough:
	case <-time.After(30 * time.Second):
		t.Fatalf("only %d batches acknowledged within 30s; want %d before the SIGKILL", ap.ackBatches.Load(), killAfterBatches)
	}
	t.Logf("%d batches acknowledged in %s", ap.ackBatches.Load(), time.Since(published).Round(time.Millisecond))
	ap.killing.Store(true)
	h1.kill()
	stopped := make(chan struct{})
	go func() { ap.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatalf("the publishers did not stop within 20s of the SIGKILL")
	}

	rcv.waitIdle(t, 5*time.Second)
	acked, unacked, known := ap.tally(t)
	t.Logf("SIGKILL with %d events acknowledged and %d in unanswered publishes; %d events had arrived",
		len(acked), len(unacked), rcv.stats().Distinct)

	restart := time.Now()
	h2 := startHerald(t, "herald-2", dataDir, serveFlags...)
	waitFor(t, 45*time.Second, "every acknowledged event to arrive after the restart", func() (bool, string) {
		m := rcv.missing(acked)
		return len(m) == 0, fmt.Sprintf("%d of %d acknowledged events never arrived, e.g. %v", len(m), len(acked), head(m, 5))
	})
	t.Logf("all %d acknowledged events arrived %s after the restart", len(acked), time.Since(restart).Round(time.Millisecond))
	// Once nothing is pending, Herald's delivered deliveries must be exactly
	// the events the receiver got: the acknowledged ones and those of the
	// unanswered publishes that were committed before the SIGKILL. Both are
	// read only after that point: deliveries of committed-but-unanswered
	// publishes may still be arriving until then.
	checkSettled(t, h2, subID, rcv, acked)
	if u := rcv.unexpected(known); len(u) > 0 {
		t.Errorf("the receiver got %d events never published, e.g. %v", len(u), head(u, 5))
	}
	st := rcv.stats()
	t.Logf("%d of %d events of unanswered publishes arrived anyway (allowed)", rcv.receivedCount(unacked), len(unacked))
	t.Logf("receiver: %d pushes, %d aborted by the SIGKILL, %d duplicate receipts over %d events (allowed: at-least-once)",
		st.Requests, st.Aborted, st.Duplicates, st.DuplicatedIDs)
}
