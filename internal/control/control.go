// Package control is Herald's control plane: the changes an operator or a
// subscriber makes through the API, with everything each one must set in
// motion. A subscription write goes to the store and the catalog catches up
// before the call returns (so this node matches the next publish against
// it at once; other nodes are held to it by the publish guard, see
// ingest). Deleting a subscription also cuts its attempts in progress
// short. Redeliver, redrive and enable release deliveries to the
// scheduler, and an endpoint in probation or disabled is probed at once.
// Deactivate and Reactivate pause and resume a push subscription, Freeze
// and Enable an endpoint, by hand (states.go).
// An account or key write takes effect on this node at once (accounts.go).
// The API's handlers translate HTTP to these calls and back, and make no
// change any other way; the rules of the values themselves live beside their
// types (packages subscription and account).
package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Store is what the control plane needs of the store.
type Store interface {
	CreateSubscription(ctx context.Context, s subscription.Subscription) error
	GetSubscription(ctx context.Context, id string) (subscription.Subscription, error)
	UpdateSubscription(ctx context.Context, s subscription.Subscription) error
	DeleteSubscription(ctx context.Context, id string, now time.Time) error
	Redeliver(ctx context.Context, id string, now time.Time) (delivery.Delivery, error)
	Redrive(ctx context.Context, subscriptionID string, ids []string, now time.Time) (store.RedriveResult, error)
	RedriveIDs(ctx context.Context, accountID string, ids []string, now time.Time) (store.RedriveResult, error)
	GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	ReactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (store.RedriveResult, error)
	DeactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (bool, error)
	CreateJob(ctx context.Context, j job.Job, max int) (job.Job, error)
	RecoverBatch(ctx context.Context, id, owner string, limit int, now time.Time) (job.Job, store.RedriveResult, error)
}

// Catalog is the in-memory view of the subscriptions.
type Catalog interface {
	Sync(ctx context.Context) error
}

// Scheduler is the scheduling stage, as the control plane drives it.
type Scheduler interface {
	// Released: deliveries of the endpoint were made due at `at`; an
	// endpoint in probation or disabled is probed at once.
	Released(ctx context.Context, endpointID string, at time.Time) error
	// Enable re-enables an endpoint and resets its counters.
	Enable(ctx context.Context, id string) (endpoint.Endpoint, error)
	// Freeze freezes an endpoint until Enable.
	Freeze(ctx context.Context, id string) (endpoint.Endpoint, error)
	// SetRateLimit sets (nil: removes) an endpoint's rate limit.
	SetRateLimit(ctx context.Context, id string, rl *endpoint.RateLimit) (endpoint.Endpoint, error)
}

// Attempts is the attempting stage: a deleted subscription's attempts in
// progress are cut short.
type Attempts interface {
	StopSubscription(ctx context.Context, subscriptionID string) error
}

// Deactivations is the recording stage, which announces deactivations once.
type Deactivations interface {
	// Reactivated: a later deactivation of the subscription is news again.
	Reactivated(subscriptionID string)
}

// Notifier announces control-plane changes as operational events.
type Notifier interface {
	SubscriptionReactivated(sub subscription.Subscription, requeued int)
	SubscriptionDeactivatedByHand(sub subscription.Subscription)
}

// Service carries out control-plane calls. It is safe for concurrent use.
type Service struct {
	Store         Store
	Catalog       Catalog
	Scheduler     Scheduler
	Attempts      Attempts
	Deactivations Deactivations
	Clock         clock.Clock
	Logger        *slog.Logger
	// Notifier, when set, hears of reactivations and deactivations by
	// hand.
	Notifier Notifier
	// Jobs, when set, is this node's job runner, told of a new job
	// (jobs.go).
	Jobs Kicker
	// MaxJobsPerAccount is the most jobs one account may have running or
	// waiting (Recover; 0: no limit).
	MaxJobsPerAccount int
	// Types, when set, checks the event types of a subscription created,
	// or changed in its event types, against the event-type catalog
	// (eventtype.Checker.CheckTypes: an *eventtype.UnknownTypeError, and
	// nothing written).
	Types interface {
		CheckTypes(ctx context.Context, accountID string, ts []string) error
	}
}

// syncCatalog brings this node's catalog up to the write just committed. A
// failure is logged, not returned: the write stands, and a publish matched
// against the older view is refused by the store and matched again.
func (s *Service) syncCatalog(ctx context.Context) {
	if err := s.Catalog.Sync(ctx); err != nil {
		s.Logger.Warn("reading subscription changes after a write", "err", err)
	}
}

// CreateSubscription stores sub (validated by the caller) and makes it
// current on this node before returning. store.ErrNameTaken when the name
// is used.
func (s *Service) CreateSubscription(ctx context.Context, sub subscription.Subscription) error {
	if err := s.checkTypes(ctx, sub, nil); err != nil {
		return err
	}
	if err := s.Store.CreateSubscription(ctx, sub); err != nil {
		return err
	}
	s.syncCatalog(ctx)
	return nil
}

