// Package hold says why a delivery waits and when it can really go: the
// held_by and next_attempt_at of the API's delivery resource, and what the
// console, the portal and the CLI show of a waiting delivery
// (docs/delivery.md, "Delivery states").
//
// A pending delivery is held by its endpoint when the endpoint's circuit is
// not enabled (probation, disabled: nothing goes before the next probe;
// frozen: nothing goes until it is enabled), or when the endpoint has a
// rate limit and the delivery is already due (it waits for the bucket's
// next token). A queued delivery of a push subscription that is not active
// (deactivated by hand or by its failure policy, awaiting validation) is
// held by its subscription until it is reactivated. Anything else is not
// held: its own due time is when it goes.
package hold

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/subscription"
)

// The held_by values. An endpoint's circuit is EndpointPrefix and its
// state (endpoint_probation, endpoint_disabled, endpoint_frozen); a
// subscription's is SubscriptionPrefix and its state
// (subscription_deactivated, subscription_awaiting_validation).
const (
	EndpointPrefix     = "endpoint_"
	SubscriptionPrefix = "subscription_"
	RateLimit          = "endpoint_rate_limit"
)

// Hold is what holds a delivery and when it can go.
type Hold struct {
	// By is the held_by value; "" when nothing holds the delivery.
	By string
	// Next is when a pending delivery can go: its own due time, or the
	// later time its hold allows. Zero when it is not pending, or when
	// no time is known (a frozen endpoint, a subscription not active).
	Next time.Time
}

// Of returns the hold of d at now. ep is d's endpoint (known false when it
// could not be read: then the endpoint holds nothing); sub is its
// subscription (its mode and state; the zero value when it could not be
// read).
func Of(d delivery.Delivery, ep endpoint.Endpoint, known bool, sub subscription.Subscription, now time.Time) Hold {
	switch d.Status {
	case delivery.StatusPending:
		if !known {
			return Hold{Next: d.NextAttemptAt}
		}
		return endpointHold(d.NextAttemptAt, ep, now)
	case delivery.StatusQueued:
		if sub.DeliveryMode != subscription.ModePull && sub.State != "" && sub.State != subscription.StateActive {
			return Hold{By: SubscriptionPrefix + sub.State}
		}
	}
	return Hold{}
}

// endpointHold is the hold of a pending delivery due at due to ep at now:
// in probation or disabled the later of due and the endpoint's next probe;
// frozen no time; rate limited, when due has come, an estimate of the
// bucket's next token: one interval from now. The scheduler's bucket is
// shared by every node and a delivery may wait behind others of the
// endpoint, so the real time is not known here (docs/flow-control.md, "The
// time shown for a delivery held by the rate limit").
func endpointHold(due time.Time, ep endpoint.Endpoint, now time.Time) Hold {
	switch h := ep.Health; h.State {
	case health.Frozen:
		return Hold{By: EndpointPrefix + string(h.State)}
	case health.Probation, health.Disabled:
		return Hold{By: EndpointPrefix + string(h.State), Next: later(due, h.NextProbeAt)}
	}
	if ep.RateLimit != nil && !due.After(now) {
		return Hold{By: RateLimit, Next: now.Add(ep.RateLimit.Interval())}
	}
	return Hold{Next: due}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Reader gives the holds of the deliveries of one response (a page, an
// API answer): each endpoint and subscription is read once, an endpoint
// from the scheduler's live view when it holds it (ahead of the store's),
// else from the store.
type Reader struct {
	ctx     context.Context
	live    endpoint.Live
	getEP   func(context.Context, string) (endpoint.Endpoint, error)
	getSub  func(context.Context, string) (subscription.Subscription, error)
	now     time.Time
	eps     map[string]epEntry
	subs    map[string]subscription.Subscription
	subRead map[string]bool
}

type epEntry struct {
	ep endpoint.Endpoint
	ok bool
}

// NewReader returns a Reader at now. live may be nil (no scheduler runs
// here); getEP and getSub are the store's reads.
func NewReader(ctx context.Context, live endpoint.Live, now time.Time,
	getEP func(context.Context, string) (endpoint.Endpoint, error),
	getSub func(context.Context, string) (subscription.Subscription, error)) *Reader {
	return &Reader{ctx: ctx, live: live, getEP: getEP, getSub: getSub, now: now,
		eps: map[string]epEntry{}, subs: map[string]subscription.Subscription{}, subRead: map[string]bool{}}
}

// Of returns d's hold, reading its endpoint (pending) or subscription
// (queued) if this Reader has not yet.
func (r *Reader) Of(d delivery.Delivery) Hold {
	switch d.Status {
	case delivery.StatusPending:
		ep, ok := r.Endpoint(d.EndpointID)
		return Of(d, ep, ok, subscription.Subscription{}, r.now)
	case delivery.StatusQueued:
		sub, _ := r.Subscription(d.SubscriptionID)
		return Of(d, endpoint.Endpoint{}, false, sub, r.now)
	}
	return Hold{}
}

// Endpoint returns the endpoint of id, live when the scheduler holds it;
// ok is false when it cannot be read.
func (r *Reader) Endpoint(id string) (endpoint.Endpoint, bool) {
	e, done := r.eps[id]
	if !done {
		if r.live != nil {
			if ep, _, _, ok := r.live.Endpoint(id); ok {
				e = epEntry{ep, true}
			}
		}
		if !e.ok && id != "" {
			if ep, err := r.getEP(r.ctx, id); err == nil {
				e = epEntry{ep, true}
			}
		}
		r.eps[id] = e
	}
	return e.ep, e.ok
}

// Subscription returns the subscription of id; ok is false when it
// cannot be read (deleted, or the store failed).
func (r *Reader) Subscription(id string) (subscription.Subscription, bool) {
	if !r.subRead[id] {
		if s, err := r.getSub(r.ctx, id); err == nil {
			r.subs[id] = s
		}
		r.subRead[id] = true
	}
	s, ok := r.subs[id]
	return s, ok
}
