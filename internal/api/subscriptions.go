package api

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// subscriptionJSON is the subscription resource.
type subscriptionJSON struct {
	ID                string            `json:"id"`
	Name              string            `json:"name"`
	URL               string            `json:"url"`
	EventTypes        []string          `json:"event_types"`
	SubjectBeginsWith string            `json:"subject_begins_with"`
	SubjectEndsWith   string            `json:"subject_ends_with"`
	SubjectCaseSens   bool              `json:"subject_case_sensitive"`
	AdvancedFilters   json.RawMessage   `json:"advanced_filters"`
	RetryPolicy       json.RawMessage   `json:"retry_policy"`
	Timeout           string            `json:"timeout"`
	Headers           map[string]string `json:"headers"`
	SecretHeaders     map[string]string `json:"secret_headers"` // values shown as ****
	DeadLetter        bool              `json:"dead_letter"`
	DeliveryMode      string            `json:"delivery_mode"`
	DeliverySchema    string            `json:"delivery_schema"`
	MaxEventsPerBatch int               `json:"max_events_per_batch"`
	PreferredBatchKB  int               `json:"preferred_batch_size_kb"`
	Validation        string            `json:"validation"`
	ValidationError   *string           `json:"validation_error"`
	DeadLetterURL     *string           `json:"dead_letter_url"`
	FailurePolicy     string            `json:"failure_policy"`
	State             string            `json:"state"`
	EndpointID        string            `json:"endpoint_id"`
	CreatedAt         Time              `json:"created_at"`
	UpdatedAt         Time              `json:"updated_at"`
}

func toSubscriptionJSON(s subscription.Subscription) subscriptionJSON {
	out := subscriptionJSON{
		ID: s.ID, Name: s.Name, URL: redact.URL(s.URL), EventTypes: s.EventTypes,
		SubjectBeginsWith: s.SubjectBeginsWith, SubjectEndsWith: s.SubjectEndsWith,
		RetryPolicy: s.RetryPolicy, Timeout: s.Timeout.String(), Headers: s.Headers,
		SecretHeaders: maskedHeaders(s.SecretHeaders), DeadLetter: s.DeadLetter, State: s.State, EndpointID: s.EndpointID,
		DeliveryMode: orDefault(s.DeliveryMode, subscription.ModePush), FailurePolicy: orDefault(s.FailurePolicy, subscription.FailureRetry),
		DeliverySchema:    orDefault(s.Delivery.Schema, event.SchemaCloudEvents),
		MaxEventsPerBatch: max(s.Delivery.MaxEventsPerBatch, 1),
		PreferredBatchKB:  cmp.Or(s.Delivery.PreferredBatchSizeKB, catalog.DefaultPreferredBatchKB),
		Validation:        orDefault(s.Delivery.Validation, subscription.ValidationNone),
		ValidationError:   optString(s.Delivery.ValidationError),
		DeadLetterURL:     optString(redact.URL(s.Delivery.DeadLetterURL)),
		CreatedAt:         timestamp(s.CreatedAt), UpdatedAt: timestamp(s.UpdatedAt),
	}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	out.SubjectCaseSens = s.Filters.SubjectCaseSensitive
	out.AdvancedFilters = s.Filters.Advanced
	if len(out.AdvancedFilters) == 0 {
		out.AdvancedFilters = json.RawMessage("[]")
	}
	if len(out.RetryPolicy) == 0 {
		out.RetryPolicy = json.RawMessage(`{"preset":"eventgrid"}`)
	}
	return out
}

