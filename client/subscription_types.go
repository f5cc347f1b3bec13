package client

import "time"

// Subscription is where events go and how they are retried (schema
// Subscription; docs/subscriptions.md describes every field).
type Subscription struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// Destination is where pushes go (nil for a pull subscription).
	Destination          *Destination     `json:"destination"`
	EventTypes           []string         `json:"event_types"`
	SubjectBeginsWith    string           `json:"subject_begins_with"`
	SubjectEndsWith      string           `json:"subject_ends_with"`
	SubjectCaseSensitive bool             `json:"subject_case_sensitive"`
	AdvancedFilters      []AdvancedFilter `json:"advanced_filters"`
	// FilterExpression is the CEL filter expression (nil: none).
	FilterExpression *string `json:"filter_expression"`
	// Transform is the CEL transform of the delivered data (nil: none).
	Transform   *Transform        `json:"transform"`
	RetryPolicy RetryPolicy       `json:"retry_policy"`
	Timeout     Duration          `json:"timeout"`
	Headers     map[string]string `json:"headers"`
	// SecretHeaders' values are shown as "****".
	SecretHeaders     map[string]string `json:"secret_headers"`
	DynamicHeaders    map[string]string `json:"dynamic_headers"`
	DeadLetter        bool              `json:"dead_letter"`
	DeliveryMode      string            `json:"delivery_mode"`
	DeliverySchema    string            `json:"delivery_schema"`
	MaxEventsPerBatch int               `json:"max_events_per_batch"`
	PreferredBatchKB  int               `json:"preferred_batch_size_kb"`
	Validation        string            `json:"validation"`
	ValidationError   *string           `json:"validation_error"`
	DeadLetterURL     *string           `json:"dead_letter_url"`
	FailurePolicy     string            `json:"failure_policy"`
	Ordering          string            `json:"ordering"`
	// Auth's secrets are shown as "****".
	Auth *EndpointAuth `json:"auth"`
	// State is "active", "deactivated" or "awaiting_validation".
	State       string    `json:"state"`
	StateReason *string   `json:"state_reason"`
	EndpointID  string    `json:"endpoint_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// AdvancedFilter is one of a subscription's advanced filters (schema
// AdvancedFilter): Value for NumberLessThan…/BoolEquals, Values for the
// *In and *Range operators.
type AdvancedFilter struct {
	OperatorType string `json:"operator_type"`
	Key          string `json:"key"`
	Value        any    `json:"value,omitempty"`
	Values       []any  `json:"values,omitempty"`
}

// RetryPolicy is a subscription's retry policy (schema RetryPolicy;
// docs/delivery.md#retry-presets). In a request, zero fields take the
// preset's values.
type RetryPolicy struct {
	Preset       string     `json:"preset,omitempty"`
	Delays       []Duration `json:"delays,omitempty"`
	Backoff      *Backoff   `json:"backoff,omitempty"`
	MaxAttempts  *int       `json:"max_attempts,omitempty"`
	TTL          *Duration  `json:"ttl,omitempty"`
	Jitter       *float64   `json:"jitter,omitempty"`
	SuccessCodes []int      `json:"success_codes,omitempty"`
	NoRetryCodes []int      `json:"no_retry_codes,omitempty"`
	// Then is what follows the last attempt: "dead_letter" or "queue".
	Then string `json:"then,omitempty"`
}

// Backoff is an exponential retry schedule (schema Backoff).
type Backoff struct {
	Initial    *Duration `json:"initial,omitempty"`
	Multiplier float64   `json:"multiplier,omitempty"`
	Max        *Duration `json:"max,omitempty"`
}

// Signing chooses how pushes are signed (schema Signing): Algorithm
// "hmac-sha256" (default) or "ed25519", and for hmac-sha256 the whsec_
// Secret (default: a random one).
type Signing struct {
	Algorithm string `json:"algorithm,omitempty"`
	Secret    string `json:"secret,omitempty"`
}

// EndpointAuth is how pushes authenticate to the endpoint (schema
// EndpointAuth; docs/endpoint-auth.md): Type "oauth2_client_credentials"
// with the token fields, or "mtls" with Certificate and PrivateKey (PEM).
type EndpointAuth struct {
	Type         string   `json:"type"`
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
	Certificate  string   `json:"certificate,omitempty"`
	PrivateKey   string   `json:"private_key,omitempty"`
}

// Transform is a subscription's CEL transform (schema Transform): the
// result of CEL, at most 4,096 bytes, on event (the attributes) and data,
// becomes the delivered data; null skips the event.
type Transform struct {
	CEL string `json:"cel"`
}

// SubscriptionInput is the body of Subscriptions.Create (schema
// SubscriptionCreate). Name is required, and URL for a push subscription;
// zero fields take their defaults.
type SubscriptionInput struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
	// Destination is a webhook or a broker (URL is the webhook's
	// shorthand; give one of them).
	Destination          *Destination     `json:"destination,omitempty"`
	EventTypes           []string         `json:"event_types,omitempty"`
	SubjectBeginsWith    string           `json:"subject_begins_with,omitempty"`
	SubjectEndsWith      string           `json:"subject_ends_with,omitempty"`
	SubjectCaseSensitive *bool            `json:"subject_case_sensitive,omitempty"`
	AdvancedFilters      []AdvancedFilter `json:"advanced_filters,omitempty"`
	// FilterExpression is a CEL boolean ANDed with the other filters.
	FilterExpression string `json:"filter_expression,omitempty"`
	// Transform reshapes the delivered data (nil: none).
	Transform      *Transform        `json:"transform,omitempty"`
	RetryPolicy    *RetryPolicy      `json:"retry_policy,omitempty"`
	Timeout        Duration          `json:"timeout,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	SecretHeaders  map[string]string `json:"secret_headers,omitempty"`
	DynamicHeaders map[string]string `json:"dynamic_headers,omitempty"`
	Signing        *Signing          `json:"signing,omitempty"`
	DeadLetter     *bool             `json:"dead_letter,omitempty"`
	// DeliveryMode is "push" (default) or "pull".
	DeliveryMode      string        `json:"delivery_mode,omitempty"`
	FailurePolicy     string        `json:"failure_policy,omitempty"`
	DeliverySchema    string        `json:"delivery_schema,omitempty"`
	MaxEventsPerBatch int           `json:"max_events_per_batch,omitempty"`
	PreferredBatchKB  int           `json:"preferred_batch_size_kb,omitempty"`
	Validation        string        `json:"validation,omitempty"`
	DeadLetterURL     string        `json:"dead_letter_url,omitempty"`
	Ordering          string        `json:"ordering,omitempty"`
	Auth              *EndpointAuth `json:"auth,omitempty"`
}