// UpdateSubscription reads the subscription, lets change modify it (an
// error from change is returned and nothing is written), stores it with
// UpdatedAt now, and makes it current on this node before returning.
func (s *Service) UpdateSubscription(ctx context.Context, id string, change func(*subscription.Subscription) error) (subscription.Subscription, error) {
	sub, err := s.Store.GetSubscription(ctx, id)
	if err != nil {
		return subscription.Subscription{}, err
	}
	before := sub.EventTypes
	if err := change(&sub); err != nil {
		return subscription.Subscription{}, err
	}
	if err := s.checkTypes(ctx, sub, before); err != nil {
		return subscription.Subscription{}, err
	}
	sub.UpdatedAt = s.Clock.Now().UTC().Truncate(time.Millisecond)
	if err := s.Store.UpdateSubscription(ctx, sub); err != nil {
		return subscription.Subscription{}, err
	}
	s.syncCatalog(ctx)
	return s.Store.GetSubscription(ctx, id)
}

// checkTypes checks sub's event types with Types, unless they are those
// it had before (an update that leaves them alone).
func (s *Service) checkTypes(ctx context.Context, sub subscription.Subscription, before []string) error {
	if s.Types == nil || (before != nil && slices.Equal(before, sub.EventTypes)) {
		return nil
	}
	return s.Types.CheckTypes(ctx, sub.AccountID, sub.EventTypes)
}

// ErrGivenKey: a rotation was given a secret for a subscription that signs
// with ed25519, whose keys only Herald makes.
var ErrGivenKey = errors.New("a given secret needs hmac-sha256 signing")

// RotateSecret gives a subscription a new signing key (secret: the given
// HMAC secret's bytes; nil: a new key of the subscription's algorithm). The
// current key keeps signing too until now+grace. store.ErrNotFound when
// the subscription does not exist.
func (s *Service) RotateSecret(ctx context.Context, id string, secret []byte, grace time.Duration) (subscription.Subscription, error) {
	return s.UpdateSubscription(ctx, id, func(sub *subscription.Subscription) error {
		alg := sub.Signing.Algorithm
		if alg == "" {
			alg = signing.HMACSHA256
			sub.Signing.Algorithm = alg
		}
		if secret != nil && alg != signing.HMACSHA256 {
			return ErrGivenKey
		}
		next := signing.Key{Key: secret}
		if secret == nil {
			k, err := signing.New(alg)
			if err != nil {
				return err
			}
			next = k
		}
		sub.Signing = signing.Rotate(sub.Signing, next, s.Clock.Now(), grace)
		return nil
	})
}

// DeleteSubscription deletes a subscription: its pending deliveries end as
// dropped, this node's catalog forgets it, and its attempts in progress here
// are cut short, so that once this returns nothing more is sent for it
// from this node (other nodes stop when they learn of the deletion, at
// once on PostgreSQL with LISTEN, and none of them sends a delivery
// published after it).
func (s *Service) DeleteSubscription(ctx context.Context, id string) error {
	if err := s.Store.DeleteSubscription(ctx, id, s.Clock.Now()); err != nil {
		return err
	}
	s.syncCatalog(ctx)
	if err := s.Attempts.StopSubscription(ctx, id); err != nil {
		return fmt.Errorf("stopping the attempts of subscription %s: %w", id, err)
	}
	return nil
}

// Redeliver makes one delivery due now with a fresh attempt budget and
// tells the scheduler (see Scheduler.Released). store.ErrNotFound;
// store.ErrConflict while an attempt is in progress;
// store.ErrSubscriptionDeleted when its subscription is gone (nothing
// changes).
func (s *Service) Redeliver(ctx context.Context, id string) (delivery.Delivery, error) {
	d, err := s.Store.Redeliver(ctx, id, s.Clock.Now())
	if err != nil {
		return delivery.Delivery{}, err
	}
	if d.Status == delivery.StatusPending {
		s.released(ctx, d.EndpointID, d.NextAttemptAt)
	}
	return d, nil
}

// Redrive moves a subscription's dead letters (all, or only ids) back to
// pending with a fresh budget (queued, for a pull or deactivated
// subscription's consumers) and tells the scheduler of each endpoint.
// store.ErrNotFound when the subscription does not exist.
func (s *Service) Redrive(ctx context.Context, subscriptionID string, ids []string) (int, error) {
	now := s.Clock.Now()
	res, err := s.Store.Redrive(ctx, subscriptionID, ids, now)
	return s.redriven(ctx, res, err, now)
}

// RedriveIDs does what Redrive does to the dead letters among ids of the
// account, whichever their subscriptions (store.Store's RedriveIDs: the
// others are ignored).
func (s *Service) RedriveIDs(ctx context.Context, accountID string, ids []string) (int, error) {
	now := s.Clock.Now()
	res, err := s.Store.RedriveIDs(ctx, accountID, ids, now)
	return s.redriven(ctx, res, err, now)
}

// redriven tells the scheduler of the endpoints of a redrive's deliveries
// and returns how many moved.
func (s *Service) redriven(ctx context.Context, res store.RedriveResult, err error, now time.Time) (int, error) {
	if err != nil {
		return 0, err
	}
	for _, ep := range res.Endpoints {
		if ep != "" { // a pull subscription's: queued, not pushed
			s.released(ctx, ep, now)
		}
	}
	return res.Count, nil
}

// released tells the scheduler; the change is committed whatever happens
// here (the loader finds the deliveries on its next scan), so a failure to
// open the circuit at once is logged.
func (s *Service) released(ctx context.Context, endpointID string, at time.Time) {
	if err := s.Scheduler.Released(ctx, endpointID, at); err != nil && !errors.Is(err, context.Canceled) {
		s.Logger.Warn("opening an endpoint for a probe after an operator's release", "endpoint_id", endpointID, "err", err)
	}
}
