package subscription

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/strictjson"
)

// Input is a create or update request, as the API decodes it
// (strictjson.Decode). Absent (or null) fields are nil: on create they
// take defaults, on update they keep the stored value. RetryPolicy is the
// policy as sent: null resets it to DefaultRetryPolicy.
//
// Its checks return, for a problem: a *strictjson.Error naming the field
// (the API answers 400), a *CombinationError or a *DestinationError (422).
type Input struct {
	Name *string `json:"name"`
	URL  *string `json:"url"`
	// Destination is where a push goes (brokers.go): a webhook (url is
	// its shorthand) or a broker.
	Destination       json.RawMessage      `json:"destination"`
	EventTypes        *[]string            `json:"event_types"`
	SubjectBeginsWith *string              `json:"subject_begins_with"`
	SubjectEndsWith   *string              `json:"subject_ends_with"`
	RetryPolicy       json.RawMessage      `json:"retry_policy"`
	Timeout           *strictjson.Duration `json:"timeout"`
	Headers           *map[string]string   `json:"headers"`
	SecretHeaders     *map[string]string   `json:"secret_headers"`
	// DynamicHeaders replaces the dynamic headers as a whole ({} removes
	// them), as Headers does the headers.
	DynamicHeaders *map[string]string `json:"dynamic_headers"`
	DeadLetter     *bool              `json:"dead_letter"`
	// DeliveryMode is read on create only.
	DeliveryMode   *string `json:"delivery_mode"`
	FailurePolicy  *string `json:"failure_policy"`
	DeliverySchema *string `json:"delivery_schema"`
	// Batches: cloudevents and eventgrid only.
	MaxEventsPerBatch *int `json:"max_events_per_batch"`
	PreferredBatchKB  *int `json:"preferred_batch_size_kb"`
	// Validation is read on create only.
	Validation *string `json:"validation"`
	// Filters: null or [] removes the advanced filters.
	AdvancedFilters      json.RawMessage `json:"advanced_filters"`
	SubjectCaseSensitive *bool           `json:"subject_case_sensitive"`
	// FilterExpression is a CEL boolean (docs/subscriptions.md); ""
	// removes it.
	FilterExpression *string `json:"filter_expression" strictjson:"lines"`
	// Transform is {"cel": "<expression>"}; null removes it.
	Transform json.RawMessage `json:"transform" strictjson:"lines"`
	// DeadLetterURL: "" (or null) removes it.
	DeadLetterURL *string `json:"dead_letter_url"`
	// Ordering is OrderingNone or OrderingKey (docs/ordering.md).
	Ordering *string `json:"ordering"`
	// Auth: null removes it, an object replaces it whole (Auth).
	Auth json.RawMessage `json:"auth"`
	// Signing is read on create only (see SigningInput).
	Signing *SigningInput `json:"signing"`
}

// Creation is what a new subscription takes besides its Input.
type Creation struct {
	ID        string
	AccountID string
	// Now is its CreatedAt and UpdatedAt.
	Now time.Time
	// FailurePolicy is its account's default (account.Settings; "":
	// FailureRetry).
	FailurePolicy string
	// Destinations refuses URLs whose host it does not allow
	// (destination.Guard.Check: this may look the host names up).
	Destinations destination.Guard
}

// CheckCreate checks what a create request must say before anything else
// is looked at: a name, a known delivery mode, a URL for a push
// subscription and none of the push fields for a pull one.
func (in Input) CheckCreate() *strictjson.Error {
	if in.Name == nil {
		return &strictjson.Error{Field: "name", Detail: "name is required"}
	}
	if in.DeliveryMode != nil {
		switch m := *in.DeliveryMode; m {
		case ModePush, ModePull:
		default:
			return &strictjson.Error{Field: "delivery_mode", Detail: "must be push or pull, not " + strconv.Quote(m)}
		}
	}
	pull := in.mode() == ModePull
	switch field := in.pushOnlyField(); {
	case pull && in.URL != nil:
		return &strictjson.Error{Field: "url", Detail: "a pull subscription has no url: its consumers receive its events (POST /v1/subscriptions/{id}/receive)"}
	case pull && field != "":
		return &strictjson.Error{Field: field, Detail: "a pull subscription pushes nothing: it has no " + field}
	case pull && in.Destination != nil:
		return &strictjson.Error{Field: "destination", Detail: "a pull subscription has no destination: its consumers receive its events (POST /v1/subscriptions/{id}/receive)"}
	case !pull && in.URL == nil && in.Destination == nil:
		return &strictjson.Error{Field: "url", Detail: "url (or destination) is required (or delivery_mode pull, for consumers that receive)"}
	}
	return nil
}

