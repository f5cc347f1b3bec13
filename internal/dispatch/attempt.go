package dispatch

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
)

// run performs one attempt — one request, of one delivery or of a batch of
// one subscription's deliveries — and hands each delivery's outcome to the
// recorder. It runs on its own goroutine (at most MaxInFlight). The
// endpoint's concurrency slot is given back as soon as the HTTP exchange
// ends, before the outcomes' group commit; each delivery's memory place only
// once its outcome is written (recorded). A batch succeeds or fails as a
// whole; each delivery keeps its own attempt count, log entry and schedule.
func (e *Engine) run(l *lane, items []*item) {
	defer e.sched.attempts.Done()
	first := items[0]
	// Registered before the catalog is read: see StopSubscription. Every
	// item is of the same subscription.
	reg := e.running.add(first.c.SubscriptionID)
	sub := e.subscription(first.c.SubscriptionID)
	outs := make([]store.Outcome, len(items))
	var sent []int // the items the request carries
	var obs *health.Outcome
	switch {
	case sub == nil:
		// Deleted: the delete dropped the deliveries in the store; this
		// records that (again) and gives back their leases, sending
		// nothing. A probe that sends nothing is given back.
		for i, it := range items {
			outs[i] = dropped(it.c)
		}
		if first.probe {
			e.returnProbe(l)
		}
	case sub.Queues():
		// Deactivated since they were claimed (the deactivation queued
		// them in the store), or waiting for validation: nothing is sent,
		// and they go back as cut-short ones.
		e.cutShort(l, items, reg)
		return
	default:
		now := e.cfg.Clock.Now()
		for i, it := range items {
			if policyOf(sub, it.c).Expired(it.c.RoundStart, now) {
				// Held past its time to live (behind a closed circuit, or a
				// late claim): no attempt.
				outs[i] = e.expire(sub, it.c)
				continue
			}
			sent = append(sent, i)
		}
		if len(sent) == 0 {
			if first.probe {
				e.returnProbe(l) // a probe that sends nothing is given back
			}
			break
		}
		cs := make([]store.Claimed, len(sent))
		for j, i := range sent {
			cs[j] = items[i].c
		}
		got, o, ok := e.attempt(reg, sub, cs)
		if !ok {
			// Cut short: the engine is stopping, or the subscription was
			// deleted. Nothing is recorded for what was sent; those
			// deliveries go back to the store (attempted again later, or
			// already dropped). The expired ones are still recorded.
			var cut, kept []*item
			var keptOuts []store.Outcome
			for i, it := range items {
				if slices.Contains(sent, i) {
					cut = append(cut, it)
				} else {
					kept, keptOuts = append(kept, it), append(keptOuts, outs[i])
				}
			}
			e.cutShort(l, cut, reg)
			e.record(l, kept, keptOuts, sub)
			return
		}
		for j, i := range sent {
			outs[i] = got[j]
		}
		obs = o
		if obs != nil {
			obs.Probe = first.probe
		}
	}
	e.running.remove(first.c.SubscriptionID, reg)
	url := ""
	switch {
	case sub != nil && first.c.DeadLetterOf != "":
		url = sub.Delivery.DeadLetterURL // the lane is the dead-letter URL's
	case sub != nil:
		url = sub.URL
	}
	e.afterExchange(l, obs, url)
	e.record(l, items, outs, sub)
}

// record queues each item's outcome for the recorder.
func (e *Engine) record(l *lane, items []*item, outs []store.Outcome, sub *catalog.Entry) {
	for i, it := range items {
		out := outs[i]
		out.LeaseOwner = e.cfg.Owner
		e.rec.add(recordReq{out: out, done: func(err error) { e.recorded(l, it, sub, out, err) }})
	}
}

