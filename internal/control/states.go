package control

import (
	"context"
	"fmt"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// The states an operator sets by hand: a push subscription deactivated
// (its new deliveries queue, as when Herald deactivates it after a failed
// push) and reactivated; an endpoint frozen (no attempt until it is
// enabled) and enabled. Each change keeps its reason
// (subscription.Reason..., health.Reason...) and moves the resource's
// UpdatedAt.

// EnableEndpoint re-enables a disabled, frozen or probation endpoint and
// resets its counters; its held deliveries flow again on every node.
// store.ErrNotFound when it does not exist.
func (s *Service) EnableEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error) {
	if _, err := s.Store.GetEndpoint(ctx, id); err != nil {
		return endpoint.Endpoint{}, err
	}
	return s.Scheduler.Enable(ctx, id)
}

// FreezeEndpoint freezes an endpoint by hand: no attempt is made to it, on
// any node, until EnableEndpoint (see the Scheduler's Freeze); its
// deliveries wait, pending, and neither a probe nor a success thaws it. An
// endpoint already frozen is left as it is. store.ErrNotFound when it does
// not exist.
func (s *Service) FreezeEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error) {
	if _, err := s.Store.GetEndpoint(ctx, id); err != nil {
		return endpoint.Endpoint{}, err
	}
	return s.Scheduler.Freeze(ctx, id)
}

// UpdateEndpoint applies an endpoint PATCH: its rate limit set or removed
// (endpoint.Input). The limit is in the store before it returns and governs
// this node at once, the other nodes as soon as they adopt the change (the
// Scheduler's SetRateLimit). A bad value is a *strictjson.Error naming
// its field, and nothing changes; an input that changes nothing returns
// the endpoint as it is. store.ErrNotFound when it does not exist.
func (s *Service) UpdateEndpoint(ctx context.Context, id string, in endpoint.Input) (endpoint.Endpoint, error) {
	ep, err := s.Store.GetEndpoint(ctx, id)
	if err != nil {
		return endpoint.Endpoint{}, err
	}
	next := ep
	if ierr := in.Apply(&next); ierr != nil {
		return endpoint.Endpoint{}, ierr
	}
	if in.RateLimit == nil {
		return ep, nil
	}
	return s.Scheduler.SetRateLimit(ctx, id, next.RateLimit)
}

// Deactivate deactivates an active push subscription by hand, as Herald
// does after a failed push under a queue policy: its pending deliveries
// are queued, and so is every delivery published from now on, until
// Reactivate. The catalog is synced before the call returns (other nodes
// follow the store's catalog version), so the next publish is queued;
// attempts in flight finish, and only log their outcomes (the deliveries
// stay queued); deliveries held in memory are given back unattempted (the
// attempting stage gives back those of a subscription that queues). It
// returns the subscription as it now is. A deactivated subscription is
// left as it is. store.ErrNotFound; store.ErrConflict for a pull
// subscription and for one awaiting its endpoint's validation.
func (s *Service) Deactivate(ctx context.Context, id string) (subscription.Subscription, error) {
	changed, err := s.Store.DeactivateSubscription(ctx, id, s.Clock.Now(), subscription.ReasonDeactivatedByHand)
	if err != nil {
		return subscription.Subscription{}, err
	}
	if changed {
		s.syncCatalog(ctx)
	}
	sub, err := s.Store.GetSubscription(ctx, id)
	if err != nil {
		return subscription.Subscription{}, err
	}
	if changed {
		s.Logger.Info("subscription deactivated by hand: its deliveries are queued until it is reactivated", "subscription_id", id)
		if s.Notifier != nil {
			s.Notifier.SubscriptionDeactivatedByHand(sub)
		}
	}
	return sub, nil
}

// Reactivate makes a deactivated push subscription active again and pushes
// every one of its queued deliveries with a fresh attempt budget (the
// scheduler is told at once, and the catalog synced before the call
// returns, so the next publish is pushed). It returns the subscription as
// it now is and how many deliveries went back to pending. An active push
// subscription is left as it is (0). store.ErrNotFound;
// store.ErrConflict for a pull subscription, and for one awaiting its
// endpoint's validation (only the handshake activates it).
func (s *Service) Reactivate(ctx context.Context, id string) (subscription.Subscription, int, error) {
	before, err := s.Store.GetSubscription(ctx, id)
	if err != nil {
		return subscription.Subscription{}, 0, err
	}
	if before.State == subscription.StateAwaitingValidation {
		return subscription.Subscription{}, 0, fmt.Errorf("subscription %s awaits validation: %w", id, store.ErrConflict)
	}
	n, err := s.activate(ctx, id, subscription.ReasonReactivatedByHand)
	if err != nil {
		return subscription.Subscription{}, 0, err
	}
	sub, err := s.Store.GetSubscription(ctx, id)
	if err != nil {
		return subscription.Subscription{}, 0, err
	}
	if before.State == subscription.StateDeactivated {
		s.Logger.Info("subscription reactivated: its queued deliveries are pushed again", "subscription_id", id, "requeued", n)
		if s.Notifier != nil {
			s.Notifier.SubscriptionReactivated(sub, n)
		}
	}
	return sub, n, nil
}

// Activate makes a subscription whose endpoint passed its validation
// handshake active, and pushes what was queued while it waited.
func (s *Service) Activate(ctx context.Context, id string) error {
	_, err := s.activate(ctx, id, subscription.ReasonValidated)
	return err
}

// activate moves a deactivated or validating subscription to active for
// reason and its queued deliveries to pending, and tells the catalog and
// the scheduler.
func (s *Service) activate(ctx context.Context, id, reason string) (int, error) {
	now := s.Clock.Now()
	res, err := s.Store.ReactivateSubscription(ctx, id, now, reason)
	if err != nil {
		return 0, err
	}
	s.syncCatalog(ctx)
	s.Deactivations.Reactivated(id)
	for _, ep := range res.Endpoints {
		s.released(ctx, ep, now)
	}
	return res.Count, nil
}
