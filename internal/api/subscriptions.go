package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
)

// subscriptionJSON is the subscription resource.
type subscriptionJSON struct {
	ID                string            `json:"id"`
	Name              string            `json:"name"`
	URL               string            `json:"url"`
	EventTypes        []string          `json:"event_types"`
	SubjectBeginsWith string            `json:"subject_begins_with"`
	SubjectEndsWith   string            `json:"subject_ends_with"`
	RetryPolicy       json.RawMessage   `json:"retry_policy"`
	Timeout           string            `json:"timeout"`
	Headers           map[string]string `json:"headers"`
	DeadLetter        bool              `json:"dead_letter"`
	State             string            `json:"state"`
	EndpointID        string            `json:"endpoint_id"`
	CreatedAt         Time              `json:"created_at"`
	UpdatedAt         Time              `json:"updated_at"`
}

func toSubscriptionJSON(s store.Subscription) subscriptionJSON {
	out := subscriptionJSON{
		ID: s.ID, Name: s.Name, URL: s.URL, EventTypes: s.EventTypes,
		SubjectBeginsWith: s.SubjectBeginsWith, SubjectEndsWith: s.SubjectEndsWith,
		RetryPolicy: s.RetryPolicy, Timeout: s.Timeout.String(), Headers: s.Headers,
		DeadLetter: s.DeadLetter, State: s.State, EndpointID: s.EndpointID,
		CreatedAt: timestamp(s.CreatedAt), UpdatedAt: timestamp(s.UpdatedAt),
	}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	if len(out.RetryPolicy) == 0 {
		out.RetryPolicy = json.RawMessage(`{"preset":"eventgrid"}`)
	}
	return out
}

// subscriptionInput is a create or update request. Absent fields are nil:
// on create they take defaults, on update they keep the stored value.
type subscriptionInput struct {
	Name              *string            `json:"name"`
	URL               *string            `json:"url"`
	EventTypes        *[]string          `json:"event_types"`
	SubjectBeginsWith *string            `json:"subject_begins_with"`
	SubjectEndsWith   *string            `json:"subject_ends_with"`
	RetryPolicy       json.RawMessage    `json:"retry_policy"`
	Timeout           *string            `json:"timeout"`
	Headers           *map[string]string `json:"headers"`
	DeadLetter        *bool              `json:"dead_letter"`
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	var in subscriptionInput
	if !decodeBody(w, r, &in) {
		return
	}
	now := s.Clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	sub := store.Subscription{
		ID: ids.New("sub_", now), State: "active", DeadLetter: true,
		Timeout: defaultSubscriptionTimeout, CreatedAt: now, UpdatedAt: now,
	}
	if in.Name == nil {
		invalid(w, "name", "name is required")
		return
	}
	if in.URL == nil {
		invalid(w, "url", "url is required")
		return
	}
	if in.RetryPolicy == nil {
		in.RetryPolicy = json.RawMessage(`{"preset":"eventgrid"}`)
	}
	if !applyInput(w, &sub, in) {
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
	answered := false
	sub, err := s.Control.UpdateSubscription(r.Context(), r.PathValue("id"), func(sub *store.Subscription) error {
		if !applyInput(w, sub, in) {
			answered = true
			return errInvalidInput
		}
		return nil
	})
	switch {
	case answered:
	case errors.Is(err, store.ErrNameTaken) && in.Name != nil:
		s.subscriptionError(w, r, err, *in.Name)
	case err != nil:
		s.storeError(w, r, err, "subscription")
	default:
		writeJSON(w, http.StatusOK, toSubscriptionJSON(sub))
	}
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) {
	sub, err := s.Store.GetSubscription(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	writeJSON(w, http.StatusOK, toSubscriptionJSON(sub))
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	subs, next, err := s.Store.ListSubscriptions(r.Context(), p)
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	writeList(w, subs, next, toSubscriptionJSON)
}

// deleteSubscription removes a subscription; its pending deliveries end as
// dropped (reason SubscriptionDeleted) and stay in the delivery log.
func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	if err := s.Control.DeleteSubscription(r.Context(), r.PathValue("id")); err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// errInvalidInput aborts a change whose input applyInput refused (and
// answered).
var errInvalidInput = errors.New("invalid input")

// applyInput validates in and writes it over sub; on a problem it answers
// and returns false, leaving nothing changed in the store.
func applyInput(w http.ResponseWriter, sub *store.Subscription, in subscriptionInput) bool {
	if in.Name != nil {
		if msg := checkName(*in.Name); msg != "" {
			invalid(w, "name", msg)
			return false
		}
		sub.Name = *in.Name
	}
	if in.URL != nil {
		if msg := checkURL(*in.URL); msg != "" {
			invalid(w, "url", msg)
			return false
		}
		sub.URL = *in.URL
		sub.EndpointID = store.EndpointID(sub.URL)
	}
	if in.EventTypes != nil {
		if field, msg := checkEventTypes(*in.EventTypes); msg != "" {
			invalid(w, field, msg)
			return false
		}
		sub.EventTypes = *in.EventTypes
	}
	if in.SubjectBeginsWith != nil {
		if len(*in.SubjectBeginsWith) > maxSubjectFilter {
			invalid(w, "subject_begins_with", "at most 1024 bytes")
			return false
		}
		sub.SubjectBeginsWith = *in.SubjectBeginsWith
	}
	if in.SubjectEndsWith != nil {
		if len(*in.SubjectEndsWith) > maxSubjectFilter {
			invalid(w, "subject_ends_with", "at most 1024 bytes")
			return false
		}
		sub.SubjectEndsWith = *in.SubjectEndsWith
	}
	if in.Timeout != nil {
		d, msg := checkTimeout(*in.Timeout)
		if msg != "" {
			invalid(w, "timeout", msg)
			return false
		}
		sub.Timeout = d
	}
	if in.Headers != nil {
		if field, msg := checkHeaders(*in.Headers); msg != "" {
			invalid(w, field, msg)
			return false
		}
		sub.Headers = *in.Headers
	}
	if in.DeadLetter != nil {
		sub.DeadLetter = *in.DeadLetter
	}
	if in.RetryPolicy != nil {
		var spec retry.Spec
		dec := json.NewDecoder(bytes.NewReader(in.RetryPolicy))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			field, detail := jsonErrorField(err)
			if field == "body" {
				field = ""
			}
			invalid(w, strings.TrimSuffix("retry_policy."+field, "."), detail)
			return false
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
			invalid(w, "retry_policy."+fe.Field, fe.Detail)
		} else {
			invalid(w, "retry_policy", err.Error())
		}
		return false
	}
	return true
}

// subscriptionError answers for a failed subscription write: 409 naming the
// field for a name in use, else as storeError does.
func (s *Server) subscriptionError(w http.ResponseWriter, r *http.Request, err error, name string) {
	if errors.Is(err, store.ErrNameTaken) {
		conflict(w, "name", "a subscription named "+name+" already exists")
		return
	}
	s.storeError(w, r, err, "subscription")
}
