package process

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// The tests in this file change subscriptions while events are published:
// a publish that starts after a create, change or delete has been answered,
// on any node, is matched against the new state (no node keeps matching
// against a stale catalog), and a delete leaves none of the subscription's
// deliveries pending (every delivery ends delivered, dead-lettered or
// dropped; none waits forever).

// stepTally is what the publishes of one node in one step were answered.
type stepTally struct {
	node, typ     string
	ids           []string
	withDelivery  int           // events answered with deliveries ≥ 1
	answeredDelay time.Duration // from the change's answer to the last publish's
}

// publishStep publishes perNode events of type typ through each of nodes at
// once (one goroutine per node, batches of batch events), the ids named
// prefix-node-nnn. It fails the test on any publish that is not a 202
// listing every event as new, and returns each node's tally (answeredDelay:
// the time from since to the answer of the node's last publish).
func publishStep(t *testing.T, nodes []*herald, typ, prefix string, perNode, batch int, since time.Time) []*stepTally {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tallies := make([]*stepTally, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, h := range nodes {
		tl := &stepTally{node: h.name, typ: typ}
		tallies[i] = tl
		for n := range perNode {
			tl.ids = append(tl.ids, fmt.Sprintf("%s-%s-%03d", prefix, h.name, n))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < perNode; b += batch {
				part := tl.ids[b:min(b+batch, perNode)]
				res, err := h.publishTyped(ctx, typ, part)
				if err != nil {
					errs[i] = err
					return
				}
				for k, e := range res.Events {
					if e.ID != part[k] || e.Duplicate {
						errs[i] = fmt.Errorf("answer for %s is %+v, want a new event", part[k], e)
						return
					}
					if e.Deliveries > 0 {
						tl.withDelivery++
					}
				}
			}
			tl.answeredDelay = time.Since(since)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("publishing through %s: %v", nodes[i].name, err)
		}
	}
	return tallies
}

// everyNode is one run of TestSubscriptionChangesSeenAtOnceOnEveryNode:
// three nodes on one database, node-A the one the subscription is changed
// through, and the receiver its pushes go to.
type everyNode struct {
	t      *testing.T
	rcv    *receiver
	a      *herald   // node-A
	nodes  []*herald // node-A, node-B, node-C
	settle time.Duration
	probes int // probe events published so far (see matching)
}

// allIDs returns the events of the tallies.
func allIDs(ts []*stepTally) []string {
	var ids []string
	for _, tl := range ts {
		ids = append(ids, tl.ids...)
	}
	return ids
}

// describe renders the tallies: per node, how many events were answered
// with a delivery and how many reached the receiver.
func (f *everyNode) describe(ts []*stepTally) string {
	var parts []string
	for _, tl := range ts {
		parts = append(parts, fmt.Sprintf("%s, type %s: %d/%d answered with a delivery, %d received (publishes done %s after the change's answer)",
			tl.node, tl.typ, tl.withDelivery, len(tl.ids), f.rcv.receivedCount(tl.ids), tl.answeredDelay.Round(time.Millisecond)))
	}
	return strings.Join(parts, "; ")
}

// nonePending waits (without failing) until the subscription has no
// pending delivery; it returns "" or what is still pending.
func (f *everyNode) nonePending(subID string) string {
	ok, msg := poll(f.settle, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := f.a.deliveryCount(ctx, subID, "pending")
		if err != nil {
			return false, err.Error()
		}
		return n == 0, fmt.Sprintf("%d deliveries still pending after %s", n, f.settle)
	})
	if ok {
		return ""
	}
	return msg
}