// SubscriptionUpdate is the body of Subscriptions.Update (schema
// SubscriptionUpdate): nil fields keep their value; a pointer to an empty
// value sets it empty.
type SubscriptionUpdate struct {
	Name                 *string           `json:"name,omitempty"`
	URL                  *string           `json:"url,omitempty"`
	Destination          *Destination      `json:"destination,omitempty"`
	EventTypes           *[]string         `json:"event_types,omitempty"`
	SubjectBeginsWith    *string           `json:"subject_begins_with,omitempty"`
	SubjectEndsWith      *string           `json:"subject_ends_with,omitempty"`
	SubjectCaseSensitive *bool             `json:"subject_case_sensitive,omitempty"`
	AdvancedFilters      *[]AdvancedFilter `json:"advanced_filters,omitempty"`
	// FilterExpression: "" removes it.
	FilterExpression *string `json:"filter_expression,omitempty"`
	// Transform: a CEL of "" removes it.
	Transform         *Transform         `json:"transform,omitempty"`
	RetryPolicy       *RetryPolicy       `json:"retry_policy,omitempty"`
	Timeout           *Duration          `json:"timeout,omitempty"`
	Headers           *map[string]string `json:"headers,omitempty"`
	SecretHeaders     *map[string]string `json:"secret_headers,omitempty"`
	DynamicHeaders    *map[string]string `json:"dynamic_headers,omitempty"`
	DeadLetter        *bool              `json:"dead_letter,omitempty"`
	FailurePolicy     *string            `json:"failure_policy,omitempty"`
	DeliverySchema    *string            `json:"delivery_schema,omitempty"`
	MaxEventsPerBatch *int               `json:"max_events_per_batch,omitempty"`
	PreferredBatchKB  *int               `json:"preferred_batch_size_kb,omitempty"`
	DeadLetterURL     *string            `json:"dead_letter_url,omitempty"`
	Ordering          *string            `json:"ordering,omitempty"`
	Auth              *EndpointAuth      `json:"auth,omitempty"`
}

// SubscriptionListParams are the query of Subscriptions.List: Name finds
// the one subscription of that name (a page of it, or an empty one).
type SubscriptionListParams struct {
	ListParams
	Name string
}

// SubscriptionSecret is a subscription's signing key (schema
// SubscriptionSecret): Secret (whsec_…) for hmac-sha256, PublicKey
// (whpk_…) for ed25519, and the earlier keys still signing.
type SubscriptionSecret struct {
	Algorithm string           `json:"algorithm"`
	Secret    string           `json:"secret,omitempty"`
	PublicKey string           `json:"public_key,omitempty"`
	Previous  []PreviousSecret `json:"previous"`
}

