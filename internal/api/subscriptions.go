package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// subscriptionJSON is the subscription resource.
type subscriptionJSON struct {
	ID                string             `json:"id"`
	Name              string             `json:"name"`
	URL               string             `json:"url"`
	Destination       map[string]any     `json:"destination"` // secrets shown as ****
	EventTypes        []string           `json:"event_types"`
	SubjectBeginsWith string             `json:"subject_begins_with"`
	SubjectEndsWith   string             `json:"subject_ends_with"`
	SubjectCaseSens   bool               `json:"subject_case_sensitive"`
	AdvancedFilters   json.RawMessage    `json:"advanced_filters"`
	FilterExpression  *string            `json:"filter_expression"`
	Transform         *transformJSON     `json:"transform"`
	RetryPolicy       json.RawMessage    `json:"retry_policy"`
	Timeout           string             `json:"timeout"`
	Headers           map[string]string  `json:"headers"`
	SecretHeaders     map[string]string  `json:"secret_headers"` // values shown as ****
	DynamicHeaders    map[string]string  `json:"dynamic_headers"`
	DeadLetter        bool               `json:"dead_letter"`
	DeliveryMode      string             `json:"delivery_mode"`
	DeliverySchema    string             `json:"delivery_schema"`
	MaxEventsPerBatch int                `json:"max_events_per_batch"`
	PreferredBatchKB  int                `json:"preferred_batch_size_kb"`
	Validation        string             `json:"validation"`
	ValidationError   *string            `json:"validation_error"`
	DeadLetterURL     *string            `json:"dead_letter_url"`
	FailurePolicy     string             `json:"failure_policy"`
	Ordering          string             `json:"ordering"`
	Auth              *subscription.Auth `json:"auth"` // secrets shown as ****
	State             string             `json:"state"`
	StateReason       *string            `json:"state_reason"`
	EndpointID        string             `json:"endpoint_id"`
	CreatedAt         Time               `json:"created_at"`
	UpdatedAt         Time               `json:"updated_at"`
}

// transformJSON is a subscription's transform: its CEL expression.
type transformJSON struct {
	CEL string `json:"cel"`
}