// New checks in as a create request (CheckCreate first) and returns the
// subscription it makes: active (awaiting validation when it asks for a
// handshake), with dead-lettering on, DefaultTimeout, DefaultRetryPolicy
// and new signing keys unless in says otherwise. The hosts of its URLs are
// checked last, with c.Destinations (which may look them up within ctx).
func (in Input) New(ctx context.Context, c Creation) (Subscription, error) {
	if err := in.CheckCreate(); err != nil {
		return Subscription{}, err
	}
	sub := Subscription{
		ID: c.ID, AccountID: c.AccountID, State: StateActive, DeadLetter: true,
		Timeout: DefaultTimeout, CreatedAt: c.Now, UpdatedAt: c.Now,
		DeliveryMode: in.mode(), FailurePolicy: cmp.Or(c.FailurePolicy, FailureRetry),
	}
	if in.RetryPolicy == nil {
		in.RetryPolicy = json.RawMessage(DefaultRetryPolicy)
	}
	if err := in.Apply(&sub); err != nil {
		return Subscription{}, err
	}
	if err := in.applyValidation(&sub); err != nil {
		return Subscription{}, err
	}
	if err := checkCombination(&sub); err != nil {
		return Subscription{}, err
	}
	sg, err := newKeyring(in.Signing)
	if err != nil {
		return Subscription{}, err
	}
	sub.Signing = sg
	if sub.DeliveryMode == ModePull {
		sub.FailurePolicy = FailureRetry // nothing is pushed, so nothing fails
		return sub, nil
	}
	if err := checkPushDestination(ctx, c.Destinations, &sub); err != nil {
		return Subscription{}, err
	}
	if sub.Delivery.DeadLetterURL != "" {
		if err := CheckDestination(ctx, c.Destinations, "dead_letter_url", sub.Delivery.DeadLetterURL); err != nil {
			return Subscription{}, err
		}
	}
	if a := sub.Delivery.Auth; a != nil && a.TokenURL != "" {
		if err := CheckDestination(ctx, c.Destinations, "auth.token_url", a.TokenURL); err != nil {
			return Subscription{}, err
		}
	}
	return sub, nil
}

// CheckUpdate refuses, before the subscription is read, the fields only a
// create takes.
func (in Input) CheckUpdate() *strictjson.Error {
	switch {
	case in.Signing != nil:
		return &strictjson.Error{Field: "signing", Detail: "is chosen at creation; rotate the key with POST /v1/subscriptions/{id}/secret/rotate"}
	case in.DeliveryMode != nil:
		return &strictjson.Error{Field: "delivery_mode", Detail: "is chosen at creation; make a new subscription for the other mode"}
	case in.Validation != nil:
		return &strictjson.Error{Field: "validation", Detail: "is chosen at creation: the handshake validates the endpoint the subscription was made for"}
	}
	return nil
}

// Update checks in as an update of sub (CheckUpdate first) and writes it
// over sub; on a problem sub may be half changed and must not be stored.
// Only a URL in (url, dead_letter_url) is checked with g (which may look
// its host up within ctx): a change of other fields keeps a URL accepted
// under other --allow-* flags.
func (in Input) Update(ctx context.Context, sub *Subscription, g destination.Guard) error {
	if err := in.CheckUpdate(); err != nil {
		return err
	}
	if sub.DeliveryMode == ModePull {
		if field := in.pushOnlyField(); field != "" {
			return badInput(field, "a pull subscription pushes nothing: it has no %s", field)
		}
	}
	if in.URL != nil && sub.Delivery.Validation != "" && !keepsURL(*in.URL, sub.URL) {
		return badInput("url", "the endpoint of a subscription with validation %s was validated at creation: create a new subscription for another URL", sub.Delivery.Validation)
	}
	if err := in.Apply(sub); err != nil {
		return err
	}
	if err := checkCombination(sub); err != nil {
		return err
	}
	if in.URL != nil || in.Destination != nil {
		if err := checkPushDestination(ctx, g, sub); err != nil {
			return err
		}
	}
	if in.DeadLetterURL != nil && *in.DeadLetterURL != "" {
		if err := CheckDestination(ctx, g, "dead_letter_url", sub.Delivery.DeadLetterURL); err != nil {
			return err
		}
	}
	if a := sub.Delivery.Auth; in.Auth != nil && a != nil && a.TokenURL != "" {
		if err := CheckDestination(ctx, g, "auth.token_url", a.TokenURL); err != nil {
			return err
		}
	}
	return nil
}