// subscriptionInput is a create or update request, read with decodeBody.
// Absent (or null) fields are nil: on create they take defaults, on update
// they keep the stored value. RetryPolicy is the policy as sent: null resets
// it to {"preset":"eventgrid"}.
type subscriptionInput struct {
	Name              *string            `json:"name"`
	URL               *string            `json:"url"`
	EventTypes        *[]string          `json:"event_types"`
	SubjectBeginsWith *string            `json:"subject_begins_with"`
	SubjectEndsWith   *string            `json:"subject_ends_with"`
	RetryPolicy       json.RawMessage    `json:"retry_policy"`
	Timeout           *string            `json:"timeout"`
	Headers           *map[string]string `json:"headers"`
	SecretHeaders     *map[string]string `json:"secret_headers"`
	DeadLetter        *bool              `json:"dead_letter"`
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
	// DeadLetterURL: "" (or null) removes it.
	DeadLetterURL *string `json:"dead_letter_url"`
	// Signing is read on create only (see signingInput).
	Signing *signingInput `json:"signing"`
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	var in subscriptionInput
	if !decodeBody(w, r, &in) {
		return
	}
	now := s.Clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	sub := subscription.Subscription{
		ID: ids.New("sub_", now), AccountID: accountOf(r), State: "active", DeadLetter: true,
		Timeout: defaultSubscriptionTimeout, CreatedAt: now, UpdatedAt: now,
	}
	if in.Name == nil {
		invalid(w, "name", "name is required")
		return
	}
	sub.DeliveryMode = subscription.ModePush
	if in.DeliveryMode != nil {
		switch m := *in.DeliveryMode; m {
		case subscription.ModePush, subscription.ModePull:
			sub.DeliveryMode = m
		default:
			invalid(w, "delivery_mode", "must be push or pull, not "+strconv.Quote(m))
			return
		}
	}
	pull := sub.DeliveryMode == subscription.ModePull
	switch {
	case pull && in.URL != nil:
		invalid(w, "url", "a pull subscription has no url: its consumers receive its events (POST /v1/subscriptions/{id}/receive)")
		return
	case pull && pushOnlyField(in) != "":
		field := pushOnlyField(in)
		invalid(w, field, "a pull subscription pushes nothing: it has no "+field)
		return
	case !pull && in.URL == nil:
		invalid(w, "url", "url is required (or delivery_mode pull, for consumers that receive)")
		return
	}
	acc, err := s.account(r.Context(), sub.AccountID)
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	sub.FailurePolicy = orDefault(acc.Settings.FailurePolicy, subscription.FailureRetry)
	if in.RetryPolicy == nil {
		in.RetryPolicy = json.RawMessage(`{"preset":"eventgrid"}`)
	}
	if err := applyInput(&sub, in); err != nil {
		invalid(w, err.Field, err.Detail)
		return
	}
	if in.Validation != nil {
		switch v := *in.Validation; v {
		case subscription.ValidationNone:
		case subscription.ValidationEventGrid, subscription.ValidationCloudEvents:
			sub.Delivery.Validation = v
			sub.Delivery.ValidationToken = randomToken()
			sub.State = subscription.StateAwaitingValidation
		default:
			invalid(w, "validation", "must be none, eventgrid or cloudevents, not "+strconv.Quote(v))
			return
		}
	}
	if err := checkCombination(&sub); err != nil {
		unprocessableInput(w, err.Field, err.Detail)
		return
	}
	sg, ierr := newSigning(in.Signing)
	if ierr != nil {
		invalid(w, ierr.Field, ierr.Detail)
		return
	}
	sub.Signing = sg
	if pull {
		sub.FailurePolicy = subscription.FailureRetry // nothing is pushed, so nothing fails
	} else if err := checkDestination(s.Destinations, sub.URL); err != nil {
		unprocessable(w, err.Field, err.Detail)
		return
	} else if err := checkDestinationField(s.Destinations, "dead_letter_url", sub.Delivery.DeadLetterURL); err != nil {
		unprocessable(w, err.Field, err.Detail)
		return
	}
	if err := s.Control.CreateSubscription(r.Context(), sub); err != nil {
		s.subscriptionError(w, r, err, sub.Name)
		return
	}
	if created, err := s.Store.GetSubscription(r.Context(), sub.ID); err == nil {
		sub = created
	}
	w.Header().Set("Location", "/v1/subscriptions/"+sub.ID)
	writeJSON(w, http.StatusCreated, toSubscriptionJSON(sub))
}

