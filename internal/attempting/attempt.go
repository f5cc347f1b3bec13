package attempting

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/tracing"
)

// Attempt performs one attempt and returns what the exchange said and each
// delivery's outcome to be written (Exchange.Record). A batch succeeds or fails
// as a whole; each delivery keeps its own attempt count, log entry and
// schedule. Nothing is sent, and the deliveries are given back or
// recorded without an attempt, when:
//   - the subscription was deleted: each is recorded dropped (the delete
//     dropped them in the store; this gives back their leases);
//   - it queues (deactivated since the claim, or awaiting validation): all
//     are given back (the deactivation queued them in the store);
//   - a delivery's time to live passed while it was held: it is recorded
//     dead-lettered (or dropped) without an attempt;
//   - the subscription's transform gives null for a delivery's event: it
//     is recorded filtered, without an attempt; or fails on it: it is
//     recorded dead-lettered (TransformFailed) with an attempt whose
//     outcome is transform_error, nothing sent (see transform);
//   - the attempt is cut short (StopSubscription, or Abandon at a hard
//     stop): what was sent is given back, unrecorded.
func (a *Attempter) Attempt(job Job) Exchange {
	first := job.Deliveries[0]
	// Registered before the catalog is read: see StopSubscription. Every
	// delivery is of the same subscription.
	reg := a.running.add(first.SubscriptionID)
	sub := a.subscription(first.SubscriptionID)
	var ex Exchange
	switch {
	case sub == nil:
		outs := make([]store.Outcome, len(job.Deliveries))
		for i, c := range job.Deliveries {
			outs[i] = dropped(*c)
		}
		a.running.remove(first.SubscriptionID, reg)
		ex.ReturnProbe = job.Probe
		ex.Record = a.record(nil, job.Deliveries, outs, nil)
	case sub.Queues():
		a.running.remove(first.SubscriptionID, reg)
		ex.GiveBack = allOf(job.Deliveries)
		ex.ReturnProbe = job.Probe
	default:
		ex = a.attemptLive(reg, sub, job)
	}
	return ex
}

// attemptLive is Attempt for a subscription that pushes: the expired
// deliveries are recorded without an attempt, the others sent.
func (a *Attempter) attemptLive(reg *runningAttempt, sub *catalog.Entry, job Job) Exchange {
	now := a.cfg.Clock.Now()
	outs := make([]store.Outcome, len(job.Deliveries))
	var sent []int // the deliveries the request carries
	for i, c := range job.Deliveries {
		if policyOf(sub, *c).Expired(c.RoundStart, now) {
			// Held past its time to live (behind a closed circuit, or a
			// late claim): no attempt.
			outs[i] = a.expire(sub, *c)
			continue
		}
		sent = append(sent, i)
	}
	var payloads [][]byte // the transformed payloads of sent (nil: as stored)
	if sub.Transform != nil {
		var cancelled bool
		if sent, payloads, cancelled = transform(a.attemptsCtx, now, sub, job.Deliveries, sent, outs); cancelled {
			a.running.remove(sub.ID, reg)
			return Exchange{GiveBack: allOf(job.Deliveries), ReturnProbe: job.Probe}
		}
	}
	ex := Exchange{URL: urlOf(sub, job.Deliveries[0])}
	if len(sent) == 0 {
		a.running.remove(sub.ID, reg)
		ex.ReturnProbe = job.Probe // a probe that sends nothing is given back
		ex.Record = a.record(nil, job.Deliveries, outs, sub)
		return ex
	}
	cs := make([]store.Claimed, len(sent))
	for j, i := range sent {
		cs[j] = *job.Deliveries[i]
		if payloads != nil {
			cs[j].Payload = payloads[j]
		}
	}
	got, ok := a.attempt(reg, sub, cs, job.Probe)
	a.running.remove(sub.ID, reg)
	if !ok {
		// Cut short: nothing is recorded for what was sent; those
		// deliveries go back to the store (attempted again later, or
		// already dropped). The expired ones are still recorded.
		var kept []*store.Claimed
		var keptOuts []store.Outcome
		for i, c := range job.Deliveries {
			if !slices.Contains(sent, i) {
				kept, keptOuts = append(kept, c), append(keptOuts, outs[i])
			}
		}
		return Exchange{GiveBack: sent, ReturnProbe: job.Probe, Record: a.record(nil, kept, keptOuts, sub)}
	}
	for j, i := range sent {
		outs[i] = got.outs[j]
	}
	got.health.Probe = job.Probe
	ex.Health, ex.Observed, ex.Duration = got.health, got.observed, got.duration
	ex.Record = a.record(nil, job.Deliveries, outs, sub)
	for _, i := range sent {
		ex.Record[i].Refused = got.refused
	}
	return ex
}

