// Package admission is the first stage of the delivery path (publish →
// durable commit): it fans accepted events out to the subscriptions that
// match them, commits each event with its deliveries in the store's group
// commit, and hands the fresh deliveries to the scheduling stage without a
// round trip through the store (the fast path).
package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/testsignal"
	"github.com/herald-events/herald/internal/tracing"
)

// Store is what the publish path needs of the store.
type Store interface {
	Publish(ctx context.Context, events []store.NewEvent, opts store.PublishOptions) ([]store.PublishResult, error)
}

// Scheduler takes fresh deliveries straight from the publish path: the
// next stage.
type Scheduler interface {
	Reserve(endpointIDs []string, now time.Time) *scheduling.Reservation
}

// Catalog is the view of subscriptions events are matched against.
type Catalog interface {
	Snapshot() *catalog.Snapshot
	Sync(ctx context.Context) error
}

// Publisher publishes events. It is safe for concurrent use.
type Publisher struct {
	Store     Store
	Catalog   Catalog
	Scheduler Scheduler
	Clock     clock.Clock
	// MaxFanout bounds the deliveries one Publish call may create, its
	// events' together (0: no bound). A call whose events match more
	// subscriptions than that is refused with a *FanoutError before
	// anything is stored, and matching stops at the first event that
	// passes the bound, so the refusal costs at most that many deliveries
	// in memory.
	MaxFanout int
	// Tracer, when tracing is on (nil: off), starts a publish span per
	// event (tracing.Tracer.StartPublish), whose context is stored with
	// the event and carried with its held deliveries for their attempts.
	Tracer *tracing.Tracer
	// MaxMatchWork bounds the filter tests matching one Publish call's
	// events may cost, all its events (and every time they are matched)
	// together (0: no bound; the unit is in internal/filter's package
	// comment, "Cost"). Past it, matching stops and Publish returns a
	// *filter.WorkError before anything is stored.
	MaxMatchWork int
	// Gate, when set, takes turns among the publishes whose matching is
	// heavy (past filter.HeavyAfter tests), so that it never takes every
	// core (nil: heavy matching runs unbounded).
	Gate *filter.Gate
	// Schemas, when set, checks every publish's events against the
	// event-type catalog per their account's settings before anything
	// else (eventtype.Checker): its error refuses the publish, and nothing
	// is stored; what it finds in an event it accepts is the event's
	// Result.SchemaErrors.
	Schemas SchemaChecker
	// TestSignals are for tests: MatchStopped emits the filter tests a
	// publish's matching had spent when its pacer stopped it (the budget
	// spent, the client gone, the deadline passed), and why.
	TestSignals struct {
		MatchStopped testsignal.Signal[MatchStop]
	}
}

// MatchStop is what Publisher.TestSignals.MatchStopped emits.
type MatchStop struct {
	Tested int
	Err    error
}

// ErrFanout: a publish would have created more deliveries than
// Publisher.MaxFanout allows; nothing was stored. A *FanoutError says the
// bound.
var ErrFanout = errors.New("the events match too many subscriptions")

// FanoutError is the ErrFanout Publish returns, with the bound it applied.
type FanoutError struct{ Limit int }

func (e *FanoutError) Error() string {
	return fmt.Sprintf("%v: more than %d deliveries", ErrFanout, e.Limit)
}

// Is makes errors.Is(err, ErrFanout) true.
func (e *FanoutError) Is(target error) bool { return target == ErrFanout }

// SchemaChecker checks the events of a publish against the event-type
// catalog (eventtype.Checker).
type SchemaChecker interface {
	Check(ctx context.Context, accountID string, evs []event.Event) ([]eventtype.Checked, error)
}

// Result is what happened to one published event.
type Result struct {
	ID         string `json:"id"`
	Source     string `json:"source"`
	Duplicate  bool   `json:"duplicate"`
	Deliveries int    `json:"deliveries"`
	// SchemaErrors are the ways the event breaks its type's schema, when
	// its account's schema_validation is warn (none: omitted).
	SchemaErrors []eventtype.Violation `json:"schema_errors,omitempty"`
}

// maxMatchTries bounds how often one publish is matched again because the
// subscriptions changed under it. The second try cannot be refused for a
// newer catalog, only for a subscription it matched being deleted since
// (each such retry drops one), so in practice two tries suffice.
const maxMatchTries = 5