// checkDelivered requires every event of the step to be answered with
// a delivery and to reach the receiver once nothing is pending.
func (f *everyNode) checkDelivered(step, subID string, ts []*stepTally) {
	t := f.t
	t.Helper()
	pending := f.nonePending(subID)
	f.rcv.waitIdle(t, 5*time.Second)
	ids := allIDs(ts)
	answered, got := 0, f.rcv.receivedCount(ids)
	for _, tl := range ts {
		answered += tl.withDelivery
	}
	if answered != len(ids) || got != len(ids) || pending != "" {
		if pending != "" {
			pending = "; " + pending
		}
		t.Errorf("step %s: %d of %d events published right after the change's answer were answered with a delivery and %d were received once nothing was pending, want all %d%s (%s); missing e.g. %v",
			step, answered, len(ids), got, len(ids), pending, f.describe(ts), head(f.rcv.missing(ids), 5))
	} else {
		t.Logf("step %s: all %d events delivered (%s)", step, len(ids), f.describe(ts))
	}
}

// matching waits until every node matches events of type typ to the
// subscription (publishing probe events, which are delivered too), so
// that the next step changes a subscription every node knows rather
// than one some node has never seen.
func (f *everyNode) matching(ctx context.Context, typ string, since time.Time) {
	t := f.t
	t.Helper()
	var took []string
	for _, h := range f.nodes {
		waitFor(t, 15*time.Second, h.name+" to match events of type "+typ, func() (bool, string) {
			f.probes++
			id := fmt.Sprintf("probe-%s-%04d", h.name, f.probes)
			res, err := h.publishTyped(ctx, typ, []string{id})
			if err != nil {
				return false, err.Error()
			}
			return res.Events[0].Deliveries == 1, fmt.Sprintf("%s answered %+v", id, res.Events[0])
		})
		took = append(took, fmt.Sprintf("%s %s", h.name, time.Since(since).Round(time.Millisecond)))
	}
	t.Logf("every node matches type %s; each did within: %s of the change's answer", typ, strings.Join(took, ", "))
}

// checkNothingAfterDelete requires that none of the events of stepC
// (published right after the delete's 204) was answered with a delivery,
// has a delivery row or reached the receiver, and that nothing of the
// subscription is pending; the deleted subscription's log must still list
// the deliveries of the earlier steps, stepsAB.
func (f *everyNode) checkNothingAfterDelete(ctx context.Context, subID string, stepsAB, stepC []*stepTally) {
	t := f.t
	ids := allIDs(stepC)
	answered := 0
	for _, tl := range stepC {
		answered += tl.withDelivery
	}
	pending := f.nonePending(subID)
	f.rcv.waitIdle(t, 5*time.Second)
	stepCIDs := make(map[string]bool, len(ids))
	for _, id := range ids {
		stepCIDs[id] = true
	}
	all, err := f.a.deliveries(ctx, url.Values{"subscription_id": {subID}})
	if err != nil {
		t.Fatalf("listing the deleted subscription's deliveries: %v", err)
	}
	var stored []string
	for _, d := range all {
		if stepCIDs[d.EventID] {
			stored = append(stored, fmt.Sprintf("%s (%s, %d attempts)", d.EventID, d.Status, d.Attempts))
		}
	}
	sort.Strings(stored)
	// The deliveries of steps (a) and (b) stay in the log after the delete:
	// a listing without them would prove nothing about step (c).
	if logged, received := len(all)-len(stored), f.rcv.receivedCount(allIDs(stepsAB)); logged < received {
		t.Errorf("the deleted subscription's delivery log lists %d deliveries of steps (a) and (b), fewer than the %d of their events received: its listing by subscription_id cannot be trusted",
			logged, received)
	}
	got := f.rcv.receivedCount(ids)
	if answered != 0 || len(stored) != 0 || got != 0 || pending != "" {
		if pending != "" {
			pending = "; " + pending
		}
		t.Errorf("step (c) delete, then publish types t1 and t2: %d of %d events published right after the 204 were answered with a delivery, %d have a delivery row, %d reached the receiver, want 0 of each%s (%s); rows e.g. %v",
			answered, len(ids), len(stored), got, pending, f.describe(stepC), head(stored, 3))
	} else {
		t.Logf("step (c): none of %d events made a delivery (%s)", len(ids), f.describe(stepC))
	}
}