func toSubscriptionJSON(s subscription.Subscription) subscriptionJSON {
	out := subscriptionJSON{
		ID: s.ID, Name: s.Name, URL: redact.URL(s.URL), EventTypes: s.EventTypes,
		SubjectBeginsWith: s.SubjectBeginsWith, SubjectEndsWith: s.SubjectEndsWith,
		RetryPolicy: s.RetryPolicy, Timeout: s.Timeout.String(), Headers: s.Headers,
		SecretHeaders: maskedHeaders(s.SecretHeaders), DeadLetter: s.DeadLetter, State: s.State,
		StateReason: optString(s.StateReason), EndpointID: s.EndpointID,
		DeliveryMode: orDefault(s.DeliveryMode, subscription.ModePush), FailurePolicy: orDefault(s.FailurePolicy, subscription.FailureRetry),
		DeliverySchema:    orDefault(s.Delivery.Schema, event.SchemaCloudEvents),
		MaxEventsPerBatch: max(s.Delivery.MaxEventsPerBatch, 1),
		PreferredBatchKB:  cmp.Or(s.Delivery.PreferredBatchSizeKB, catalog.DefaultPreferredBatchKB),
		Validation:        orDefault(s.Delivery.Validation, subscription.ValidationNone),
		Ordering:          orDefault(s.Delivery.Ordering, subscription.OrderingNone),
		ValidationError:   optString(redact.Text(s.Delivery.ValidationError)),
		DeadLetterURL:     optString(redact.URL(s.Delivery.DeadLetterURL)),
		CreatedAt:         timestamp(s.CreatedAt), UpdatedAt: timestamp(s.UpdatedAt),
	}
	if a := s.Delivery.Auth; a != nil {
		m := a.Masked()
		out.Auth = &m
	}
	out.Destination = destinationJSON(s)
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	out.DynamicHeaders = s.Delivery.DynamicHeaders
	if out.DynamicHeaders == nil {
		out.DynamicHeaders = map[string]string{}
	}
	out.SubjectCaseSens = s.Filters.SubjectCaseSensitive
	out.FilterExpression = optString(s.Filters.Expression)
	if s.Delivery.Transform != "" {
		out.Transform = &transformJSON{CEL: s.Delivery.Transform}
	}
	out.AdvancedFilters = s.Filters.Advanced
	if len(out.AdvancedFilters) == 0 {
		out.AdvancedFilters = json.RawMessage("[]")
	}
	if len(out.RetryPolicy) == 0 {
		out.RetryPolicy = json.RawMessage(subscription.DefaultRetryPolicy)
	}
	return out
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	var in subscription.Input
	if !decodeBody(w, r, &in) {
		return
	}
	if ierr := in.CheckCreate(); ierr != nil {
		invalid(w, ierr.Field, ierr.Detail)
		return
	}
	acc, err := s.account(r.Context(), accountOf(r))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	now := s.Clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	sub, err := in.New(r.Context(), subscription.Creation{
		ID: ids.New("sub_", now), AccountID: accountOf(r), Now: now,
		FailurePolicy: acc.Settings.FailurePolicy, Destinations: s.Destinations,
	})
	if err != nil {
		if !inputProblem(w, err) {
			s.storeError(w, r, err, "subscription")
		}
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
	var in subscription.Input
	if !decodeBody(w, r, &in) {
		return
	}
	if ierr := in.CheckUpdate(); ierr != nil {
		invalid(w, ierr.Field, ierr.Detail)
		return
	}
	var name string
	accountID := accountOf(r)
	sub, err := s.Control.UpdateSubscription(r.Context(), r.PathValue("id"), func(sub *subscription.Subscription) error {
		if account.OrDefault(sub.AccountID) != accountID {
			return fmt.Errorf("subscription %s: %w", sub.ID, store.ErrNotFound)
		}
		if err := in.Update(r.Context(), sub, s.Destinations); err != nil {
			return err
		}
		name = sub.Name
		return nil
	})
	if inputProblem(w, err) {
		return
	}
	switch {
	case errors.Is(err, store.ErrNameTaken):
		s.subscriptionError(w, r, err, name)
	case err != nil:
		s.storeError(w, r, err, "subscription")
	default:
		writeJSON(w, http.StatusOK, toSubscriptionJSON(sub))
	}
}

// inputProblem answers for a value a domain package refused, and reports
// whether err was one: 422 for a destination the policy refuses
// (subscription.DestinationError) and for fields that do not go together
// (subscription.CombinationError), 400 naming the field for any other
// problem (strictjson.Error).
func inputProblem(w http.ResponseWriter, err error) bool { return inputProblemAt(w, err, "") }

// inputProblemAt is inputProblem for a value at prefix in the body
// ("subscription." for POST /v1/filter-test's unsaved subscription): the
// field named is prefix and the refused field.
func inputProblemAt(w http.ResponseWriter, err error, prefix string) bool {
	var ie *strictjson.Error
	var refused *subscription.DestinationError
	var combo *subscription.CombinationError
	var unknown *eventtype.UnknownTypeError
	switch {
	case errors.As(err, &unknown):
		unprocessableInput(w, prefix+unknown.Field, unknown.Detail)
	case errors.As(err, &refused):
		unprocessable(w, prefix+refused.Field, refused.Detail)
	case errors.As(err, &combo):
		unprocessableInput(w, prefix+combo.Field, combo.Detail)
	case errors.As(err, &ie):
		invalid(w, prefix+ie.Field, ie.Detail)
	default:
		return false
	}
	return true
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
	if name := nameFilter.in(r); name != "" {
		s.subscriptionNamed(w, r, name, p)
		return
	}
	subs, next, err := s.Store.ListSubscriptions(r.Context(), accountOf(r), p)
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	writeList(w, subs, next, toSubscriptionJSON)
}

// subscriptionNamed answers the list of the account's subscriptions named
// name, exactly: the one or none (names are unique in an account), after
// the cursor as every page is.
func (s *Server) subscriptionNamed(w http.ResponseWriter, r *http.Request, name string, p store.Page) {
	var subs []subscription.Subscription
	err := store.SubscriptionCursor.Check(p.Cursor)
	if err == nil {
		var sub subscription.Subscription
		sub, err = s.Store.SubscriptionByName(r.Context(), accountOf(r), name)
		if err == nil && sub.ID > p.Cursor {
			subs = append(subs, sub)
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.storeError(w, r, err, "subscription")
		return
	}
	writeList(w, subs, "", toSubscriptionJSON)
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

// subscriptionError answers for a failed subscription write: 409 naming the
// field for a name in use (name, quoted so that any name shows), else as
// storeError does.
func (s *Server) subscriptionError(w http.ResponseWriter, r *http.Request, err error, name string) {
	if inputProblem(w, err) { // the event types the catalog refused
		return
	}
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
