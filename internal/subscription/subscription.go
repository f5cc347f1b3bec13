// Package subscription holds Herald's subscriptions: what a subscriber
// wants delivered and how (Subscription), and the rules a create or update
// request must follow (Input).
package subscription

import (
	"encoding/json"
	"time"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/signing"
)

// Subscription delivery modes, failure policies and states.
const (
	// ModePush (the default, also ""): deliveries are POSTed to the URL.
	ModePush = "push"
	// ModePull: the subscription has no URL and pushes nothing; its
	// deliveries are written queued and consumers receive them.
	ModePull = "pull"

	// FailureRetry (the default, also ""): a failed push is retried on the
	// retry policy.
	FailureRetry = "retry"
	// FailureQueue: a failed push is not retried; the delivery is queued
	// and the subscription deactivated.
	FailureQueue = "queue"

	// StateActive subscriptions push (or, pull, queue) what they match.
	StateActive = "active"
	// StateDeactivated push subscriptions push nothing: every delivery
	// for them is queued until they are reactivated.
	StateDeactivated = "deactivated"
	// StateAwaitingValidation push subscriptions push nothing until their
	// endpoint passes its validation handshake; their deliveries wait,
	// pending.
	StateAwaitingValidation = "awaiting_validation"
)

// Why a subscription's state changed (Subscription.StateReason).
const (
	// ReasonDeactivatedByHand: POST /v1/subscriptions/{id}/deactivate.
	ReasonDeactivatedByHand = "deactivated by hand"
	// ReasonReactivatedByHand: POST /v1/subscriptions/{id}/reactivate.
	ReasonReactivatedByHand = "reactivated by hand"
	// ReasonValidated: its endpoint passed the validation handshake.
	ReasonValidated = "its endpoint passed the validation handshake"
	// ReasonPushFailed: a push failed under failure policy queue.
	ReasonPushFailed = "a push failed (failure_policy queue)"
	// ReasonRetriesRanOut: a push's retries ran out under a retry policy
	// that ends with then: queue (the sap preset's does).
	ReasonRetriesRanOut = "a push failed its last retry (retry_policy then: queue)"
)

// Validation handshakes an endpoint may be made to pass (internal/handshake
// carries them out).
const (
	ValidationNone        = "none"
	ValidationEventGrid   = "eventgrid"
	ValidationCloudEvents = "cloudevents"
)

// Subscription is a subscriber's endpoint and what it wants delivered.
type Subscription struct {
	ID        string
	AccountID string // "" on write: account.DefaultID
	Name      string
	URL       string
	// EndpointID is the endpoint of URL in the account
	// (store.EndpointStore.EndpointID), "" for a pull subscription. The
	// store sets it on every write (what the caller set is ignored) and
	// returns it on reads.
	EndpointID        string
	EventTypes        []string
	SubjectBeginsWith string
	SubjectEndsWith   string
	// RetryPolicy is the user's retry.Spec as JSON, kept as written.
	RetryPolicy []byte
	Timeout     time.Duration
	Headers     map[string]string
	// SecretHeaders are sent like Headers; the API shows only their names.
	SecretHeaders map[string]string
	// Signing holds the keys pushes are signed with (internal/signing);
	// the API never shows it.
	Signing    signing.Keyring
	DeadLetter bool
	// State is StateActive, StateDeactivated or StateAwaitingValidation.
	State string
	// StateReason is why the subscription is in State (a Reason…
	// constant): the reason of its last change of state, "" when it never
	// changed. Read only: the store writes it with the state.
	StateReason string
	// DeliveryMode is ModePush ("" on write) or ModePull; a pull
	// subscription has no URL and no endpoint (EndpointID "").
	DeliveryMode string
	// FailurePolicy is FailureRetry ("" on write) or FailureQueue.
	FailurePolicy string
	// Delivery is how a push subscription's requests are made: schema,
	// batches, endpoint validation, dead-letter destination.
	Delivery DeliveryOptions
	// DeadLetterEndpointID is the endpoint of Delivery.DeadLetterURL in
	// the account, "" without one; set by the store as EndpointID is.
	DeadLetterEndpointID string
	// Filters are the content filters beside EventTypes and the subject's
	// prefix and suffix.
	Filters   FilterOptions
	CreatedAt time.Time
	UpdatedAt time.Time
	// Version is the catalog version its last write set (read only: the
	// store assigns it).
	Version int64
}