// Apply checks each field in sets and writes it over sub, then checks
// that sub's retry policy and filters compile. On a problem it returns a
// *strictjson.Error naming the field; sub may then be half changed and
// must not be stored. It does not check how fields go together (New and
// Update do).
func (in Input) Apply(sub *Subscription) *strictjson.Error {
	for _, apply := range []func(*Subscription) *strictjson.Error{
		in.applyDestination, in.applyMatch, in.applyRequest, in.applyFilters, in.applyExpressions, in.applyDelivery, in.applyOrdering, in.applyAuth, in.applyRetry,
	} {
		if err := apply(sub); err != nil {
			return err
		}
	}
	return checkCompiles(sub)
}

// applyMatch applies the name, the URL and what the subscription matches
// by type and subject.
func (in Input) applyMatch(sub *Subscription) *strictjson.Error {
	if in.Name != nil {
		if err := strictjson.CheckText("name", *in.Name, MaxNameLen, true); err != nil {
			return err
		}
		sub.Name = *in.Name
	}
	if in.URL != nil && !(sub.Delivery.Destination != nil && *in.URL == sub.URL) {
		// A broker subscription's url sent back as shown keeps its
		// destination; another URL makes it a webhook's.
		u, err := sentURL("url", *in.URL, webhookURL(sub))
		if err != nil {
			return err
		}
		sub.URL = u // the store sets the EndpointID of the URL
		sub.Delivery.Destination = nil
	}
	if in.EventTypes != nil {
		if err := checkEventTypes(*in.EventTypes); err != nil {
			return err
		}
		sub.EventTypes = *in.EventTypes
	}
	if in.SubjectBeginsWith != nil {
		if err := strictjson.CheckText("subject_begins_with", *in.SubjectBeginsWith, maxSubjectFilter, false); err != nil {
			return err
		}
		sub.SubjectBeginsWith = *in.SubjectBeginsWith
	}
	if in.SubjectEndsWith != nil {
		if err := strictjson.CheckText("subject_ends_with", *in.SubjectEndsWith, maxSubjectFilter, false); err != nil {
			return err
		}
		sub.SubjectEndsWith = *in.SubjectEndsWith
	}
	return nil
}

// applyRequest applies how a push's request is made: its timeout, headers,
// dead-lettering and schema.
func (in Input) applyRequest(sub *Subscription) *strictjson.Error {
	if in.Timeout != nil {
		if err := checkTimeout(in.Timeout.D()); err != nil {
			return err
		}
		sub.Timeout = in.Timeout.D()
	}
	if in.Headers != nil {
		if err := checkHeaders("headers", *in.Headers); err != nil {
			return err
		}
		sub.Headers = *in.Headers
	}
	if in.SecretHeaders != nil {
		if err := checkHeaders("secret_headers", *in.SecretHeaders); err != nil {
			return err
		}
		sub.SecretHeaders = *in.SecretHeaders
	}
	if in.DynamicHeaders != nil {
		if err := checkDynamicHeaders(*in.DynamicHeaders); err != nil {
			return err
		}
		sub.Delivery.DynamicHeaders = *in.DynamicHeaders
		if len(sub.Delivery.DynamicHeaders) == 0 {
			sub.Delivery.DynamicHeaders = nil
		}
	}
	if err := checkHeaderMaps(sub, in.sentHeaderField()); err != nil {
		return err
	}
	if in.DeadLetter != nil {
		sub.DeadLetter = *in.DeadLetter
	}
	if in.DeliverySchema != nil {
		if !event.ValidSchema(*in.DeliverySchema) {
			return badInput("delivery_schema", "must be one of %s, not %s", strings.Join(event.Schemas(), ", "), strconv.Quote(*in.DeliverySchema))
		}
		sub.Delivery.Schema = *in.DeliverySchema
	}
	return nil
}

// sentHeaderField names the header map a problem of the headers taken
// together is reported on: dynamic_headers when sent, else secret_headers
// when sent, else headers.
func (in Input) sentHeaderField() string {
	switch {
	case in.DynamicHeaders != nil:
		return "dynamic_headers"
	case in.SecretHeaders != nil:
		return "secret_headers"
	}
	return "headers"
}

// applyFilters applies the content filters.
func (in Input) applyFilters(sub *Subscription) *strictjson.Error {
	if in.SubjectCaseSensitive != nil {
		sub.Filters.SubjectCaseSensitive = *in.SubjectCaseSensitive
	}
	if in.AdvancedFilters != nil {
		raw := in.AdvancedFilters
		if string(raw) == "null" || string(raw) == "[]" {
			raw = nil
		}
		if _, err := filter.Compile(raw); err != nil {
			var fe *filter.FieldError
			if errors.As(err, &fe) {
				return badInput(fe.Field, "%s", fe.Detail)
			}
			return badInput("advanced_filters", "%s", err.Error())
		}
		sub.Filters.Advanced = raw
	}
	return nil
}