// cutShort ends held items without an attempt and without recording
// anything: the exchange's slot is given back (when the items were the
// whole start, reg registered), the deliveries are released to the store
// and their memory places freed.
func (e *Engine) cutShort(l *lane, items []*item, reg *runningAttempt) {
	if len(items) == 0 {
		return
	}
	e.running.remove(items[0].c.SubscriptionID, reg)
	e.afterExchange(l, nil, "")
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.c.ID
	}
	e.releaseIDs(ids)
	if items[0].probe {
		e.returnProbe(l)
	}
	now := e.cfg.Clock.Now()
	for _, it := range items {
		e.sched.finished(l, it, time.Time{}, now)
	}
}

// afterExchange tells the scheduler an attempt's HTTP exchange is over
// (obs: what it said of the endpoint's health, nil for nothing) and does
// what it asks: start attempts, merge health, release deliveries, wake the
// loader.
func (e *Engine) afterExchange(l *lane, obs *health.Outcome, url string) {
	en := e.sched.attemptEnded(l, obs, url, e.cfg.Clock.Now())
	e.launch(en.starts)
	if en.tr.Changed() {
		e.log.Info("endpoint circuit changed here; merging", "endpoint", l.id, "from", en.tr.From, "to", en.tr.To, "reason", en.tr.Reason)
	}
	if en.flush {
		e.health.kick() // share the change with the other nodes now
	}
	if len(en.released) > 0 {
		e.releaseIDs(en.released)
	}
	if en.wake {
		e.loader.kick()
	}
}

// recorded ends a delivery's time in memory once its outcome is written
// (err nil), or given up at stop (then the delivery is given back to the
// store, to be attempted again). It runs on the recorder's goroutine.
func (e *Engine) recorded(l *lane, it *item, sub *catalog.Entry, out store.Outcome, err error) {
	var next time.Time
	switch {
	case err != nil:
		e.log.Error("recording an attempt outcome failed; the delivery will be attempted again", "delivery", it.c.ID, "err", err)
		e.releaseIDs([]string{it.c.ID})
	default:
		e.cfg.Metrics.ended(out)
		if out.Status == delivery.StatusPending {
			next = out.NextAttemptAt
		}
		if out.Status == delivery.StatusDeadLettered && e.cfg.Notifier != nil && sub != nil {
			e.cfg.Notifier.DeliveryDeadLettered(it.c, sub, out)
		}
		if out.Deactivate && sub != nil {
			e.deactivated(sub, it.c, out)
		}
		if cp := out.DeadLetterCopy; cp != nil && e.sched.hint(cp.EndpointID, e.cfg.Clock.Now()) {
			e.loader.kick() // the dead letter is due now on its own endpoint
		}
		if it.c.DeadLetterOf != "" && out.Status == delivery.StatusDropped && out.DeadLetterReason == ReasonDeadLetterUndeliverable {
			e.log.Warn("a dead letter was not taken by its dead-letter URL within its 4 hours; dropped",
				"delivery", it.c.ID, "dead_letter_of", it.c.DeadLetterOf, "subscription", it.c.SubscriptionID, "last_outcome", out.LastOutcome)
		}
	}
	if e.sched.finished(l, it, next, e.cfg.Clock.Now()) {
		e.loader.kick()
	}
}

// subscription returns the catalog's entry for a subscription, syncing the
// catalog first when it does not know it (it may have been created since
// the last sync); nil when it does not exist.
func (e *Engine) subscription(id string) *catalog.Entry {
	if sub := e.cfg.Catalog.Get(id); sub != nil {
		return sub
	}
	ctx, cancel := e.storeCtx()
	defer cancel()
	if err := e.cfg.Catalog.Sync(ctx); err != nil {
		e.log.Warn("reading subscription changes", "err", err)
	}
	return e.cfg.Catalog.Get(id)
}