// PreviousSecret is an earlier key still signing until ExpiresAt.
type PreviousSecret struct {
	Secret    string    `json:"secret,omitempty"`
	PublicKey string    `json:"public_key,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// RotateSecretParams is the body of Subscriptions.RotateSecret (schema
// SecretRotate): how long the current key keeps signing (Grace; nil: the
// server's default) and, for hmac-sha256, the new Secret ("" for a random
// one).
type RotateSecretParams struct {
	Grace  *Duration `json:"grace,omitempty"`
	Secret string    `json:"secret,omitempty"`
}

// ReactivatedSubscription is Subscriptions.Reactivate's answer (schema
// ReactivatedSubscription): the subscription and how many queued
// deliveries went back to pending.
type ReactivatedSubscription struct {
	Subscription
	Requeued int `json:"requeued"`
}

// RecoverParams is the body of Subscriptions.Recover (schema
// RecoverRequest; docs/recover.md): deliveries made at or after Since and
// before Until (nil: now) whose status is one of Statuses (nil:
// dead_lettered and dropped).
type RecoverParams struct {
	Since    time.Time  `json:"since"`
	Until    *time.Time `json:"until,omitempty"`
	Statuses []string   `json:"statuses,omitempty"`
}

// Job is a background job and its progress (schema Job).
type Job struct {
	ID             string     `json:"id"`
	Kind           string     `json:"kind"`
	State          string     `json:"state"` // "running", "done" or "failed"
	SubscriptionID string     `json:"subscription_id"`
	Since          time.Time  `json:"since"`
	Until          *time.Time `json:"until"`
	Statuses       []string   `json:"statuses"`
	Total          int        `json:"total"`
	Done           int        `json:"done"`
	Errors         int        `json:"errors"`
	Error          string     `json:"error,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	FinishedAt     *time.Time `json:"finished_at"`
}

// TestEventParams is the body of Subscriptions.Test (schema
// TestEventRequest): the test event's Type (default herald.test) and Data
// (a JSON object; nil for the default).
type TestEventParams struct {
	Type string         `json:"type,omitempty"`
	Data map[string]any `json:"data,omitempty"`
}

// TestEventResult is Subscriptions.Test's answer (schema
// TestEventResponse).
type TestEventResult struct {
	EventID    string `json:"event_id"`
	DeliveryID string `json:"delivery_id"`
	Queued     bool   `json:"queued"`
}

// FilterTestResult says whether an event matches a subscription's filters
// (schema FilterTestResult), and if not, why and which advanced filter
// (its index) failed.
type FilterTestResult struct {
	Matches      bool   `json:"matches"`
	Reason       string `json:"reason,omitempty"`
	FailedFilter *int   `json:"failed_filter"`
	// Delivered is what a push of the event would carry after the
	// subscription's transform (nil when it does not match).
	Delivered *DeliveredPreview `json:"delivered"`
}

// DeliveredPreview is what a push of an event would carry (schema
// DeliveredPreview): the exact body, its content type and the delivery
// schema's headers; Filtered when the transform gives null;
// TransformError (CEL's message) when it fails.
type DeliveredPreview struct {
	Filtered       bool              `json:"filtered"`
	TransformError *string           `json:"transform_error"`
	ContentType    string            `json:"content_type,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Body           *string           `json:"body,omitempty"`
	BodyBase64     *string           `json:"body_base64,omitempty"`
}

// FilterTestParams is the body of POST /v1/filter-test: an event and a
// subscription not yet saved, as a create gives it.
type FilterTestParams struct {
	Event        Event             `json:"event"`
	Subscription SubscriptionInput `json:"subscription"`
}

// Destination is where a push subscription's deliveries go (schema
// Destination; docs/destinations.md): Type "webhook" (URL), "nats" (URL,
// Subject, JetStream), "amqp" (URL, Exchange, RoutingKey), "mqtt" (URL,
// Topic, QoS) or "kafka" (Brokers, Topic, TLS, SASL), with Mode "binary"
// (the default) or "structured" for a broker. In a request, set only the
// type's fields; JetStream and QoS are pointers so that their defaults
// (true, 1) can be told from false and 0. A password in URL is shown as
// "xxxxx", SASL's as "****".
type Destination struct {
	Type       string   `json:"type"`
	URL        string   `json:"url,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	JetStream  *bool    `json:"jetstream,omitempty"`
	Exchange   *string  `json:"exchange,omitempty"`
	RoutingKey *string  `json:"routing_key,omitempty"`
	Topic      string   `json:"topic,omitempty"`
	QoS        *int     `json:"qos,omitempty"`
	Brokers    []string `json:"brokers,omitempty"`
	TLS        *bool    `json:"tls,omitempty"`
	SASL       *SASL    `json:"sasl,omitempty"`
	Mode       string   `json:"mode,omitempty"`
}

// SASL is a Kafka destination's SASL authentication: Mechanism PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512.
type SASL struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}