func (s *Server) updateSubscription(w http.ResponseWriter, r *http.Request) {
	var in subscriptionInput
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Signing != nil {
		invalid(w, "signing", "is chosen at creation; rotate the key with POST /v1/subscriptions/{id}/secret/rotate")
		return
	}
	if in.DeliveryMode != nil {
		invalid(w, "delivery_mode", "is chosen at creation; make a new subscription for the other mode")
		return
	}
	if in.Validation != nil {
		invalid(w, "validation", "is chosen at creation: the handshake validates the endpoint the subscription was made for")
		return
	}
	var name string
	accountID := accountOf(r)
	sub, err := s.Control.UpdateSubscription(r.Context(), r.PathValue("id"), func(sub *subscription.Subscription) error {
		if account.OrDefault(sub.AccountID) != accountID {
			return fmt.Errorf("subscription %s: %w", sub.ID, store.ErrNotFound)
		}
		if sub.DeliveryMode == subscription.ModePull {
			if field := pushOnlyField(in); field != "" {
				return badInput(field, "a pull subscription pushes nothing: it has no %s", field)
			}
		}
		if in.URL != nil && sub.Delivery.Validation != "" && *in.URL != sub.URL {
			return badInput("url", "the endpoint of a subscription with validation %s was validated at creation: create a new subscription for another URL", sub.Delivery.Validation)
		}
		if err := applyInput(sub, in); err != nil {
			return err
		}
		if err := checkCombination(sub); err != nil {
			return err
		}
		if in.URL != nil {
			// Only a new URL is checked: a change of other fields keeps a
			// URL accepted under other --allow-* flags.
			if err := checkDestination(s.Destinations, sub.URL); err != nil {
				return err
			}
		}
		if in.DeadLetterURL != nil {
			if err := checkDestinationField(s.Destinations, "dead_letter_url", sub.Delivery.DeadLetterURL); err != nil {
				return err
			}
		}
		name = sub.Name
		return nil
	})
	var ie *inputError
	var refused *destinationError
	var combo *combinationError
	switch {
	case errors.As(err, &refused):
		unprocessable(w, refused.Field, refused.Detail)
	case errors.As(err, &combo):
		unprocessableInput(w, combo.Field, combo.Detail)
	case errors.As(err, &ie):
		invalid(w, ie.Field, ie.Detail)
	case errors.Is(err, store.ErrNameTaken):
		s.subscriptionError(w, r, err, name)
	case err != nil:
		s.storeError(w, r, err, "subscription")
	default:
		writeJSON(w, http.StatusOK, toSubscriptionJSON(sub))
	}
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) {
	sub, ok := s.ownSubscription(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, toSubscriptionJSON(sub))
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	subs, next, err := s.Store.ListSubscriptions(r.Context(), accountOf(r), p)
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	writeList(w, subs, next, toSubscriptionJSON)
}

// deleteSubscription removes a subscription; its pending deliveries end as
// dropped (reason SubscriptionDeleted) and stay in the delivery log.
func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.ownSubscription(w, r); !ok {
		return
	}
	if err := s.Control.DeleteSubscription(r.Context(), r.PathValue("id")); err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// applyInput validates in and writes it over sub. On a problem it returns