// Publish durably stores events and their deliveries and returns when they
// are committed. Events are matched against the subscriptions as of a
// catalog version, and the store refuses the commit when a subscription was
// created, changed or deleted since (on any node): then the catalog catches
// up and the events are matched again. So a publish that starts after a
// subscription change was answered, anywhere, is matched against it, and
// no delivery is ever written for a subscription already deleted. An event
// that matches nothing is still stored (and deduplicated). Events belong to
// the account accountID ("": account.DefaultID): they match only its subscriptions,
// and a duplicate is an event whose (source, id) the account published
// before; a duplicate makes no deliveries. The matching is paced by one
// filter.Pacer for the call (see fanOut): a *filter.WorkError past
// MaxMatchWork, heavy matching in the Gate's turns, ctx.Err() once ctx
// ends. With Schemas set, the events are first checked against the
// event-type catalog: a refusal (an *eventtype.Refusal) stores nothing.
func (in *Publisher) Publish(ctx context.Context, accountID string, evs []event.Event) ([]Result, error) {
	accountID = account.OrDefault(accountID)
	if in.Schemas == nil {
		return in.publish(ctx, accountID, evs, nil)
	}
	checked, err := in.Schemas.Check(ctx, accountID, evs)
	if err != nil {
		return nil, err
	}
	res, err := in.publish(ctx, accountID, evs, checked)
	for i := range checked {
		if err == nil {
			res[i].SchemaErrors = checked[i].Violations
		}
	}
	return res, err
}

// publish is Publish once the events were checked: what the check found
// in an event (checked, in the events' places; nil when nothing) is
// stored with it (eventtype.StoredErrors).
func (in *Publisher) publish(ctx context.Context, accountID string, evs []event.Event, checked []eventtype.Checked) ([]Result, error) {
	now := in.Clock.Now()
	news := make([]store.NewEvent, len(evs))
	for i, ev := range evs {
		payload, err := ev.Marshal()
		if err != nil {
			return nil, err
		}
		news[i] = store.NewEvent{
			AccountID: accountID, ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject,
			Payload: payload, PublishedAt: now, PartitionKey: ev.PartitionKey(),
		}
		if checked != nil {
			news[i].SchemaErrors = eventtype.StoredErrors(checked[i].Violations)
		}
	}
	p := filter.NewPacer(ctx, in.MaxMatchWork, in.Gate)
	deliver := func(ctx context.Context, news []store.NewEvent, snap *catalog.Snapshot, now time.Time) (*scheduling.Reservation, error) {
		return in.fanOut(ctx, p, news, snap, now)
	}
	if !in.Tracer.Enabled() {
		return in.admit(ctx, news, now, deliver)
	}
	spans := in.startSpans(ctx, evs, news)
	res, err := in.admit(ctx, news, now, deliver)
	endSpans(spans, res, err)
	return res, err
}

// plan gives news their deliveries as of snap and reserves the pushed ones
// with the scheduler (fanOut; PublishTo's one delivery).
type plan func(ctx context.Context, news []store.NewEvent, snap *catalog.Snapshot, now time.Time) (*scheduling.Reservation, error)

// admit commits news with the deliveries deliver gives them, under
// Publish's guard: when the store refuses the commit because the
// subscriptions changed since snap, the catalog catches up and deliver
// runs again (at most maxMatchTries times).
func (in *Publisher) admit(ctx context.Context, news []store.NewEvent, now time.Time, deliver plan) ([]Result, error) {
	var opts store.PublishOptions
	for try := 1; ; try++ {
		snap := in.Catalog.Snapshot()
		if snap.Version == 0 { // never loaded (the store was down at start)
			if err := in.Catalog.Sync(ctx); err != nil {
				return nil, fmt.Errorf("reading subscriptions: %w", err)
			}
			snap = in.Catalog.Snapshot()
		}
		if try == 1 {
			opts.CatalogVersion = snap.Version
		} else {
			// The catalog caught up with the version the refusal named,
			// which postdates this call's start: what it now says is
			// current enough. Only a deletion since must still refuse.
			opts.CatalogVersion, opts.RequireSubscriptions = 0, true
		}
		adm, err := deliver(ctx, news, snap, now)
		if err != nil {
			return nil, err // refused, or the client has gone: nothing was admitted or stored
		}
		opts.Lease = adm.Lease()
		res, err := in.Store.Publish(ctx, news, opts)
		if errors.Is(err, store.ErrStaleCatalog) && try < maxMatchTries {
			adm.Abort()
			if err := in.Catalog.Sync(ctx); err != nil {
				return nil, fmt.Errorf("reading subscription changes: %w", err)
			}
			continue
		}
		if err != nil {
			adm.Abort()
			return nil, err
		}
		return in.commit(adm, news, res, now), nil
	}
}