// dropped is the outcome of a held delivery whose subscription no longer
// exists: dropped, reason SubscriptionDeleted, no attempt logged.
func dropped(c store.Claimed) store.Outcome {
	return store.Outcome{
		Attempt:          delivery.Attempt{DeliveryID: c.ID, StartedAt: c.LastAttemptAt},
		Status:           delivery.StatusDropped,
		Attempts:         c.Attempts,
		RoundAttempts:    c.RoundAttempts,
		FirstFailure:     c.FirstFailure,
		LastStatusCode:   c.LastStatusCode,
		LastOutcome:      c.LastOutcome,
		DeadLetterReason: delivery.ReasonSubscriptionDeleted,
	}
}

// attempt sends the deliveries in one request and decides what follows for
// each: the response is the batch's, and each delivery's own attempt count,
// budget and first failure decide its verdict. ok is false when the attempt
// was abandoned (see abandoned): the engine is stopping, or the
// subscription's attempts were cut short (StopSubscription).
//
// The request's context is the attempt's only one: it ends at the
// subscription's timeout (an attempt that runs out of time fails with
// context.DeadlineExceeded: "timeout"), at a hard stop (it is a child of
// the engine's attemptsCtx), or when reg is cut short.
func (e *Engine) attempt(reg *runningAttempt, sub *catalog.Entry, cs []store.Claimed) ([]store.Outcome, *health.Outcome, bool) {
	started := e.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(e.attemptsCtx, attemptTimeout(sub))
	defer cancel()
	reg.arm(cancel)
	res := e.send(ctx, sub, cs, started)
	if e.abandoned(reg) {
		return nil, nil, false
	}
	now := e.cfg.Clock.Now()
	e.cfg.Metrics.observe(res)
	outs := make([]store.Outcome, len(cs))
	for i, c := range cs {
		out := store.Outcome{
			Attempt: delivery.Attempt{
				DeliveryID:   c.ID,
				Number:       c.Attempts + 1,
				StartedAt:    started,
				Duration:     res.duration,
				StatusCode:   res.status,
				Outcome:      res.outcome,
				Error:        res.err,
				ResponseBody: res.body,
			},
			Attempts:       c.Attempts + 1,
			RoundAttempts:  c.RoundAttempts + 1,
			FirstFailure:   c.FirstFailure,
			LastStatusCode: res.status,
			LastOutcome:    res.outcome,
		}
		policy := policyOf(sub, c)
		v := retry.Verdict{Kind: retry.Delivered}
		switch {
		case res.outcome == outcomeLocalError:
			// Herald's host ran out of descriptors: not the endpoint's
			// failure nor the delivery's. Logged, and retried without
			// taking a round attempt (so never dead-lettered for it, nor
			// queued by a failure policy) while its ttl allows.
			out.RoundAttempts = c.RoundAttempts
			if at := now.Add(localRetryDelay); !policy.Expired(c.RoundStart, at) {
				out.Status, out.NextAttemptAt = delivery.StatusPending, at
				outs[i] = out
				continue
			}
			v = retry.Verdict{Kind: retry.DeadLetter, Reason: retry.ReasonTTL}
		case res.outcome == outcomeBlocked:
			// Herald refused the destination: no retry would be let through
			// (until Herald is restarted with other --allow-* flags; a redrive
			// then sends it).
			v = retry.Verdict{Kind: retry.DeadLetter, Reason: retry.ReasonDestinationBlocked}
			if out.FirstFailure.IsZero() {
				out.FirstFailure = now
			}
		case res.err != "" || !policy.Success(res.status):
			v = policy.Decide(retry.Attempt{
				Number:       out.RoundAttempts,
				StatusCode:   res.status,
				RetryAfter:   res.retryAfterAt(now),
				Start:        c.RoundStart,
				FirstFailure: c.FirstFailure,
				Now:          now,
			}, e.cfg.Rand)
			if out.FirstFailure.IsZero() {
				out.FirstFailure = now
			}
		}
		e.applyVerdict(&out, v, sub, c, now)
		outs[i] = out
	}
	return outs, healthOf(policyOf(sub, cs[0]), res, now), true
}

