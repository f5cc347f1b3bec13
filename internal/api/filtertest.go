package api

import (
	"errors"
	"net/http"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
)

// filterTestJSON is the answer of filter-test.
type filterTestJSON struct {
	// Matches: the event would make a delivery for the subscription.
	Matches bool `json:"matches"`
	// Reason says why not ("" when it matches): the event type, the
	// subject, or the advanced filter that failed and how.
	Reason string `json:"reason,omitempty"`
	// FailedFilter is the index of the advanced filter that failed (null
	// when another rule failed, or none).
	FailedFilter *int `json:"failed_filter"`
}

// filterTest says whether an event (one CloudEvent as JSON, as it would be
// published) would go to the subscription, and if not which rule refused
// it: what a user reaches for when a subscription receives nothing.
// Nothing is published.
func (s *Server) filterTest(w http.ResponseWriter, r *http.Request) {
	sub, ok := s.ownSubscription(w, r)
	if !ok {
		return
	}
	body, err := readBody(w, r, event.MaxBodyBytes)
	if err != nil {
		bodyReadFailed(w, err, "could not read the body (at most 1 MiB)")
		return
	}
	v, err := catalog.Try(sub, accountOf(r), body)
	if fe := (*event.FieldError)(nil); errors.As(err, &fe) {
		invalid(w, fe.Field, fe.Detail)
		return
	}
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	why, failed := v.Why, v.Failed
	out := filterTestJSON{Matches: why == "", Reason: why}
	if failed >= 0 {
		out.FailedFilter = &failed
	}
	writeJSON(w, http.StatusOK, out)
}
