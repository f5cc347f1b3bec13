package recording

import (
	"context"
	"slices"
	"sync"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// report tells what a written outcome means (the metrics, the operational
// events, the log) and returns its result. An outcome whose state change
// did not apply (applied false: the delivery was no longer pending, or its
// lease went to another owner, who reports its own) changed nothing but
// the attempt log: it is reported by one debug line alone, and its result
// frees the delivery's place with nothing due.
func (r *Recorder) report(q Request, applied bool) Result {
	out, c, sub := q.Outcome, q.Delivery, q.Subscription
	res := Result{Delivery: c}
	if !applied {
		r.log.Debug("outcome not applied: the delivery changed meanwhile (no longer pending, or leased to another owner)",
			"delivery_id", c.ID, "attempt", out.Attempt.Number, "status", out.Status)
		return res
	}
	r.cfg.Metrics.ended(out)
	if out.Status == delivery.StatusPending {
		res.Next = out.NextAttemptAt
	}
	if out.Status == delivery.StatusDeadLettered && r.cfg.Notifier != nil && sub != nil {
		r.cfg.Notifier.DeliveryDeadLettered(*c, sub, out)
	}
	r.logOutcome(q) // before the deactivation's line, which it explains
	if out.Deactivate && sub != nil {
		r.deactivated(sub, c, out)
	}
	if cp := out.DeadLetterCopy; cp != nil {
		res.DeadLetterEndpoint = cp.EndpointID // due now on its own endpoint
	}
	return res
}

// deactivated follows an outcome that deactivated its subscription: the
// catalog is synced at once (so this node's other held deliveries of it are
// not sent: the attempting stage gives back those of a subscription that
// queues) and the deactivation is announced once per deactivation, however
// many of its attempts failed together.
func (r *Recorder) deactivated(sub *catalog.Entry, c *store.Claimed, out store.Outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.StoreTimeout)
	defer cancel()
	if err := r.cfg.Catalog.Sync(ctx); err != nil {
		r.log.Warn("reading subscription changes", "err", err)
	}
	if !r.announce.first(sub.ID) {
		return
	}
	r.log.Warn("subscription deactivated: its events are queued until it is reactivated",
		"subscription_id", sub.ID, "delivery_id", c.ID, "last_outcome", out.LastOutcome)
	if r.cfg.Notifier != nil {
		r.cfg.Notifier.SubscriptionDeactivated(sub, *c, out)
	}
}

// Reactivated tells the recorder a subscription was reactivated: a later
// deactivation is announced again.
func (r *Recorder) Reactivated(subscriptionID string) { r.announce.forget(subscriptionID) }

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
