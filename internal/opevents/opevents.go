// Package opevents publishes Herald's operational events into its own
// pipeline as CloudEvents with source "/herald", so operators subscribe to
// them like to any event type (the notice of dead-lettered events that Event
// Grid users get by subscribing, and the endpoint circuit's transitions):
//
//	herald.endpoint.probation   herald.endpoint.disabled
//	herald.endpoint.frozen      herald.endpoint.enabled
//	herald.delivery.dead_lettered
//	herald.subscription.deactivated herald.subscription.reactivated
//
// A subscription receives them only when it lists their types: an empty
// event_types ("everything") does not include herald.* types. Each event is
// published in the account it is about (the endpoint's, the delivery's), so
// an account's subscriptions see only their own account's.
//
// Events are queued (bounded: QueueSize) and published in batches by the
// Publisher's goroutine (between Start and Stop: a startstop.Service), so
// the delivery path never waits for them. When the queue is full
// an event is dropped, logged and counted. No dead-letter event is made for
// a delivery of an operational event, so a failing operator endpoint cannot
// feed itself.
package opevents

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Source is the CloudEvents source of every operational event: a name
// reserved for them, which clients cannot publish (event.ReservedSource, as
// their types' prefix herald. is event.ReservedTypePrefix).
const Source = event.ReservedSource

// Event types.
const (
	TypeProbation    = "herald.endpoint.probation"
	TypeDisabled     = "herald.endpoint.disabled"
	TypeFrozen       = "herald.endpoint.frozen"
	TypeEnabled      = "herald.endpoint.enabled"
	TypeDeadLettered = "herald.delivery.dead_lettered"
	TypeDeactivated  = "herald.subscription.deactivated"
	TypeReactivated  = "herald.subscription.reactivated"
)

// QueueSize bounds the events waiting to be published.
const QueueSize = 10_000

// PublishFunc publishes events durably in an account (the ingest path).
type PublishFunc func(ctx context.Context, accountID string, evs []event.Event) error

// queued is an event waiting to be published, with its account.
type queued struct {
	account string
	ev      event.Event
}

// Publisher turns engine notifications into CloudEvents and publishes them.
type Publisher struct {
	startstop.Base
	publish PublishFunc
	clock   clock.Clock
	log     *slog.Logger
	queue   chan queued
	dropped prometheus.Counter
}

// New returns a publisher; Start must be called to drain it.
func New(publish PublishFunc, clk clock.Clock, log *slog.Logger, reg prometheus.Registerer) *Publisher {
	p := &Publisher{
		publish: publish, clock: clk, log: log,
		queue: make(chan queued, QueueSize),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_operational_events_dropped_total",
			Help: "Operational events dropped because their queue was full.",
		}),
	}
	if reg != nil {
		reg.MustRegister(p.dropped)
	}
	return p
}

// Start publishes queued events, on a goroutine of its own, until Stop (or
// ctx ends); then what is left is published before Stop returns (each
// batch within 10 s).
func (p *Publisher) Start(ctx context.Context) error {
	p.StartGo(ctx, p.run)
	return nil
}

func (p *Publisher) run(ctx context.Context) {
	for {
		select {
		case q := <-p.queue:
			p.flush(q)
		case <-ctx.Done():
			for {
				select {
				case q := <-p.queue:
					p.flush(q)
				default:
					return
				}
			}
		}
	}
}