// an *inputError naming the field; sub may then be half changed and must not
// be stored.
func applyInput(sub *subscription.Subscription, in subscriptionInput) *inputError {
	if in.Name != nil {
		if err := checkText("name", *in.Name, maxNameLen, true); err != nil {
			return err
		}
		sub.Name = *in.Name
	}
	if in.URL != nil {
		if err := checkURL(*in.URL); err != nil {
			return err
		}
		sub.URL = *in.URL // the store sets the EndpointID of the URL
	}
	if in.EventTypes != nil {
		if err := checkEventTypes(*in.EventTypes); err != nil {
			return err
		}
		sub.EventTypes = *in.EventTypes
	}
	if in.SubjectBeginsWith != nil {
		if err := checkText("subject_begins_with", *in.SubjectBeginsWith, maxSubjectFilter, false); err != nil {
			return err
		}
		sub.SubjectBeginsWith = *in.SubjectBeginsWith
	}
	if in.SubjectEndsWith != nil {
		if err := checkText("subject_ends_with", *in.SubjectEndsWith, maxSubjectFilter, false); err != nil {
			return err
		}
		sub.SubjectEndsWith = *in.SubjectEndsWith
	}
	if in.Timeout != nil {
		d, err := checkTimeout(*in.Timeout)
		if err != nil {
			return err
		}
		sub.Timeout = d
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
	if err := checkHeaderMaps(sub.Headers, sub.SecretHeaders, in.SecretHeaders != nil); err != nil {
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
	if in.DeadLetterURL != nil {
		if u := *in.DeadLetterURL; u != "" {
			if err := checkURLField("dead_letter_url", u); err != nil {
				return err
			}
		}
		sub.Delivery.DeadLetterURL = *in.DeadLetterURL
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
		case subscription.FailureRetry, subscription.FailureQueue:
			sub.FailurePolicy = fp
		default:
			return badInput("failure_policy", "must be retry or queue, not %s", strconv.Quote(fp))
		}
	}
	if in.RetryPolicy != nil {
		// The raw policy passed decodeBody's checks of the JSON itself;
		// this binds it to the policy's fields.
		var spec retry.Spec
		if err := decodeJSON(in.RetryPolicy, "retry_policy", &spec); err != nil {
			return err
		}
		if spec.Preset == "" {
			spec.Preset = "eventgrid"
		}
		b, _ := json.Marshal(spec)
		sub.RetryPolicy = b
	}
	if _, err := catalog.NewEntry(*sub); err != nil {
		var fe *retry.FieldError
		if errors.As(err, &fe) {
			return badInput("retry_policy."+fe.Field, "%s", fe.Detail)
		}
		return badInput("retry_policy", "%s", err.Error())
	}
	return nil
}

// subscriptionError answers for a failed subscription write: 409 naming the
// field for a name in use (name, quoted so that any name shows), else as
// storeError does.
func (s *Server) subscriptionError(w http.ResponseWriter, r *http.Request, err error, name string) {
	if errors.Is(err, store.ErrNameTaken) {
		conflict(w, "name", "a subscription named "+strconv.Quote(name)+" already exists")
		return
	}
	if le := (*store.SubscriptionLimitError)(nil); errors.As(err, &le) {
		writeProblem(w, Problem{Type: probLimit, Title: "Limit reached", Status: http.StatusConflict,
			Detail: "the account already holds " + strconv.Itoa(le.Limit) + " subscriptions, the most one account may hold " +
				"(the server's --max-subscriptions-per-account); delete one first, or ask the operator to raise the limit"})
		return
	}
	s.storeError(w, r, err, "subscription")
}

// orDefault returns v, or def when v is empty.
func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// pushOnlyField names the first field of in that only a push subscription
// has ("" when none is set): what a pull subscription refuses.
func pushOnlyField(in subscriptionInput) string {
	switch {
	case in.URL != nil:
		return "url"
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
	}
	return ""
}

// Batch bounds (Event Grid's).
const (
	maxEventsPerBatch   = 5000
	maxPreferredBatchKB = 1024
)

// combinationError is a subscription whose fields are each valid but do not
// go together (batches in a schema that carries one event a request): 422
// naming the field.
type combinationError struct{ Field, Detail string }

func (e *combinationError) Error() string { return e.Field + ": " + e.Detail }

// checkCombination refuses the settings a subscription's schema cannot
// carry.
func checkCombination(sub *subscription.Subscription) *combinationError {
	schema := orDefault(sub.Delivery.Schema, event.SchemaCloudEvents)
	if !event.CanBatch(schema) && sub.Delivery.MaxEventsPerBatch > 1 {
		return &combinationError{Field: "max_events_per_batch", Detail: fmt.Sprintf(
			"the %s schema carries one event a request: batches need delivery_schema cloudevents or eventgrid", schema)}
	}
	switch v := sub.Delivery.Validation; {
	case v == subscription.ValidationEventGrid && schema != event.SchemaEventGrid:
		return &combinationError{Field: "validation", Detail: "the eventgrid handshake goes with delivery_schema eventgrid, not " + schema}
	case v == subscription.ValidationCloudEvents && schema != event.SchemaCloudEvents && schema != event.SchemaCloudEventsBinary:
		return &combinationError{Field: "validation", Detail: "the cloudevents handshake goes with delivery_schema cloudevents or cloudevents-binary, not " + schema}
	}
	return nil
}

// randomToken is an unguessable token: 32 random bytes, URL-safe base64.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