// abandoned reports whether an attempt is abandoned, nothing recorded: the
// engine is stopping (a hard stop: see Stop), or StopSubscription cut the
// attempt short. Either counts whenever it came before this is asked:
// before the request, during it, or after it ended (even by a timeout).
func (e *Engine) abandoned(reg *runningAttempt) bool {
	return e.attemptsCtx.Err() != nil || reg.wasCut()
}

// healthOf is what an attempt says about its endpoint's health, which every
// subscription sharing the URL shares. The endpoint is healthy when it
// answered 2xx, or a status this subscription's policy takes as success.
// An attempt that failed before anything was sent (a request Herald could
// not build: request_error; a destination Herald refused:
// destination_blocked; Herald's host out of file descriptors:
// local_error), and nothing else, says nothing about it.
// Everything else is a failure: a status the subscription does not accept
// from an endpoint that did not answer 2xx, a timeout, a refused or reset
// connection, a DNS or TLS error.
func healthOf(policy retry.Policy, res result, now time.Time) *health.Outcome {
	if res.outcome == outcomeRequestError || res.outcome == outcomeBlocked || res.outcome == outcomeLocalError {
		return nil
	}
	ok := res.status != 0 && (res.status/100 == 2 || policy.Success(res.status))
	return &health.Outcome{At: now, Success: ok, Gone: res.status == http.StatusGone}
}

// localRetryDelay is how long after a local_error attempt its deliveries
// are tried again.
const localRetryDelay = 10 * time.Second

// expire ends a delivery whose time to live passed before its attempt.
func (e *Engine) expire(sub *catalog.Entry, c store.Claimed) store.Outcome {
	out := store.Outcome{
		Attempts:       c.Attempts,
		RoundAttempts:  c.RoundAttempts,
		FirstFailure:   c.FirstFailure,
		LastStatusCode: c.LastStatusCode,
		LastOutcome:    c.LastOutcome,
		// Number 0: nothing to log; the last attempt time stays.
		Attempt: delivery.Attempt{DeliveryID: c.ID, StartedAt: c.LastAttemptAt},
	}
	e.applyVerdict(&out, retry.Verdict{Kind: retry.DeadLetter, Reason: retry.ReasonTTL}, sub, c, e.cfg.Clock.Now())
	return out
}

// applyVerdict writes the policy's verdict into the outcome: delivered,
// pending with a next attempt, or ended (dead-lettered, or dropped when the
// subscription does not keep dead letters; the reason is kept either way).
// A failure that the subscription queues (failure policy queue, or retries
// run out under then: queue) ends queued instead, receivable at once, and
// deactivates the subscription.
func (e *Engine) applyVerdict(out *store.Outcome, v retry.Verdict, sub *catalog.Entry, c store.Claimed, now time.Time) {
	if c.DeadLetterOf != "" {
		applyDeadLetterVerdict(out, v, now)
		return
	}
	if v.Kind != retry.Delivered && sub.QueueOnFailure(v.Kind == retry.Retry) {
		out.Status = delivery.StatusQueued
		out.NextAttemptAt = now
		out.Deactivate = true
		return
	}
	switch v.Kind {
	case retry.Delivered:
		out.Status = delivery.StatusDelivered
		out.DeliveredAt = now
	case retry.Retry:
		out.Status = delivery.StatusPending
		out.NextAttemptAt = v.At
	default:
		out.Status = delivery.StatusDropped
		if sub.DeadLetter {
			out.Status = delivery.StatusDeadLettered
		}
		out.DeadLetterReason = v.Reason
		if out.Status == delivery.StatusDeadLettered && sub.Delivery.DeadLetterURL != "" {
			// Durably, in the same commit: the dead letter goes to the
			// subscription's dead-letter URL as a delivery of its own.
			out.DeadLetterCopy = &store.NewDelivery{
				ID: ids.New("dlv_", now), SubscriptionID: c.SubscriptionID,
				EndpointID: sub.DeadLetterEndpointID,
			}
		}
	}
}

