package client

import (
	"context"
	"net/url"
	"time"
)

// Delivery is one event's delivery to one subscription (schema Delivery;
// docs/delivery.md#delivery-states).
type Delivery struct {
	ID             string  `json:"id"`
	SubscriptionID string  `json:"subscription_id"`
	EndpointID     string  `json:"endpoint_id"`
	EventID        string  `json:"event_id"`
	EventSource    string  `json:"event_source"`
	OrderingKey    *string `json:"ordering_key"`
	// Status is "pending", "delivered", "dead_lettered", "dropped" or
	// "queued".
	Status           string     `json:"status"`
	Attempts         int        `json:"attempts"`
	NextAttemptAt    *time.Time `json:"next_attempt_at"`
	HeldBy           *string    `json:"held_by"`
	LastAttemptAt    *time.Time `json:"last_attempt_at"`
	LastStatusCode   *int       `json:"last_status_code"`
	LastOutcome      *string    `json:"last_outcome"`
	DeadLetterReason *string    `json:"dead_letter_reason"`
	CreatedAt        time.Time  `json:"created_at"`
	DeliveredAt      *time.Time `json:"delivered_at"`
}

// QueuedDelivery is a delivery of Deliveries.ListQueued (schema
// QueuedDelivery): a queued delivery with its receive count, lock and
// event.
type QueuedDelivery struct {
	Delivery
	DeliveryCount int        `json:"delivery_count"`
	LockedUntil   *time.Time `json:"locked_until"`
	Event         *Event     `json:"event"`
	// SchemaErrors are its event's, as DeadLetter's.
	SchemaErrors []SchemaViolation `json:"schema_errors,omitempty"`
}

// Attempt is one push of a delivery (schema Attempt).
type Attempt struct {
	Number       int       `json:"number"`
	StartedAt    time.Time `json:"started_at"`
	DurationMS   float64   `json:"duration_ms"`
	StatusCode   *int      `json:"status_code"`
	Outcome      string    `json:"outcome"`
	Error        *string   `json:"error"`
	ResponseBody string    `json:"response_body"`
}

// DeliveryListParams are the query of Deliveries.List; empty fields filter
// nothing.
type DeliveryListParams struct {
	ListParams
	SubscriptionID string
	// Status is "pending", "delivered", "dead_lettered", "dropped" or
	// "queued".
	Status  string
	EventID string
	// URL narrows a list of queued deliveries (Status "queued", or
	// ListQueued) to one delivery URL; the API refuses it otherwise.
	URL         string
	OrderingKey string
}

// values returns the list's query parameters.
func (p DeliveryListParams) values() url.Values {
	q := p.ListParams.values()
	setIf(q, "subscription_id", p.SubscriptionID)
	setIf(q, "status", p.Status)
	setIf(q, "event_id", p.EventID)
	setIf(q, "url", p.URL)
	setIf(q, "ordering_key", p.OrderingKey)
	return q
}

// DeliveriesService calls /v1/deliveries.
type DeliveriesService struct{ c *Client }

// List returns one page of the delivery log, newest first (GET
// /v1/deliveries).
func (s *DeliveriesService) List(ctx context.Context, p DeliveryListParams) (*Page[Delivery], error) {
	return doJSON[Page[Delivery]](ctx, s.c, call{op: opListDeliveries, query: p.values()})
}

// ListQueued returns one page of queued deliveries with their receive
// counts, locks and events (GET /v1/deliveries with status=queued,
// whatever p's Status).
func (s *DeliveriesService) ListQueued(ctx context.Context, p DeliveryListParams) (*Page[QueuedDelivery], error) {
	p.Status = "queued"
	return doJSON[Page[QueuedDelivery]](ctx, s.c, call{op: opListDeliveries, query: p.values()})
}

// Get returns the delivery id (GET /v1/deliveries/{id}).
func (s *DeliveriesService) Get(ctx context.Context, id string) (*Delivery, error) {
	return doJSON[Delivery](ctx, s.c, call{op: opGetDelivery, ids: []string{id}})
}

// Attempts returns one page of the delivery's attempts (GET
// /v1/deliveries/{id}/attempts).
func (s *DeliveriesService) Attempts(ctx context.Context, id string, p ListParams) (*Page[Attempt], error) {
	return doJSON[Page[Attempt]](ctx, s.c, call{op: opListAttempts, ids: []string{id}, query: p.values()})
}

// Redeliver makes the delivery due again with a fresh attempt budget
// (POST /v1/deliveries/{id}/redeliver).
func (s *DeliveriesService) Redeliver(ctx context.Context, id string) (*Delivery, error) {
	return doJSON[Delivery](ctx, s.c, call{op: opRedeliver, ids: []string{id}})
}

// DeadLetter is a delivery whose retry policy gave up (schema DeadLetter),
// with its event.
type DeadLetter struct {
	Delivery
	DeliveryAttempts        int        `json:"delivery_attempts"`
	LastDeliveryOutcome     string     `json:"last_delivery_outcome"`
	PublishTime             time.Time  `json:"publish_time"`
	LastDeliveryAttemptTime *time.Time `json:"last_delivery_attempt_time"`
	Event                   *Event     `json:"event"`
	// SchemaErrors are how the event breaks its type's schema, when it was
	// published while its account's schema_validation was "warn" (at most
	// 10, cut to 4096 bytes; a last one with the keyword "truncated" says
	// how many more there were).
	SchemaErrors []SchemaViolation `json:"schema_errors,omitempty"`
}

// DeadLetterListParams are the query of DeadLetters.List.
type DeadLetterListParams struct {
	ListParams
	SubscriptionID string
}

// RedriveParams is the body of DeadLetters.Redrive (schema
// RedriveRequest): the dead letters of SubscriptionID, or those of IDs, or
// those of IDs within SubscriptionID.
type RedriveParams struct {
	SubscriptionID string   `json:"subscription_id,omitempty"`
	IDs            []string `json:"ids,omitempty"`
}

// RedriveResult is DeadLetters.Redrive's answer (schema RedriveResponse).
type RedriveResult struct {
	Redriven int `json:"redriven"`
}

// DeadLettersService calls /v1/dead-letters.
type DeadLettersService struct{ c *Client }

// List returns one page of dead letters (GET /v1/dead-letters).
func (s *DeadLettersService) List(ctx context.Context, p DeadLetterListParams) (*Page[DeadLetter], error) {
	q := p.ListParams.values()
	setIf(q, "subscription_id", p.SubscriptionID)
	return doJSON[Page[DeadLetter]](ctx, s.c, call{op: opListDeadLetters, query: q})
}

// Redrive makes dead letters pending again (POST /v1/dead-letters/redrive).
func (s *DeadLettersService) Redrive(ctx context.Context, p RedriveParams) (*RedriveResult, error) {
	return doJSON[RedriveResult](ctx, s.c, call{op: opRedrive, body: p})
}
