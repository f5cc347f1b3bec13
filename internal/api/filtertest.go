package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/subscription"
)

// filterTestJSON is the answer of the filter-test routes.
type filterTestJSON struct {
	// Matches: the event would make a delivery for the subscription.
	Matches bool `json:"matches"`
	// Reason says why not ("" when it matches): the event type, the
	// subject, the advanced filter that failed and how, or the
	// filter_expression.
	Reason string `json:"reason,omitempty"`
	// FailedFilter is the index of the advanced filter that failed (null
	// when another rule failed, or none).
	FailedFilter *int `json:"failed_filter"`
	// Delivered is what a push would carry (null when it does not match).
	Delivered *deliveredJSON `json:"delivered"`
}

// deliveredJSON is catalog.Preview: what a push of the event would carry
// after the subscription's transform.
type deliveredJSON struct {
	// Filtered: the transform gave null; nothing would be sent and the
	// delivery would end filtered.
	Filtered bool `json:"filtered"`
	// TransformError is CEL's message when the transform fails on the
	// event (the delivery would be dead-lettered, reason
	// TransformFailed); null otherwise.
	TransformError *string `json:"transform_error"`
	// ContentType and Headers are the request's content type and the
	// delivery schema's headers (Herald's own, webhook-* and herald-*,
	// differ per attempt and are left out).
	ContentType string            `json:"content_type,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// Body is the request body exactly, when it is UTF-8; BodyBase64 when
	// it is not.
	Body       *string `json:"body,omitempty"`
	BodyBase64 *string `json:"body_base64,omitempty"`
}

// filterTestTimeout bounds a trial's evaluation of the expressions (each
// is bounded by expr's cost limit as well).
const filterTestTimeout = 5 * time.Second

// filterTest says whether an event (one CloudEvent as JSON, as it would be
// published) would go to the subscription, and if not which rule refused
// it, and if so what a push would carry: what a user reaches for when a
// subscription receives nothing, or receives something unexpected.
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
	s.answerTrial(w, r, sub, body, "")
}

// trialJSON is the body of POST /v1/filter-test.
type trialJSON struct {
	Event        json.RawMessage `json:"event"`
	Subscription json.RawMessage `json:"subscription" strictjson:"lines"` // checked again as subscription.Input
}

// filterTestUnsaved is POST /v1/filter-test: filterTest for a subscription
// not yet saved, given as a create request would give it. Its fields are
// checked as a create checks them (a problem names subscription.<field>),
// but for an account's catalog_only, which does not change what matches;
// nothing is stored.
func (s *Server) filterTestUnsaved(w http.ResponseWriter, r *http.Request) {
	var in trialJSON
	if !decodeBody(w, r, &in) {
		return
	}
	switch {
	case in.Event == nil:
		invalid(w, "event", "is required: one CloudEvent as JSON, as it would be published")
		return
	case in.Subscription == nil:
		invalid(w, "subscription", "is required: the subscription's fields, as POST /v1/subscriptions takes them")
		return
	}
	var si subscription.Input
	if err := decodeJSON(in.Subscription, "subscription", &si); err != nil {
		invalid(w, err.Field, err.Detail)
		return
	}
	now := s.Clock.Now().UTC()
	sub, err := si.New(r.Context(), subscription.Creation{ID: "sub_preview", AccountID: accountOf(r), Now: now,
		Destinations: s.Destinations})
	if err != nil {
		if !inputProblemAt(w, err, "subscription.") {
			s.storeError(w, r, err, "subscription")
		}
		return
	}
	s.answerTrial(w, r, sub, in.Event, "event.")
}

// answerTrial answers a filter test of the event in body for sub
// (catalog.Try); a field of the event Herald cannot read is named after
// prefix.
func (s *Server) answerTrial(w http.ResponseWriter, r *http.Request, sub subscription.Subscription, body []byte, prefix string) {
	ctx, cancel := context.WithTimeout(r.Context(), filterTestTimeout)
	defer cancel()
	v, err := catalog.Try(ctx, sub, accountOf(r), body)
	if fe := (*event.FieldError)(nil); errors.As(err, &fe) {
		invalid(w, prefix+fe.Field, fe.Detail)
		return
	}
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	out := filterTestJSON{Matches: v.Why == "", Reason: v.Why}
	if v.Failed >= 0 {
		out.FailedFilter = &v.Failed
	}
	if p := v.Delivered; p != nil {
		out.Delivered = toDeliveredJSON(p)
	}
	writeJSON(w, http.StatusOK, out)
}

// toDeliveredJSON is the answer's form of p.
func toDeliveredJSON(p *catalog.Preview) *deliveredJSON {
	d := &deliveredJSON{Filtered: p.Filtered}
	switch {
	case p.TransformError != "":
		d.TransformError = &p.TransformError
	case !p.Filtered:
		d.ContentType = p.Encoded.ContentType
		if len(p.Encoded.Header) > 0 {
			d.Headers = make(map[string]string, len(p.Encoded.Header))
			for _, h := range p.Encoded.Header {
				d.Headers[h[0]] = h[1]
			}
		}
		if utf8.Valid(p.Encoded.Body) {
			b := string(p.Encoded.Body)
			d.Body = &b
		} else {
			b := base64.StdEncoding.EncodeToString(p.Encoded.Body)
			d.BodyBase64 = &b
		}
	}
	return d
}