// urlOf is the URL an attempt of c goes to: the subscription's, or its
// dead-letter URL for the delivery of a dead letter (the lane is that
// URL's).
func urlOf(sub *catalog.Entry, c *store.Claimed) string {
	if c.DeadLetterOf != "" {
		return sub.Delivery.DeadLetterURL
	}
	return sub.URL
}

// allOf returns the indexes of every delivery.
func allOf(cs []*store.Claimed) []int {
	idx := make([]int, len(cs))
	for i := range cs {
		idx[i] = i
	}
	return idx
}

// record appends to reqs each delivery's outcome to be written, with the
// URL it went to (sub nil: the subscription is gone).
func (a *Attempter) record(reqs []recording.Request, cs []*store.Claimed, outs []store.Outcome, sub *catalog.Entry) []recording.Request {
	for i, c := range cs {
		out := outs[i]
		out.LeaseOwner = a.cfg.Owner
		req := recording.Request{Outcome: out, Delivery: c, Subscription: sub}
		if sub != nil {
			req.URL = urlOf(sub, c)
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// subscription returns the catalog's entry for a subscription, syncing the
// catalog first when it does not know it (it may have been created since
// the last sync); nil when it does not exist.
func (a *Attempter) subscription(id string) *catalog.Entry {
	if sub := a.cfg.Catalog.Get(id); sub != nil {
		return sub
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.StoreTimeout)
	defer cancel()
	if err := a.cfg.Catalog.Sync(ctx); err != nil {
		a.log.Warn("reading subscription changes", "err", err)
	}
	return a.cfg.Catalog.Get(id)
}

// attempted is what attempt found: each delivery's outcome, what the
// exchange said of the endpoint's health (when observed), Herald's refusal
// of the destination when it refused it (nil otherwise) and how long the
// exchange took.
type attempted struct {
	outs     []store.Outcome
	health   health.Outcome
	observed bool
	refused  *destination.Refusal
	duration time.Duration
}

// attempt sends the deliveries in one request and decides what follows for
// each: the response is the batch's, and each delivery's own attempt count,
// budget and first failure decide its verdict. ok is false when
// the attempt was abandoned (see abandoned): Abandon was called, or the
// subscription's attempts were cut short (StopSubscription).
//
// The request's context is the attempt's only one: it ends at the
// subscription's timeout (an attempt that runs out of time fails with
// context.DeadlineExceeded: "timeout"), at a hard stop (Abandon cancels
// its parent), or when reg is cut short.
func (a *Attempter) attempt(reg *runningAttempt, sub *catalog.Entry, cs []store.Claimed, probe bool) (attempted, bool) {
	started := a.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(a.attemptsCtx, attemptTimeout(sub))
	defer cancel()
	reg.arm(cancel)
	var span tracing.AttemptSpan
	if a.cfg.Tracer.Enabled() {
		span = a.startSpan(sub, cs, probe)
	}
	res := a.send(ctx, sub, cs, started, span)
	if a.abandoned(reg) {
		span.Abandon()
		return attempted{}, false
	}
	if a.cfg.Tracer.Enabled() {
		span.End(res.outcome, res.status, !res.succeeded(policyOf(sub, cs[0])), res.err)
	}
	now := a.cfg.Clock.Now()
	a.cfg.Metrics.observe(res)
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
		case res.outcome == outcomeBlocked, res.ends != "":
			// Herald refused the destination: no retry would be let through
			// (until Herald is restarted with other --allow-* flags; a redrive
			// then sends it). Or the attempt failed in a way no retry
			// changes (res.ends).
			v = retry.Verdict{Kind: retry.DeadLetter, Reason: cmp.Or(res.ends, retry.ReasonDestinationBlocked)}
			if out.FirstFailure.IsZero() {
				out.FirstFailure = now
			}
		case !res.succeeded(policy):
			v = policy.Decide(retry.Attempt{
				Number:       out.RoundAttempts,
				StatusCode:   res.status,
				RetryAfter:   res.retryAfterAt(now),
				Start:        c.RoundStart,
				FirstFailure: c.FirstFailure,
				Now:          now,
			}, a.cfg.Rand)
			if out.FirstFailure.IsZero() {
				out.FirstFailure = now
			}
		}
		a.applyVerdict(&out, v, sub, c, now)
		outs[i] = out
	}
	got := attempted{outs: outs, refused: res.refused, duration: res.duration}
	got.health, got.observed = healthOf(policyOf(sub, cs[0]), res, now)
	return got, true
}

// abandoned reports whether an attempt is abandoned, nothing recorded: the
// attempter was abandoned (a hard stop: see Abandon), or StopSubscription cut the
// attempt short. Either counts whenever it came before this is asked:
// before the request, during it, or after it ended (even by a timeout).
func (a *Attempter) abandoned(reg *runningAttempt) bool {
	return a.attemptsCtx.Err() != nil || reg.wasCut()
}