// DeliveryOptions are how a push subscription's requests are made. The
// zero value is Herald's default: one CloudEvent a request in structured
// mode, no validation handshake, no dead-letter destination.
type DeliveryOptions struct {
	// Schema is the body's format (event.Schema*; "": cloudevents).
	Schema string `json:"schema,omitempty"`
	// MaxEventsPerBatch is 1..5000 (0 means 1: no batches).
	MaxEventsPerBatch int `json:"max_events_per_batch,omitempty"`
	// PreferredBatchSizeKB is 1..1024 (0 means 64).
	PreferredBatchSizeKB int `json:"preferred_batch_size_kb,omitempty"`
	// Validation is the endpoint's handshake: "" (none), "eventgrid" or
	// "cloudevents".
	Validation string `json:"validation,omitempty"`
	// ValidationToken is the secret of the validation URL an Event Grid
	// endpoint may GET instead of answering the handshake.
	ValidationToken string `json:"validation_token,omitempty"`
	// ValidationError says why the last handshake failed ("" when it did
	// not).
	ValidationError string `json:"validation_error,omitempty"`
	// DeadLetterURL, when set, receives every dead-lettered delivery (of a
	// push subscription): the store keeps its endpoint, like the URL's, in
	// the subscription's account (Subscription.DeadLetterEndpointID),
	// while a subscription names it.
	DeadLetterURL string `json:"dead_letter_url,omitempty"`
	// Ordering is "" (OrderingNone: deliveries go in any order) or
	// OrderingKey: the deliveries of events with the same partitionkey
	// go one at a time, in publish order (docs/ordering.md).
	Ordering string `json:"ordering,omitempty"`
	// DynamicHeaders are headers whose values each push takes from its
	// event: header name → key in the advanced filters' key syntax
	// (docs/subscriptions.md, "Dynamic headers"; see DynamicHeader).
	DynamicHeaders map[string]string `json:"dynamic_headers,omitempty"`
	// Auth, when set, authenticates the pushes (Auth; nil: none).
	Auth *Auth `json:"auth,omitempty"`
	// Transform is the CEL expression of transform.cel ("" for none):
	// what it gives becomes the delivered data (internal/expr; kept as
	// written, checked to compile at create and update).
	Transform string `json:"transform,omitempty"`
	// Destination, when set, is the broker the pushes are published to
	// (internal/broker; the subscription's URL is then its endpoint key,
	// EndpointKey); nil: the URL, a webhook. Its URL and SASL password are
	// secrets (MaskedDestination).
	Destination *broker.Destination `json:"destination,omitempty"`
}

// The orderings of a push subscription's deliveries.
const (
	OrderingNone = "none"
	OrderingKey  = "key"
)

// OrderingKeyOf is the ordering key of a delivery of an event with
// partitionKey ("" for none) to sub: the partition key when sub orders by
// key, else "" (unordered).
func (sub *Subscription) OrderingKeyOf(partitionKey string) string {
	if sub.Delivery.Ordering == OrderingKey {
		return partitionKey
	}
	return ""
}

// FilterOptions are a subscription's content filters, kept as written (the
// filter package compiles them; the store only keeps them).
type FilterOptions struct {
	// Advanced is the advanced_filters list as JSON (nil: none).
	Advanced json.RawMessage `json:"advanced,omitempty"`
	// SubjectCaseSensitive makes subject_begins_with and subject_ends_with
	// compare letter case (default: they ignore it).
	SubjectCaseSensitive bool `json:"subject_case_sensitive,omitempty"`
	// Expression is filter_expression, a CEL boolean ANDed with the other
	// filters ("" for none; internal/expr; kept as written, checked to
	// compile at create and update).
	Expression string `json:"expression,omitempty"`
}