// TestSubscriptionChangesSeenAtOnceOnEveryNode runs three nodes on one
// database and changes a subscription through node-A; publishes through
// every node that start right after the change was answered must be matched
// against the new state: (a) after the create, every event of its type
// makes a delivery and is delivered; (b) after a change adding an
// event type, every event of the new type too; (c) after the delete, no
// event makes a delivery, none is stored for it, none reaches the receiver.
func TestSubscriptionChangesSeenAtOnceOnEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	const (
		perNode = 100 // events published through each node in each step
		batch   = 10
		settle  = 20 * time.Second
	)
	dbURL := pgtest.SchemaURL(t) // first: its cleanup runs after the nodes are killed
	rcv := newReceiver(t, 0, false)
	// All three nodes are up, with the subscription not yet in their
	// catalogs, before it is created.
	a := startNode(t, "node-A", dbURL)
	b := startNode(t, "node-B", dbURL)
	c := startNode(t, "node-C", dbURL)
	nodes := []*herald{a, b, c}
	f := &everyNode{t: t, rcv: rcv, a: a, nodes: nodes, settle: settle}

	// (a) Create through node-A, publish through all three at once.
	subID := a.createSubscriptionWith(t, "every-node", rcv.URL(), map[string]any{"event_types": []string{"t1"}})
	created := time.Now()
	stepA := publishStep(t, nodes, "t1", "a", perNode, batch, created)
	f.checkDelivered("(a) create, then publish type t1", subID, stepA)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f.matching(ctx, "t1", created)

	// (b) Add type t2 through node-A, publish t2 through all three at once.
	patch, _ := json.Marshal(map[string]any{"event_types": []string{"t1", "t2"}})
	if code, err := a.do(ctx, http.MethodPatch, "/v1/subscriptions/"+subID, "application/json", patch, nil); err != nil || code != http.StatusOK {
		t.Fatalf("PATCH /v1/subscriptions/%s through node-A: status %d, %v; want 200", subID, code, err)
	}
	patched := time.Now()
	stepB := publishStep(t, nodes, "t2", "b", perNode, batch, patched)
	f.checkDelivered("(b) add type t2, then publish type t2", subID, stepB)

	// (c) Delete through node-A, publish t1 and t2 through all three at once.
	f.matching(ctx, "t2", patched)
	if code, err := a.do(ctx, http.MethodDelete, "/v1/subscriptions/"+subID, "", nil, nil); err != nil || code != http.StatusNoContent {
		t.Fatalf("DELETE /v1/subscriptions/%s through node-A: status %d, %v; want 204", subID, code, err)
	}
	deleted := time.Now()
	stepC := append(publishStep(t, nodes, "t1", "c1", perNode/2, batch, deleted),
		publishStep(t, nodes, "t2", "c2", perNode/2, batch, deleted)...)
	f.checkNothingAfterDelete(ctx, subID, append(stepA, stepB...), stepC)
}

// arrivalLog records when each push arrived at the receiver (its request
// headers read, before the receiver's handler runs), by the subscription
// its herald-subscription header names.
type arrivalLog struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func newArrivalLog() *arrivalLog { return &arrivalLog{at: map[string][]time.Time{}} }