// applyDelivery applies the dead-letter URL, the batches and the failure
// policy.
func (in Input) applyDelivery(sub *Subscription) *strictjson.Error {
	if in.DeadLetterURL != nil {
		u := *in.DeadLetterURL
		if u != "" {
			var err *strictjson.Error
			if u, err = sentURL("dead_letter_url", u, sub.Delivery.DeadLetterURL); err != nil {
				return err
			}
		}
		sub.Delivery.DeadLetterURL = u
	}
	if in.MaxEventsPerBatch != nil {
		if n := *in.MaxEventsPerBatch; n < 1 || n > maxEventsPerBatch {
			return badInput("max_events_per_batch", "must be from 1 to %d, got %d", maxEventsPerBatch, n)
		}
		sub.Delivery.MaxEventsPerBatch = *in.MaxEventsPerBatch
	}
	if in.PreferredBatchKB != nil {
		if n := *in.PreferredBatchKB; n < 1 || n > maxPreferredBatchKB {
			return badInput("preferred_batch_size_kb", "must be from 1 to %d, got %d", maxPreferredBatchKB, n)
		}
		sub.Delivery.PreferredBatchSizeKB = *in.PreferredBatchKB
	}
	if in.FailurePolicy != nil {
		switch fp := *in.FailurePolicy; fp {
		case FailureRetry, FailureQueue:
			sub.FailurePolicy = fp
		default:
			return badInput("failure_policy", "must be retry or queue, not %s", strconv.Quote(fp))
		}
	}
	return nil
}

// applyOrdering applies the ordering: OrderingNone is kept as "" (the
// default, as stored before ordering existed).
func (in Input) applyOrdering(sub *Subscription) *strictjson.Error {
	if in.Ordering == nil {
		return nil
	}
	switch o := *in.Ordering; o {
	case OrderingNone:
		sub.Delivery.Ordering = ""
	case OrderingKey:
		sub.Delivery.Ordering = o
	default:
		return badInput("ordering", "must be none or key, not %s", strconv.Quote(o))
	}
	return nil
}

// applyRetry applies the retry policy, kept as its fields (a preset named
// when none is).
func (in Input) applyRetry(sub *Subscription) *strictjson.Error {
	if in.RetryPolicy == nil {
		return nil
	}
	// The raw policy passed strictjson's checks of the JSON itself when the
	// request was decoded; this binds it to the policy's fields.
	var spec retry.Spec
	if err := strictjson.Decode(in.RetryPolicy, "retry_policy", &spec); err != nil {
		return err
	}
	if spec.Preset == "" {
		spec.Preset = retry.DefaultPreset
	}
	b, _ := json.Marshal(spec)
	sub.RetryPolicy = b
	return nil
}

// applyValidation applies a create's validation handshake: the
// subscription then awaits it, with a token for Event Grid's validation
// URL.
func (in Input) applyValidation(sub *Subscription) *strictjson.Error {
	if in.Validation == nil {
		return nil
	}
	switch v := *in.Validation; v {
	case ValidationNone:
	case ValidationEventGrid, ValidationCloudEvents:
		sub.Delivery.Validation = v
		sub.Delivery.ValidationToken = randomToken()
		sub.State = StateAwaitingValidation
	default:
		return &strictjson.Error{Field: "validation", Detail: "must be none, eventgrid or cloudevents, not " + strconv.Quote(v)}
	}
	return nil
}

// mode is the delivery mode in asks for (ModePush when it names none).
func (in Input) mode() string {
	if in.DeliveryMode != nil {
		return *in.DeliveryMode
	}
	return ModePush
}

// pushOnlyField names the first field of in that only a push subscription
// has ("" when none is set): what a pull subscription refuses.
func (in Input) pushOnlyField() string {
	switch {
	case in.URL != nil:
		return "url"
	case in.Destination != nil:
		return "destination"
	case in.FailurePolicy != nil:
		return "failure_policy"
	case in.DeliverySchema != nil:
		return "delivery_schema"
	case in.MaxEventsPerBatch != nil:
		return "max_events_per_batch"
	case in.PreferredBatchKB != nil:
		return "preferred_batch_size_kb"
	case in.Validation != nil:
		return "validation"
	case in.DeadLetterURL != nil:
		return "dead_letter_url"
	case in.Auth != nil:
		return "auth"
	case in.Ordering != nil:
		return "ordering"
	case in.Transform != nil:
		return "transform"
	}
	return ""
}