// fanOut gives each event one new delivery per matching subscription of
// snap, and asks the scheduler which of the pushed ones it takes from
// memory. A delivery for a subscription that queues (pull, or deactivated)
// is written queued and never held. More than MaxFanout deliveries in all:
// a *FanoutError, and nothing is admitted. Matching is paced by p (the
// request's, for every time it is matched: see Publish): it stops within
// filter.CheckEvery filter tests once they pass MaxMatchWork (a
// *filter.WorkError) or once ctx is done (the client has gone, the
// request's deadline passed: ctx.Err()), before anything is admitted.
func (in *Publisher) fanOut(ctx context.Context, p *filter.Pacer, news []store.NewEvent, snap *catalog.Snapshot, now time.Time) (*scheduling.Reservation, error) {
	defer p.EndTurn() // no turn of the Gate is held past the matching
	var eps []string
	total := 0
	dlvID := ids.Sequence("dlv_", now) // in the order made: see ids.Sequence
	for i := range news {
		ne := &news[i]
		ne.Deliveries = ne.Deliveries[:0]
		// Read by advanced filters only, and then parsed once for all.
		fev := filter.NewEvent(ne.Payload)
		fev.PaceBy(p)
		subs, err := snap.Match(ctx, ne.AccountID, ne.Type, ne.Subject, fev)
		if err != nil {
			in.TestSignals.MatchStopped.Signal(MatchStop{Tested: p.Tested(), Err: err})
			return nil, err
		}
		if total += len(subs); in.MaxFanout > 0 && total > in.MaxFanout {
			return nil, &FanoutError{Limit: in.MaxFanout}
		}
		for _, sub := range subs {
			d := store.NewDelivery{ID: dlvID(), SubscriptionID: sub.ID, EndpointID: sub.EndpointID, Queued: sub.Queues(),
				OrderingKey: sub.OrderingKeyOf(ne.PartitionKey)}
			ne.Deliveries = append(ne.Deliveries, d)
			if fastPath(&d) {
				eps = append(eps, sub.EndpointID)
			}
		}
	}
	adm := in.Scheduler.Reserve(eps, now)
	k := 0
	for i := range news {
		for j := range news[i].Deliveries {
			if d := &news[i].Deliveries[j]; fastPath(d) {
				d.Claimed = adm.Granted(k)
				k++
			}
		}
	}
	return adm, nil
}

// fastPath says whether d may be held from memory at publish: a pushed
// delivery without an ordering key. A keyed one goes through the loader,
// whose claim takes it only as its key's head (docs/ordering.md): whether
// it is cannot be known before the publish commits.
func fastPath(d *store.NewDelivery) bool {
	return !d.Queued && d.OrderingKey == ""
}

// commit hands the committed deliveries to the scheduler and builds the
// answer.
func (in *Publisher) commit(adm *scheduling.Reservation, news []store.NewEvent, res []store.PublishResult, now time.Time) []Result {
	out := make([]Result, len(news))
	n := 0
	for i := range news {
		n += len(news[i].Deliveries)
	}
	held := make([]store.Claimed, 0, n) // sized once: a Claimed is large
	var unheld []string
	for i, ne := range news {
		out[i] = Result{ID: ne.ID, Source: ne.Source, Duplicate: res[i].Duplicate}
		if res[i].Duplicate {
			continue
		}
		out[i].Deliveries = len(ne.Deliveries)
		for _, d := range ne.Deliveries {
			if d.Queued {
				continue // for consumers: the store announces it (OnQueued)
			}
			if !d.Claimed {
				unheld = append(unheld, d.EndpointID) // over the fast path's bound: the loader picks it up
				continue
			}
			held = append(held, store.Claimed{
				Delivery: delivery.Delivery{
					ID: d.ID, AccountID: ne.AccountID, SubscriptionID: d.SubscriptionID, EndpointID: d.EndpointID,
					EventSeq: res[i].Seq, EventID: ne.ID, EventSource: ne.Source,
					Status: delivery.StatusPending, RoundStart: now, NextAttemptAt: now, CreatedAt: now,
				},
				Payload: ne.Payload, TraceContext: ne.TraceContext,
			})
		}
	}
	adm.Commit(held, unheld, now)
	return out
}