// wrap is the receiver's handler wrapper (see newWrappedReceiver).
func (a *arrivalLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		a.mu.Lock()
		sub := req.Header.Get("herald-subscription")
		a.at[sub] = append(a.at[sub], now)
		a.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

// after returns, for each push of subID that arrived after t, how long after.
func (a *arrivalLog) after(subID string, t time.Time) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []time.Duration
	for _, at := range a.at[subID] {
		if at.After(t) {
			out = append(out, at.Sub(t))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// The workload of TestDeleteRacingPublishesLeavesNothingPending.
const (
	raceRounds      = 5
	racePublishers  = 4
	raceDeleteAfter = 300 // acknowledged publishes before the DELETE (about a second)
	raceAfterDelete = 100 // acknowledged publishes started after the DELETE answered
	// A push may already be on its way when the 204 is written: one
	// arriving later than this after the 204 was sent after the delete.
	raceTolerance = 50 * time.Millisecond
	raceSettle    = 5 * time.Second
)

// raceRound is one deleted subscription of a deleteRace.
type raceRound struct {
	subID    string
	answered time.Time // when the DELETE's 204 came back
}

// deleteRace is one run of TestDeleteRacingPublishesLeavesNothingPending:
// one herald on its data directory, the receiver and when each push reached
// it, and the rounds done so far.
type deleteRace struct {
	t        *testing.T
	dataDir  string
	arrivals *arrivalLog
	rcv      *receiver
	h        *herald
	done     []raceRound
}

// pendingOf lists the subscription's pending deliveries through h.
func pendingOf(h *herald, subID string) ([]delivery, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.deliveries(ctx, url.Values{"subscription_id": {subID}, "status": {"pending"}})
}

// describePending renders the first three of ds.
func describePending(ds []delivery) string {
	var parts []string
	for _, d := range head(ds, 3) {
		parts = append(parts, fmt.Sprintf("%s of event %s: %d attempts, next at %s", d.ID, d.EventID, d.Attempts, d.NextAttemptAt))
	}
	return strings.Join(parts, "; ")
}

// checkQuiet requires no push of r.subID after the 204 plus tolerance
// and, with pending, no pending delivery of it (waiting up to wait for
// them to end).
func (f *deleteRace) checkQuiet(when string, h *herald, r raceRound, pending bool, wait time.Duration) {
	t := f.t
	t.Helper()
	if pending {
		var last []delivery
		var listErr error
		ok, _ := poll(wait, func() (bool, string) {
			last, listErr = pendingOf(h, r.subID)
			return listErr == nil && len(last) == 0, ""
		})
		switch {
		case ok:
		case listErr != nil:
			t.Errorf("%s: listing the pending deliveries of %s: %v", when, r.subID, listErr)
		default:
			t.Errorf("%s: %d deliveries of the deleted subscription %s are still pending (waited %s), e.g. %s",
				when, len(last), r.subID, wait, describePending(last))
		}
	}
	f.rcv.waitIdle(t, 5*time.Second)
	if late := f.arrivals.after(r.subID, r.answered.Add(raceTolerance)); len(late) > 0 {
		t.Errorf("%s: %d pushes of the deleted subscription %s arrived after its DELETE was answered 204 (+%s tolerance): %s to %s after",
			when, len(late), r.subID, raceTolerance, (late[0] + raceTolerance).Round(time.Millisecond), (late[len(late)-1] + raceTolerance).Round(time.Millisecond))
	}
}

// racePub is one acknowledged publish of a round: when it started and was
// answered, and how many deliveries the answer listed.
type racePub struct {
	started, answered time.Time
	deliveries        int
}

// racers are the publishers of one round: they publish single events
// without pause until stop is closed, at their first error, or once
// raceAfterDelete publishes that started after the DELETE's 204 are
// acknowledged. deleteNow is closed at the raceDeleteAfter-th acknowledged
// publish.
type racers struct {
	wg          sync.WaitGroup
	acked       atomic.Int64
	ackedAfter  atomic.Int64
	deleteNow   chan struct{}
	deleteOnce  sync.Once
	stop        chan struct{}
	stopOnce    sync.Once
	mu          sync.Mutex
	answered204 time.Time // zero until the DELETE is answered
	pubs        []racePub
	errs        []error
}

// startRacers starts racePublishers publishers for round n through h.
func startRacers(ctx context.Context, h *herald, n int) *racers {
	rs := &racers{deleteNow: make(chan struct{}), stop: make(chan struct{})}
	for p := range racePublishers {
		rs.wg.Add(1)
		go func() {
			defer rs.wg.Done()
			rs.publish(ctx, h, n, p)
		}()
	}
	return rs
}

// stopAll closes stop (once).
func (rs *racers) stopAll() { rs.stopOnce.Do(func() { close(rs.stop) }) }

// deleteAnswered records when the DELETE's 204 came back.
func (rs *racers) deleteAnswered(at time.Time) {
	rs.mu.Lock()
	rs.answered204 = at
	rs.mu.Unlock()
}

// publish is publisher p's loop in round n.
func (rs *racers) publish(ctx context.Context, h *herald, n, p int) {
	for i := 0; ; i++ {
		select {
		case <-rs.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		id := fmt.Sprintf("race-r%d-p%d-%05d", n, p, i)
		started := time.Now()
		res, err := h.publishRaw(ctx, []string{id})
		if err == nil && (res.Events[0].ID != id || res.Events[0].Duplicate) {
			err = fmt.Errorf("answer for %s is %+v, want a new event", id, res.Events[0])
		}
		rs.mu.Lock()
		if err != nil {
			rs.errs = append(rs.errs, err)
			rs.mu.Unlock()
			rs.stopAll()
			return
		}
		rs.pubs = append(rs.pubs, racePub{started, time.Now(), res.Events[0].Deliveries})
		after := !rs.answered204.IsZero() && started.After(rs.answered204)
		rs.mu.Unlock()
		if rs.acked.Add(1) == raceDeleteAfter {
			rs.deleteOnce.Do(func() { close(rs.deleteNow) })
		}
		if after && rs.ackedAfter.Add(1) >= raceAfterDelete {
			rs.stopAll()
		}
	}
}

// runRound creates a subscription, publishes to it from racePublishers
// goroutines, DELETEs it after raceDeleteAfter acknowledged publishes, goes
// on until raceAfterDelete publishes that started after the 204 are
// acknowledged, then checks the publishes' answers (checkAnswers) and
// that the subscription goes quiet (checkQuiet).
func (f *deleteRace) runRound(n int) {
	t, h := f.t, f.h
	subID := h.createSubscription(t, fmt.Sprintf("delete-race-%d", n), f.rcv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	began := time.Now()
	rs := startRacers(ctx, h, n)
	select {
	case <-rs.deleteNow:
	case <-rs.stop:
	case <-time.After(30 * time.Second):
		t.Errorf("round %d: only %d publishes acknowledged within 30s; want %d before the DELETE", n, rs.acked.Load(), raceDeleteAfter)
	}
	sent := time.Now()
	code, err := h.do(ctx, http.MethodDelete, "/v1/subscriptions/"+subID, "", nil, nil)
	at := time.Now()
	rs.deleteAnswered(at)
	if err != nil || code != http.StatusNoContent {
		t.Errorf("round %d: DELETE /v1/subscriptions/%s: status %d, %v; want 204", n, subID, code, err)
	}
	select {
	case <-rs.stop:
	case <-time.After(30 * time.Second):
		t.Errorf("round %d: only %d publishes acknowledged within 30s of the DELETE's answer; want %d", n, rs.ackedAfter.Load(), raceAfterDelete)
	}
	rs.stopAll()
	rs.wg.Wait()
	cancel()
	for _, err := range rs.errs {
		t.Errorf("round %d: publishing: %v", n, err)
	}
	if len(rs.errs) > 0 {
		t.FailNow()
	}
	f.checkAnswers(n, subID, rs.pubs, began, sent, at)
	r := raceRound{subID: subID, answered: at}
	f.done = append(f.done, r)
	f.checkQuiet(fmt.Sprintf("round %d", n), h, r, true, raceSettle)
}

// checkAnswers checks the answers to round n's publishes, given when the
// first publish began and when the DELETE was sent and answered.
// Publishes answered before the DELETE was sent made a delivery; those
// that started after its 204 must make none; those in between may go
// either way.
func (f *deleteRace) checkAnswers(n int, subID string, pubs []racePub, began, sent, at time.Time) {
	t := f.t
	var before, overlap, overlapWith, later, beforeWithout, laterWith int
	for _, p := range pubs {
		switch {
		case p.answered.Before(sent):
			before++
			if p.deliveries != 1 {
				beforeWithout++
			}
		case p.started.After(at):
			later++
			if p.deliveries != 0 {
				laterWith++
			}
		default:
			overlap++
			if p.deliveries != 0 {
				overlapWith++
			}
		}
	}
	t.Logf("round %d: %s DELETEd %s after the first publish (%d acknowledged), answered 204 in %s; publishes answered before it was sent %d, overlapping it %d (%d with a delivery), started after its 204 %d",
		n, subID, sent.Sub(began).Round(time.Millisecond), raceDeleteAfter, at.Sub(sent).Round(time.Microsecond), before, overlap, overlapWith, later)
	if beforeWithout > 0 {
		t.Errorf("round %d: %d publishes answered before the DELETE was sent did not make exactly 1 delivery", n, beforeWithout)
	}
	if laterWith > 0 {
		t.Errorf("round %d: %d of %d publishes started after the DELETE's 204 made a delivery to the deleted subscription", n, laterWith, later)
	}
}

// checkAfterRestart SIGKILLs the herald and starts it again on the same
// data directory: nothing of the deleted subscriptions may be pending or
// pushed after it either.
func (f *deleteRace) checkAfterRestart() {
	t := f.t
	f.h.kill()
	h2 := startHerald(t, "herald-2", f.dataDir, serveFlags...)
	clean := make([]bool, len(f.done)) // nothing pending at the restart
	for n, r := range f.done {
		if ds, err := pendingOf(h2, r.subID); err != nil {
			t.Errorf("after the restart: listing the pending deliveries of %s: %v", r.subID, err)
		} else if len(ds) > 0 {
			t.Errorf("after the restart, round %d: %d deliveries of the deleted subscription %s are pending, e.g. %s", n, len(ds), r.subID, describePending(ds))
		} else {
			clean[n] = true
		}
	}
	awaitRetryAfterRestart(t, h2)
	// Still nothing pending (where nothing was at the restart), and no push.
	for n, r := range f.done {
		f.checkQuiet(fmt.Sprintf("after the restart, round %d", n), h2, r, clean[n], 0)
	}
}

// awaitRetryAfterRestart waits for a delivery retried through the due
// loader, which shows that the restarted engine has loaded what the store
// held: a subscription whose endpoint answers 503 gets an event, and its
// second attempt is awaited.
func awaitRetryAfterRestart(t *testing.T, h *herald) {
	t.Helper()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	h.createSubscription(t, "delete-race-marker", failing.URL+"/hook")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.publishRaw(ctx, []string{"delete-race-marker"})
	if err != nil || res.Events[0].Deliveries != 1 {
		t.Fatalf("publishing the marker event: %v %+v", err, res)
	}
	waitFor(t, 15*time.Second, "the marker's second attempt after the restart", func() (bool, string) {
		ds, err := h.deliveries(ctx, url.Values{"event_id": {"delete-race-marker"}})
		if err != nil {
			return false, err.Error()
		}
		if len(ds) != 1 {
			return false, fmt.Sprintf("%d deliveries", len(ds))
		}
		return ds[0].Attempts >= 2, fmt.Sprintf("%d attempts", ds[0].Attempts)
	})
}

// TestDeleteRacingPublishesLeavesNothingPending (one node, SQLite) deletes
// a subscription while publishes to it go on, five times with a fresh
// subscription each, and requires: no delivery of the deleted subscription
// stays pending (within a deadline, and after a restart on the same data
// directory), and no push of it arrives at the receiver later than the
// DELETE's 204 plus a tolerance for pushes already on their way.
func TestDeleteRacingPublishesLeavesNothingPending(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	f := &deleteRace{t: t, dataDir: t.TempDir(), arrivals: newArrivalLog()}
	f.rcv = newWrappedReceiver(t, 0, false, f.arrivals.wrap)
	f.h = startHerald(t, "herald-1", f.dataDir, serveFlags...)
	for n := range raceRounds {
		f.runRound(n)
	}
	f.checkAfterRestart()
}