// deactivated follows an outcome that deactivated its subscription: the
// catalog is synced at once (so this node's other held deliveries of it are
// not sent: see run) and the deactivation is announced once per
// deactivation, however many of its attempts failed together.
func (e *Engine) deactivated(sub *catalog.Entry, c store.Claimed, out store.Outcome) {
	ctx, cancel := e.storeCtx()
	defer cancel()
	if err := e.cfg.Catalog.Sync(ctx); err != nil {
		e.log.Warn("reading subscription changes", "err", err)
	}
	if !e.announce.first(sub.ID) {
		return
	}
	e.log.Info("subscription deactivated: its events are queued until it is reactivated", "subscription", sub.ID, "delivery", c.ID, "outcome", out.LastOutcome)
	if e.cfg.Notifier != nil {
		e.cfg.Notifier.SubscriptionDeactivated(sub, c, out)
	}
}

// Reactivated tells the engine a subscription was reactivated: a later
// deactivation is announced again.
func (e *Engine) Reactivated(subscriptionID string) { e.announce.forget(subscriptionID) }

// announcements remembers the subscriptions whose deactivation this
// process announced (bounded: at most maxAnnounced, the oldest forgotten
// first, which at worst announces one deactivation twice).
type announcements struct {
	mu    sync.Mutex
	seen  map[string]bool
	order []string
}

const maxAnnounced = 10_000

// first reports whether id was not announced yet, and records it.
func (a *announcements) first(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	if a.seen[id] {
		return false
	}
	if len(a.order) >= maxAnnounced {
		delete(a.seen, a.order[0])
		a.order = a.order[1:]
	}
	a.seen[id] = true
	a.order = append(a.order, id)
	return true
}

func (a *announcements) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen[id] {
		delete(a.seen, id)
		a.order = slices.DeleteFunc(a.order, func(s string) bool { return s == id })
	}
}

// deadLetterPolicy is how a dead letter is delivered to a dead-letter URL:
// on Event Grid's schedule, for at most 4 hours (then it is dropped, and
// logged), as Event Grid does.
var deadLetterPolicy = func() retry.Policy {
	ttl := retry.Duration(DeadLetterTTL)
	p, err := retry.Resolve(retry.Spec{Preset: retry.PresetEventGrid, TTL: &ttl})
	if err != nil {
		panic(err) // a constant spec
	}
	return p
}()

// DeadLetterTTL is how long Herald tries to deliver a dead letter to its
// subscription's dead-letter URL.
const DeadLetterTTL = 4 * time.Hour

// ReasonDeadLetterUndeliverable drops a dead letter its dead-letter URL
// never took.
const ReasonDeadLetterUndeliverable = "DeadLetterUndeliverable"

// policyOf is the retry policy of a held delivery: its subscription's, or
// for the delivery of a dead letter, deadLetterPolicy.
func policyOf(sub *catalog.Entry, c store.Claimed) retry.Policy {
	if c.DeadLetterOf != "" {
		return deadLetterPolicy
	}
	return sub.Policy
}

// applyDeadLetterVerdict is applyVerdict for the delivery of a dead letter:
// delivered, retried, or dropped when its time is up (a dead letter is
// never dead-lettered again, nor queued).
func applyDeadLetterVerdict(out *store.Outcome, v retry.Verdict, now time.Time) {
	switch v.Kind {
	case retry.Delivered:
		out.Status, out.DeliveredAt = delivery.StatusDelivered, now
	case retry.Retry:
		out.Status, out.NextAttemptAt = delivery.StatusPending, v.At
	default:
		out.Status, out.DeadLetterReason = delivery.StatusDropped, ReasonDeadLetterUndeliverable
	}
}
