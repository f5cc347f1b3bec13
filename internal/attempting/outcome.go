package attempting

import (
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
)

// unattempted is the outcome of a held delivery that ends with status
// without an attempt: nothing logged (attempt number 0), its counts and
// last attempt as they were.
func unattempted(c store.Claimed, status delivery.Status) store.Outcome {
	return store.Outcome{
		Attempt:        delivery.Attempt{DeliveryID: c.ID, StartedAt: c.LastAttemptAt},
		Status:         status,
		Attempts:       c.Attempts,
		RoundAttempts:  c.RoundAttempts,
		FirstFailure:   c.FirstFailure,
		LastStatusCode: c.LastStatusCode,
		LastOutcome:    c.LastOutcome,
	}
}

// dropped is the outcome of a held delivery whose subscription no longer
// exists: dropped, reason SubscriptionDeleted, no attempt logged.
func dropped(c store.Claimed) store.Outcome {
	out := unattempted(c, delivery.StatusDropped)
	out.DeadLetterReason = delivery.ReasonSubscriptionDeleted
	return out
}

// healthOf is what an attempt says about its endpoint's health, which every
// subscription sharing the URL shares. The endpoint is healthy when it
// answered 2xx, or a status this subscription's policy takes as success.
// An attempt that failed before anything was sent (a request Herald could
// not build: request_error; a destination Herald refused:
// destination_blocked; Herald's host out of file descriptors:
// local_error; its authentication could not be had: auth_failed), an
// attempt whose failure is the delivery's own (result.ends: a broker
// target the event makes invalid), and nothing else, says nothing about it.
// Everything else is a failure: a status the subscription does not accept
// from an endpoint that did not answer 2xx, a timeout, a refused or reset
// connection, a DNS or TLS error.
func healthOf(policy retry.Policy, res result, now time.Time) (health.Outcome, bool) {
	if res.outcome == outcomeRequestError || res.outcome == outcomeBlocked || res.outcome == outcomeLocalError ||
		res.outcome == outcomeAuthFailed || res.ends != "" {
		return health.Outcome{}, false
	}
	ok := res.published && res.succeeded(policy) || res.status != 0 && (res.status/100 == 2 || policy.Success(res.status))
	return health.Outcome{At: now, Success: ok, Gone: res.status == http.StatusGone}, true
}

// localRetryDelay is how long after a local_error attempt its deliveries
// are tried again.
const localRetryDelay = 10 * time.Second

// expire ends a delivery whose time to live passed before its attempt.
func (a *Attempter) expire(sub *catalog.Entry, c store.Claimed) store.Outcome {
	out := unattempted(c, "") // applyVerdict sets the status
	a.applyVerdict(&out, retry.Verdict{Kind: retry.DeadLetter, Reason: retry.ReasonTTL}, sub, c, a.cfg.Clock.Now())
	return out
}

// applyVerdict writes the policy's verdict into the outcome: delivered,
// pending with a next attempt, or ended (dead-lettered, or dropped when the
// subscription does not keep dead letters; the reason is kept either way).
// A failure that the subscription queues (failure policy queue, or retries
// run out under then: queue) ends queued instead, receivable at once, and
// deactivates the subscription.
func (a *Attempter) applyVerdict(out *store.Outcome, v retry.Verdict, sub *catalog.Entry, c store.Claimed, now time.Time) {
	if c.DeadLetterOf != "" {
		applyDeadLetterVerdict(out, v, now)
		return
	}
	if v.Kind != retry.Delivered && sub.QueueOnFailure(v.Kind == retry.Retry) {
		out.Status = delivery.StatusQueued
		out.NextAttemptAt = now
		out.Deactivate, out.DeactivateReason = true, sub.QueueReason()
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
		endUndelivered(out, v.Reason, sub, c, now)
	}
}

// endUndelivered ends a delivery without success, for reason:
// dead-lettered, or dropped when the subscription does not keep dead
// letters. A dead letter of a subscription with a dead-letter URL goes
// there too, as a delivery of its own written in the same commit.
func endUndelivered(out *store.Outcome, reason string, sub *catalog.Entry, c store.Claimed, now time.Time) {
	out.Status = delivery.StatusDropped
	if sub.DeadLetter {
		out.Status = delivery.StatusDeadLettered
	}
	out.DeadLetterReason = reason
	if out.Status == delivery.StatusDeadLettered && sub.Delivery.DeadLetterURL != "" {
		out.DeadLetterCopy = &store.NewDelivery{
			ID: ids.New("dlv_", now), SubscriptionID: c.SubscriptionID,
			EndpointID: sub.DeadLetterEndpointID,
		}
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
		out.Status, out.DeadLetterReason = delivery.StatusDropped, retry.ReasonDeadLetterUndeliverable
	}
}
