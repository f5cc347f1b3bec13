package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/subscription"
)

// testEventInput is the optional body of a test event request.
type testEventInput struct {
	// Type is the event's type (nil: admission.TestType).
	Type *string `json:"type"`
	// Data is the event's data, a JSON object (absent or null: a small
	// example; see admission.NewTestEvent).
	Data json.RawMessage `json:"data"`
}

// testEventJSON is the answer to a test event request.
type testEventJSON struct {
	EventID    string `json:"event_id"`
	DeliveryID string `json:"delivery_id"`
	// Queued: the delivery waits in the subscription's queue (a pull
	// subscription, or a deactivated push subscription) instead of being
	// pushed.
	Queued bool `json:"queued"`
}

// sendTestEvent publishes a test event (admission.NewTestEvent) to the
// path's subscription alone, through the delivery path
// (admission.Publisher.PublishTo): pushed signed, retried by its policy,
// logged with its attempts, or queued for a pull or deactivated
// subscription. Its event types and filters do not apply, and no other
// subscription gets the event. Bad input is a 400 naming the field; a
// subscription awaiting its endpoint's validation a 409: nothing is
// published then.
func (s *Server) sendTestEvent(w http.ResponseWriter, r *http.Request) {
	sub, ok := s.ownSubscription(w, r)
	if !ok {
		return
	}
	var in testEventInput
	if !decodeOptionalBody(w, r, &in) {
		return
	}
	typ := admission.TestType
	if in.Type != nil {
		typ = *in.Type
	}
	ev, err := admission.NewTestEvent(sub.ID, typ, in.Data, s.Clock.Now())
	if err != nil {
		field := "body"
		if fe := (*event.FieldError)(nil); errors.As(err, &fe) {
			field, err = fe.Field, errors.New(fe.Detail)
		}
		invalid(w, field, err.Error())
		return
	}
	if sub.State == subscription.StateAwaitingValidation {
		conflict(w, "", "subscription "+sub.ID+" awaits its endpoint's validation handshake (see its validation_error): "+
			"Herald pushes nothing to an endpoint before it is validated; send the test event once the subscription is active")
		return
	}
	res, err := s.Publisher.PublishTo(r.Context(), sub.AccountID, sub.ID, ev)
	switch {
	case errors.Is(err, admission.ErrNoSubscription):
		notFound(w, "subscription") // deleted meanwhile
	case err != nil:
		s.storeError(w, r, err, "subscription")
	default:
		writeJSON(w, http.StatusAccepted, testEventJSON{EventID: res.ID, DeliveryID: res.DeliveryID, Queued: res.Queued})
	}
}