// flush publishes first and whatever else is queued, up to 100 at a time,
// one publish per account.
func (p *Publisher) flush(first queued) {
	batch := []queued{first}
	for len(batch) < 100 {
		select {
		case q := <-p.queue:
			batch = append(batch, q)
			continue
		default:
		}
		break
	}
	byAccount := map[string][]event.Event{}
	var order []string
	for _, q := range batch {
		if byAccount[q.account] == nil {
			order = append(order, q.account)
		}
		byAccount[q.account] = append(byAccount[q.account], q.ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, acc := range order {
		if err := p.publish(ctx, acc, byAccount[acc]); err != nil {
			p.log.Error("publishing operational events", "account", acc, "count", len(byAccount[acc]), "err", err)
		}
	}
}

func (p *Publisher) enqueue(accountID, typ, subject string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		p.log.Error("encoding operational event", "type", typ, "err", err)
		return
	}
	now := p.clock.Now()
	ev := event.Event{
		SpecVersion: event.SpecVersion, ID: ids.New("evt_", now), Source: Source, Type: typ,
		Subject: subject, Time: now.UTC(), DataContentType: "application/json", Data: raw,
	}
	select {
	case p.queue <- queued{account: account.OrDefault(accountID), ev: ev}:
	default:
		p.dropped.Inc()
		p.log.Warn("operational event queue full; event dropped", "type", typ, "subject", subject)
	}
}

// EndpointData is the data of the herald.endpoint.* events.
type EndpointData struct {
	EndpointID          string    `json:"endpoint_id"`
	URL                 string    `json:"url"`
	State               string    `json:"state"`
	PreviousState       string    `json:"previous_state"`
	Reason              string    `json:"reason"`
	ConsecutiveFailures int64     `json:"consecutive_failures"`
	LastSuccessAt       time.Time `json:"last_success_at,omitzero"`
	LastFailureAt       time.Time `json:"last_failure_at,omitzero"`
	NextProbeAt         time.Time `json:"next_probe_at,omitzero"`
}

// EndpointChanged implements scheduling.Notifier.
func (p *Publisher) EndpointChanged(ep endpoint.Endpoint, tr health.Transition) {
	typ := map[health.State]string{
		health.Probation: TypeProbation, health.Disabled: TypeDisabled,
		health.Frozen: TypeFrozen, health.Enabled: TypeEnabled,
	}[tr.To]
	if typ == "" {
		return
	}
	h := ep.Health
	p.enqueue(ep.AccountID, typ, redact.URL(ep.URL), EndpointData{
		EndpointID: ep.ID, URL: redact.URL(ep.URL), State: string(tr.To), PreviousState: string(tr.From), Reason: tr.Reason,
		ConsecutiveFailures: h.ConsecutiveFailures, LastSuccessAt: h.LastSuccessAt.UTC(), LastFailureAt: h.LastFailureAt.UTC(),
		NextProbeAt: h.NextProbeAt.UTC(),
	})
}

// DeadLetterData is the data of herald.delivery.dead_lettered.
type DeadLetterData struct {
	DeliveryID       string `json:"delivery_id"`
	SubscriptionID   string `json:"subscription_id"`
	SubscriptionName string `json:"subscription_name"`
	EndpointID       string `json:"endpoint_id"`
	URL              string `json:"url"`
	EventID          string `json:"event_id"`
	EventSource      string `json:"event_source"`
	Reason           string `json:"dead_letter_reason"`
	Attempts         int    `json:"delivery_attempts"`
	LastOutcome      string `json:"last_delivery_outcome"`
}

// DeliveryDeadLettered implements recording.Notifier.
func (p *Publisher) DeliveryDeadLettered(c store.Claimed, sub *catalog.Entry, out store.Outcome) {
	if c.EventSource == Source {
		return // never about an operational event itself
	}
	p.enqueue(sub.AccountID, TypeDeadLettered, c.ID, DeadLetterData{
		DeliveryID: c.ID, SubscriptionID: sub.ID, SubscriptionName: sub.Name, EndpointID: c.EndpointID, URL: redact.URL(sub.URL),
		EventID: c.EventID, EventSource: c.EventSource, Reason: out.DeadLetterReason,
		Attempts: out.Attempts, LastOutcome: out.LastOutcome,
	})
}

// SubscriptionData is the data of the herald.subscription.* events.
type SubscriptionData struct {
	SubscriptionID   string `json:"subscription_id"`
	SubscriptionName string `json:"subscription_name"`
	URL              string `json:"url"`
	State            string `json:"state"`
	// Deactivated: why (the subscription's state_reason).
	Reason string `json:"reason,omitempty"`
	// Deactivated by a failed push: the delivery whose failed push
	// deactivated it, and how that push ended.
	DeliveryID  string `json:"delivery_id,omitempty"`
	LastOutcome string `json:"last_delivery_outcome,omitempty"`
	// Reactivated: how many queued deliveries went back to pending.
	Requeued *int `json:"requeued,omitempty"`
}

// SubscriptionDeactivated implements recording.Notifier.
func (p *Publisher) SubscriptionDeactivated(sub *catalog.Entry, c store.Claimed, out store.Outcome) {
	p.enqueue(sub.AccountID, TypeDeactivated, sub.ID, SubscriptionData{
		SubscriptionID: sub.ID, SubscriptionName: sub.Name, URL: redact.URL(sub.URL), State: subscription.StateDeactivated,
		Reason: out.DeactivateReason, DeliveryID: c.ID, LastOutcome: out.LastOutcome,
	})
}

// SubscriptionDeactivatedByHand announces a subscription deactivated
// through the API (control.Notifier).
func (p *Publisher) SubscriptionDeactivatedByHand(sub subscription.Subscription) {
	p.enqueue(sub.AccountID, TypeDeactivated, sub.ID, SubscriptionData{
		SubscriptionID: sub.ID, SubscriptionName: sub.Name, URL: redact.URL(sub.URL), State: subscription.StateDeactivated,
		Reason: sub.StateReason,
	})
}

// SubscriptionReactivated announces a subscription made active again and
// how many queued deliveries it pushes.
func (p *Publisher) SubscriptionReactivated(sub subscription.Subscription, requeued int) {
	p.enqueue(sub.AccountID, TypeReactivated, sub.ID, SubscriptionData{
		SubscriptionID: sub.ID, SubscriptionName: sub.Name, URL: redact.URL(sub.URL), State: subscription.StateActive,
		Requeued: &requeued,
	})
}
