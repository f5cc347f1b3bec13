package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/store"
)

// ErrNoSubscription: PublishTo's subscription does not exist, or belongs
// to another account; nothing was stored.
var ErrNoSubscription = errors.New("no such subscription")

// Targeted is what PublishTo did: the event stored and its one delivery.
type Targeted struct {
	Result
	// DeliveryID is the delivery made for the subscription.
	DeliveryID string
	// Queued: the delivery went to the subscription's queue for its
	// consumers (a pull subscription, or a push subscription deactivated
	// or awaiting its endpoint's validation) rather than to the push path.
	Queued bool
}

// PublishTo publishes ev in the account accountID ("": account.DefaultID)
// with exactly one delivery, for the subscription subscriptionID, whatever
// its event types and filters say (nothing is matched, and no other
// subscription gets the event, even one that would match it). From there
// the delivery is like any other: committed with its event in the same
// group commit as Publish's, handed to the scheduler, pushed signed,
// retried by the subscription's policy and logged with its attempts; or
// queued, when the subscription queues (catalog.Entry.Queues). A
// subscription not in the catalog (after a sync, for one made on another
// node since), or of another account, is ErrNoSubscription; so is one
// deleted while the event is committed (the store's guard, as in Publish).
// ev is stored as given: a duplicate of an event the account published
// before makes no delivery (Targeted.Duplicate, DeliveryID ""), so callers
// give it a fresh id.
func (in *Publisher) PublishTo(ctx context.Context, accountID, subscriptionID string, ev event.Event) (Targeted, error) {
	now := in.Clock.Now()
	accountID = account.OrDefault(accountID)
	payload, err := ev.Marshal()
	if err != nil {
		return Targeted{}, err
	}
	news := []store.NewEvent{{
		AccountID: accountID, ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject,
		Payload: payload, PublishedAt: now,
	}}
	if in.Catalog.Snapshot().Get(subscriptionID) == nil {
		// Perhaps made since the catalog's last sync (on another node).
		if err := in.Catalog.Sync(ctx); err != nil {
			return Targeted{}, fmt.Errorf("reading subscriptions: %w", err)
		}
	}
	var spans []trace.Span
	if in.Tracer.Enabled() {
		spans = in.startSpans(ctx, []event.Event{ev}, news)
	}
	res, err := in.admit(ctx, news, now, target(in.Scheduler, subscriptionID))
	endSpans(spans, res, err)
	if err != nil {
		return Targeted{}, err
	}
	out := Targeted{Result: res[0]}
	if !out.Duplicate {
		d := news[0].Deliveries[0]
		out.DeliveryID, out.Queued = d.ID, d.Queued
	}
	return out, nil
}

// target is PublishTo's plan: one delivery, for subscription subID of the
// event's account as snap has it, queued when the subscription queues,
// else offered to the scheduler.
func target(sched Scheduler, subID string) plan {
	return func(_ context.Context, news []store.NewEvent, snap *catalog.Snapshot, now time.Time) (*scheduling.Reservation, error) {
		ne := &news[0]
		e := snap.Get(subID)
		if e == nil || e.AccountID != ne.AccountID {
			return nil, ErrNoSubscription
		}
		d := store.NewDelivery{ID: ids.New("dlv_", now), SubscriptionID: e.ID, EndpointID: e.EndpointID, Queued: e.Queues()}
		var eps []string
		if !d.Queued {
			eps = []string{e.EndpointID}
		}
		adm := sched.Reserve(eps, now)
		d.Claimed = !d.Queued && adm.Granted(0)
		ne.Deliveries = []store.NewDelivery{d}
		return adm, nil
	}
}
