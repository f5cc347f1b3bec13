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

	// describe renders the tallies: per node, how many events were answered
	// with a delivery and how many reached the receiver.
	describe := func(ts []*stepTally) string {
		var parts []string
		for _, tl := range ts {
			parts = append(parts, fmt.Sprintf("%s, type %s: %d/%d answered with a delivery, %d received (publishes done %s after the change's answer)",
				tl.node, tl.typ, tl.withDelivery, len(tl.ids), rcv.receivedCount(tl.ids), tl.answeredDelay.Round(time.Millisecond)))
		}
		return strings.Join(parts, "; ")
	}
	allIDs := func(ts []*stepTally) []string {
		var ids []string
		for _, tl := range ts {
			ids = append(ids, tl.ids...)
		}
		return ids
	}
	// nonePending waits (without failing) until the subscription has no
	// pending delivery; it returns "" or what is still pending.
	nonePending := func(subID string) string {
		ok, msg := poll(settle, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n, err := a.deliveryCount(ctx, subID, "pending")
			if err != nil {
				return false, err.Error()
			}
			return n == 0, fmt.Sprintf("%d deliveries still pending after %s", n, settle)
		})
		if ok {
			return ""
		}
		return msg
	}
	// checkDelivered requires every event of the step to be answered with
	// a delivery and to reach the receiver once nothing is pending.
	checkDelivered := func(step, subID string, ts []*stepTally) {
		t.Helper()
		pending := nonePending(subID)
		rcv.waitIdle(t, 5*time.Second)
		ids := allIDs(ts)
		answered, got := 0, rcv.receivedCount(ids)
		for _, tl := range ts {
			answered += tl.withDelivery
		}
		if answered != len(ids) || got != len(ids) || pending != "" {
			if pending != "" {
				pending = "; " + pending
			}
			t.Errorf("step %s: %d of %d events published right after the change's answer were answered with a delivery and %d were received once nothing was pending, want all %d%s (%s); missing e.g. %v",
				step, answered, len(ids), got, len(ids), pending, describe(ts), head(rcv.missing(ids), 5))
		} else {
			t.Logf("step %s: all %d events delivered (%s)", step, len(ids), describe(ts))
		}
	}

	// (a) Create through node-A, publish through all three at once.
	subID := a.createSubscriptionWith(t, "every-node", rcv.URL(), map[string]any{"event_types": []string{"t1"}})
	created := time.Now()
	stepA := publishStep(t, nodes, "t1", "a", perNode, batch, created)
	checkDelivered("(a) create, then publish type t1", subID, stepA)

	// matching waits until every node matches events of type typ to the
	// subscription (publishing probe events, which are delivered too), so
	// that the next step changes a subscription every node knows rather
	// than one some node has never seen.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	probes := 0
	matching := func(typ string, since time.Time) {
		t.Helper()
		var took []string
		for _, h := range nodes {
			waitFor(t, 15*time.Second, h.name+" to match events of type "+typ, func() (bool, string) {
				probes++
				id := fmt.Sprintf("probe-%s-%04d", h.name, probes)
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
	matching("t1", created)

	// (b) Add type t2 through node-A, publish t2 through all three at once.
	patch, _ := json.Marshal(map[string]any{"event_types": []string{"t1", "t2"}})
	if code, err := a.do(ctx, http.MethodPatch, "/v1/subscriptions/"+subID, "application/json", patch, nil); err != nil || code != http.StatusOK {
		t.Fatalf("PATCH /v1/subscriptions/%s through node-A: status %d, %v; want 200", subID, code, err)
	}
	patched := time.Now()
	stepB := publishStep(t, nodes, "t2", "b", perNode, batch, patched)
	checkDelivered("(b) add type t2, then publish type t2", subID, stepB)

	// (c) Delete through node-A, publish t1 and t2 through all three at once.
	matching("t2", patched)
	if code, err := a.do(ctx, http.MethodDelete, "/v1/subscriptions/"+subID, "", nil, nil); err != nil || code != http.StatusNoContent {
		t.Fatalf("DELETE /v1/subscriptions/%s through node-A: status %d, %v; want 204", subID, code, err)
	}
	deleted := time.Now()
	stepC := append(publishStep(t, nodes, "t1", "c1", perNode/2, batch, deleted),
		publishStep(t, nodes, "t2", "c2", perNode/2, batch, deleted)...)
	ids := allIDs(stepC)
	answered := 0
	for _, tl := range stepC {
		answered += tl.withDelivery
	}
	pending := nonePending(subID)
	rcv.waitIdle(t, 5*time.Second)
	stepCIDs := make(map[string]bool, len(ids))
	for _, id := range ids {
		stepCIDs[id] = true
	}
	all, err := a.deliveries(ctx, url.Values{"subscription_id": {subID}})
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
	if logged, received := len(all)-len(stored), rcv.receivedCount(append(allIDs(stepA), allIDs(stepB)...)); logged < received {
		t.Errorf("the deleted subscription's delivery log lists %d deliveries of steps (a) and (b), fewer than the %d of their events received: its listing by subscription_id cannot be trusted",
			logged, received)
	}
	got := rcv.receivedCount(ids)
	if answered != 0 || len(stored) != 0 || got != 0 || pending != "" {
		if pending != "" {
			pending = "; " + pending
		}
		t.Errorf("step (c) delete, then publish types t1 and t2: %d of %d events published right after the 204 were answered with a delivery, %d have a delivery row, %d reached the receiver, want 0 of each%s (%s); rows e.g. %v",
			answered, len(ids), len(stored), got, pending, describe(stepC), head(stored, 3))
	} else {
		t.Logf("step (c): none of %d events made a delivery (%s)", len(ids), describe(stepC))
	}
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
	const (
		rounds      = 5
		publishers  = 4
		deleteAfter = 300 // acknowledged publishes before the DELETE (about a second)
		afterDelete = 100 // acknowledged publishes started after the DELETE answered
		// A push may already be on its way when the 204 is written: one
		// arriving later than this after the 204 was sent after the delete.
		tolerance = 50 * time.Millisecond
		settle    = 5 * time.Second
	)
	dataDir := t.TempDir()
	arrivals := newArrivalLog()
	rcv := newWrappedReceiver(t, 0, false, arrivals.wrap)
	h := startHerald(t, "herald-1", dataDir, serveFlags...)

	type round struct {
		subID    string
		answered time.Time // when the DELETE's 204 came back
	}
	var done []round
	// pendingOf lists the subscription's pending deliveries through hh.
	pendingOf := func(hh *herald, subID string) ([]delivery, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return hh.deliveries(ctx, url.Values{"subscription_id": {subID}, "status": {"pending"}})
	}
	describePending := func(ds []delivery) string {
		var parts []string
		for _, d := range head(ds, 3) {
			parts = append(parts, fmt.Sprintf("%s of event %s: %d attempts, next at %s", d.ID, d.EventID, d.Attempts, d.NextAttemptAt))
		}
		return strings.Join(parts, "; ")
	}
	// checkQuiet requires no push of r.subID after the 204 plus tolerance
	// and, with pending, no pending delivery of it (waiting up to wait for
	// them to end).
	checkQuiet := func(when string, hh *herald, r round, pending bool, wait time.Duration) {
		t.Helper()
		if pending {
			var last []delivery
			var listErr error
			ok, _ := poll(wait, func() (bool, string) {
				last, listErr = pendingOf(hh, r.subID)
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
		rcv.waitIdle(t, 5*time.Second)
		if late := arrivals.after(r.subID, r.answered.Add(tolerance)); len(late) > 0 {
			t.Errorf("%s: %d pushes of the deleted subscription %s arrived after its DELETE was answered 204 (+%s tolerance): %s to %s after",
				when, len(late), r.subID, tolerance, (late[0] + tolerance).Round(time.Millisecond), (late[len(late)-1] + tolerance).Round(time.Millisecond))
		}
	}

	for n := range rounds {
		subID := h.createSubscription(t, fmt.Sprintf("delete-race-%d", n), rcv.URL())
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		began := time.Now()
		type pub struct {
			started, answered time.Time
			deliveries        int
		}
		var (
			wg          sync.WaitGroup
			acked       atomic.Int64
			ackedAfter  atomic.Int64
			deleteNow   = make(chan struct{})
			deleteOnce  sync.Once
			stop        = make(chan struct{})
			stopOnce    sync.Once
			mu          sync.Mutex
			answered204 time.Time // zero until the DELETE is answered
			pubs        []pub
			errs        []error
		)
		for p := range publishers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
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
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
						mu.Unlock()
						stopOnce.Do(func() { close(stop) })
						return
					}
					pubs = append(pubs, pub{started, time.Now(), res.Events[0].Deliveries})
					after := !answered204.IsZero() && started.After(answered204)
					mu.Unlock()
					if acked.Add(1) == deleteAfter {
						deleteOnce.Do(func() { close(deleteNow) })
					}
					if after && ackedAfter.Add(1) >= afterDelete {
						stopOnce.Do(func() { close(stop) })
					}
				}
			}()
		}
		select {
		case <-deleteNow:
		case <-stop:
		case <-time.After(30 * time.Second):
			t.Errorf("round %d: only %d publishes acknowledged within 30s; want %d before the DELETE", n, acked.Load(), deleteAfter)
		}
		sent := time.Now()
		code, err := h.do(ctx, http.MethodDelete, "/v1/subscriptions/"+subID, "", nil, nil)
		at := time.Now()
		mu.Lock()
		answered204 = at
		mu.Unlock()
		if err != nil || code != http.StatusNoContent {
			t.Errorf("round %d: DELETE /v1/subscriptions/%s: status %d, %v; want 204", n, subID, code, err)
		}
		select {
		case <-stop:
		case <-time.After(30 * time.Second):
			t.Errorf("round %d: only %d publishes acknowledged within 30s of the DELETE's answer; want %d", n, ackedAfter.Load(), afterDelete)
		}
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
		cancel()
		for _, err := range errs {
			t.Errorf("round %d: publishing: %v", n, err)
		}
		if len(errs) > 0 {
			t.FailNow()
		}

		// Publishes answered before the DELETE was sent made a delivery;
		// those that started after its 204 must make none; those in
		// between may go either way.
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
			n, subID, sent.Sub(began).Round(time.Millisecond), deleteAfter, at.Sub(sent).Round(time.Microsecond), before, overlap, overlapWith, later)
		if beforeWithout > 0 {
			t.Errorf("round %d: %d publishes answered before the DELETE was sent did not make exactly 1 delivery", n, beforeWithout)
		}
		if laterWith > 0 {
			t.Errorf("round %d: %d of %d publishes started after the DELETE's 204 made a delivery to the deleted subscription", n, laterWith, later)
		}
		r := round{subID: subID, answered: at}
		done = append(done, r)
		checkQuiet(fmt.Sprintf("round %d", n), h, r, true, settle)
	}

	// Restart on the same data directory: nothing of the deleted
	// subscriptions may be pending or pushed after it either.
	h.kill()
	h2 := startHerald(t, "herald-2", dataDir, serveFlags...)
	clean := make([]bool, len(done)) // nothing pending at the restart
	for n, r := range done {
		if ds, err := pendingOf(h2, r.subID); err != nil {
			t.Errorf("after the restart: listing the pending deliveries of %s: %v", r.subID, err)
		} else if len(ds) > 0 {
			t.Errorf("after the restart, round %d: %d deliveries of the deleted subscription %s are pending, e.g. %s", n, len(ds), r.subID, describePending(ds))
		} else {
			clean[n] = true
		}
	}
	// A delivery retried through the due loader shows that the restarted
	// engine has loaded what the store held: a subscription whose endpoint
	// answers 503 gets an event, and its second attempt is awaited.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	h2.createSubscription(t, "delete-race-marker", failing.URL+"/hook")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h2.publishRaw(ctx, []string{"delete-race-marker"})
	if err != nil || res.Events[0].Deliveries != 1 {
		t.Fatalf("publishing the marker event: %v %+v", err, res)
	}
	waitFor(t, 15*time.Second, "the marker's second attempt after the restart", func() (bool, string) {
		ds, err := h2.deliveries(ctx, url.Values{"event_id": {"delete-race-marker"}})
		if err != nil {
			return false, err.Error()
		}
		if len(ds) != 1 {
			return false, fmt.Sprintf("%d deliveries", len(ds))
		}
		return ds[0].Attempts >= 2, fmt.Sprintf("%d attempts", ds[0].Attempts)
	})
	// Still nothing pending (where nothing was at the restart), and no push.
	for n, r := range done {
		checkQuiet(fmt.Sprintf("after the restart, round %d", n), h2, r, clean[n], 0)
	}
}
