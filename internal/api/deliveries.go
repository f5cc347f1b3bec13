package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/hold"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/store"
)

// deliveryJSON is the delivery resource. Times that have not happened are null.
type deliveryJSON struct {
	ID               string  `json:"id"`
	SubscriptionID   string  `json:"subscription_id"`
	EndpointID       string  `json:"endpoint_id"`
	EventID          string  `json:"event_id"`
	EventSource      string  `json:"event_source"`
	OrderingKey      *string `json:"ordering_key"`
	Status           string  `json:"status"`
	Attempts         int     `json:"attempts"`
	NextAttemptAt    *Time   `json:"next_attempt_at"`
	HeldBy           *string `json:"held_by"`
	LastAttemptAt    *Time   `json:"last_attempt_at"`
	LastStatusCode   *int    `json:"last_status_code"`
	LastOutcome      *string `json:"last_outcome"`
	DeadLetterReason *string `json:"dead_letter_reason"`
	CreatedAt        Time    `json:"created_at"`
	DeliveredAt      *Time   `json:"delivered_at"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// holds returns the hold reader of one response (hold.Reader): each
// endpoint is read once, from the scheduler's live view when it holds the
// endpoint, else from the store; each queued delivery's subscription once.
func (s *Server) holds(ctx context.Context) *hold.Reader {
	return hold.NewReader(ctx, s.Live, s.Clock.Now(), s.Store.GetEndpoint, s.Store.GetSubscription)
}

// toDeliveryJSON returns the delivery resource. A pending delivery's
// next_attempt_at is when it can go, and held_by what holds it past its
// own due time (hold.Of): its endpoint's circuit (in probation or
// disabled, nothing goes before the endpoint's next probe, so it is the
// later of the two; frozen, nothing goes until the endpoint is enabled, so
// it is unknown: null) or, once due, its endpoint's rate limit (the
// bucket's next token). A queued delivery of a push subscription that is
// not active is held by it (subscription_deactivated,
// subscription_awaiting_validation), with no next_attempt_at.
func toDeliveryJSON(d delivery.Delivery, holds *hold.Reader) deliveryJSON {
	out := deliveryJSON{
		ID: d.ID, SubscriptionID: d.SubscriptionID, EndpointID: d.EndpointID,
		EventID: d.EventID, EventSource: d.EventSource, OrderingKey: optString(d.OrderingKey), Status: string(d.Status),
		Attempts: d.Attempts, LastAttemptAt: optTime(d.LastAttemptAt),
		LastOutcome: optString(d.LastOutcome), DeadLetterReason: optString(d.DeadLetterReason),
		CreatedAt: timestamp(d.CreatedAt), DeliveredAt: optTime(d.DeliveredAt),
	}
	h := holds.Of(d)
	out.HeldBy, out.NextAttemptAt = optString(h.By), optTime(h.Next)
	if d.LastStatusCode != 0 {
		c := d.LastStatusCode
		out.LastStatusCode = &c
	}
	return out
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	f := store.DeliveryFilter{AccountID: accountOf(r), SubscriptionID: subscriptionFilter.in(r),
		Status: delivery.Status(statusFilter.in(r)), EventID: eventFilter.in(r), OrderingKey: orderingKeyFilter.in(r), Page: p}
	if f.OrderingKey != "" && f.SubscriptionID == "" {
		invalid(w, orderingKeyFilter.name, "ordering keys are a subscription's: add subscription_id")
		return
	}
	if _, ok := r.URL.Query()[urlFilter.name]; ok {
		if f.Status != delivery.StatusQueued {
			invalid(w, urlFilter.name, "url filters the queued deliveries: add status=queued")
			return
		}
		f.EndpointID = s.Store.EndpointID(f.AccountID, urlFilter.in(r))
	}
	if f.Status == delivery.StatusQueued {
		// Queued deliveries are listed with their events: what a
		// subscriber fetching its queue needs.
		s.listQueued(w, r, f)
		return
	}
	f.AccountID = s.listAccount(r, f.AccountID, f.SubscriptionID)
	ds, next, err := s.Store.ListDeliveries(r.Context(), f)
	if err != nil {
		s.storeError(w, r, err, "delivery")
		return
	}
	holds := s.holds(r.Context())
	writeList(w, ds, next, func(d delivery.Delivery) deliveryJSON { return toDeliveryJSON(d, holds) })
}

// listAccount is the account condition of a list of acc's deliveries
// filtered by subscriptionID: "" (none) when the subscription is the
// account's, for a subscription is of one account and its own index then
// serves the list alone (with the account's condition too, PostgreSQL's
// planner may prefer the account's index under stale statistics, and sort:
// 1.3 s at a million deliveries, docs/benchmarks.md); acc otherwise
// (no subscription filter, another account's subscription, or one deleted,
// whose deliveries the account keeps).
func (s *Server) listAccount(r *http.Request, acc, subscriptionID string) string {
	if subscriptionID == "" || acc == "" {
		return acc
	}
	sub, err := s.Store.GetSubscription(r.Context(), subscriptionID)
	if err != nil || account.OrDefault(sub.AccountID) != account.OrDefault(acc) {
		return acc
	}
	return ""
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) {
	d, ok := s.ownDelivery(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, toDeliveryJSON(d, s.holds(r.Context())))
}

// attemptJSON is one row of a delivery's attempt log.
type attemptJSON struct {
	Number       int     `json:"number"`
	StartedAt    Time    `json:"started_at"`
	DurationMS   float64 `json:"duration_ms"`
	StatusCode   *int    `json:"status_code"`
	Outcome      string  `json:"outcome"`
	Error        *string `json:"error"`
	ResponseBody string  `json:"response_body"`
}

func (s *Server) listAttempts(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, ok := s.ownDelivery(w, r); !ok {
		return
	}
	as, next, err := s.Store.ListAttempts(r.Context(), id, p)
	if err != nil {
		s.storeError(w, r, err, "delivery")
		return
	}
	writeList(w, as, next, func(a delivery.Attempt) attemptJSON {
		j := attemptJSON{
			Number: a.Number, StartedAt: timestamp(a.StartedAt), DurationMS: float64(a.Duration.Microseconds()) / 1000,
			Outcome: a.Outcome, Error: optString(redact.Text(a.Error)), ResponseBody: strings.ToValidUTF8(string(a.ResponseBody), "\uFFFD"),
		}
		if a.StatusCode != 0 {
			c := a.StatusCode
			j.StatusCode = &c
		}
		return j
	})
}

// redeliver makes a delivery due now with a fresh attempt budget.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.ownDelivery(w, r); !ok {
		return
	}
	d, err := s.Control.Redeliver(r.Context(), r.PathValue("id"))
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			conflict(w, "", "an attempt of this delivery is in progress; try again when it ends")
			return
		}
		s.storeError(w, r, err, "delivery")
		return
	}
	writeJSON(w, http.StatusAccepted, toDeliveryJSON(d, s.holds(r.Context())))
}

// deadLetterJSON is a dead-lettered delivery with Event Grid's dead-letter
// fields (reason, attempts, last outcome, publish and last attempt times)
// and the event itself, with its schema errors when it was published
// breaking its type's schema under schema_validation warn.
type deadLetterJSON struct {
	deliveryJSON
	DeliveryAttempts        int             `json:"delivery_attempts"`
	LastDeliveryOutcome     string          `json:"last_delivery_outcome"`
	PublishTime             Time            `json:"publish_time"`
	LastDeliveryAttemptTime *Time           `json:"last_delivery_attempt_time"`
	Event                   json.RawMessage `json:"event"`
	SchemaErrors            json.RawMessage `json:"schema_errors,omitempty"`
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	sub := subscriptionFilter.in(r)
	dls, next, err := s.Store.ListDeadLetters(r.Context(), store.DeadLetterFilter{AccountID: s.listAccount(r, accountOf(r), sub), SubscriptionID: sub, Page: p})
	if err != nil {
		s.storeError(w, r, err, "dead letter")
		return
	}
	holds := s.holds(r.Context()) // nothing holds a dead letter: read nothing
	writeList(w, dls, next, func(dl store.DeadLetter) deadLetterJSON {
		ev := json.RawMessage(dl.Event.Payload)
		if !json.Valid(ev) {
			ev = json.RawMessage("null")
		}
		return deadLetterJSON{
			deliveryJSON: toDeliveryJSON(dl.Delivery, holds), DeliveryAttempts: dl.Attempts,
			LastDeliveryOutcome: dl.LastOutcome, PublishTime: timestamp(dl.Event.PublishedAt),
			LastDeliveryAttemptTime: optTime(dl.LastAttemptAt), Event: ev, SchemaErrors: schemaErrors(dl.Event.SchemaErrors),
		}
	})
}

// maxRedriveIDs bounds the ids of one redrive.
const maxRedriveIDs = 1000

// redrive moves dead letters back to pending with a fresh attempt budget:
// with subscription_id, all of the subscription's when ids is absent or
// null, else those of ids that are its; without it, those of ids that are
// the account's, whichever their subscriptions. An empty ids redrives none.
func (s *Server) redrive(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SubscriptionID string   `json:"subscription_id"`
		IDs            []string `json:"ids"`
	}
	if !decodeBody(w, r, &in) || !redriveIDsValid(w, in.IDs) {
		return
	}
	var n int
	var err error
	switch {
	case in.SubscriptionID == "" && in.IDs == nil:
		invalid(w, "subscription_id", fmt.Sprintf("subscription_id is required unless ids is given: give subscription_id to redrive "+
			"all of a subscription's dead letters, ids (up to %d delivery ids) to redrive those", maxRedriveIDs))
		return
	case in.SubscriptionID == "" && len(in.IDs) > 0:
		n, err = s.Control.RedriveIDs(r.Context(), accountOf(r), in.IDs)
	case in.SubscriptionID == "": // an empty ids: none
	default:
		if !subscriptionIDs.fits(in.SubscriptionID) {
			notFoundID(w, "subscription_id", &subscriptionIDs, in.SubscriptionID)
			return
		}
		n, err = s.redriveSubscription(r, in.SubscriptionID, in.IDs)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound,
				Field: "subscription_id", Detail: "no subscription " + in.SubscriptionID + " (a deleted subscription's dead letters cannot be redriven)"})
			return
		}
		s.storeError(w, r, err, "dead letter")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"redriven": n})
}

// redriveIDsValid answers 400 naming the member unless ids holds at most
// maxRedriveIDs delivery ids.
func redriveIDsValid(w http.ResponseWriter, ids []string) bool {
	if len(ids) > maxRedriveIDs {
		invalid(w, "ids", fmt.Sprintf("at most %d ids per request", maxRedriveIDs))
		return false
	}
	for i, id := range ids {
		if !deliveryIDs.fits(id) {
			invalid(w, fmt.Sprintf("ids[%d]", i), "must be a delivery id ("+deliveryIDs.shape.String()+")")
			return false
		}
	}
	return true
}

// redriveSubscription redrives the dead letters of the account's
// subscription id: all, or those among ids (none for an empty ids).
// store.ErrNotFound when the account has no such subscription.
func (s *Server) redriveSubscription(r *http.Request, id string, ids []string) (int, error) {
	sub, err := s.Store.GetSubscription(r.Context(), id)
	if err == nil && account.OrDefault(sub.AccountID) != accountOf(r) {
		err = store.ErrNotFound // another account's: as if absent
	}
	// An empty ids moves nothing; the control plane reads no ids as all.
	if err != nil || ids != nil && len(ids) == 0 {
		return 0, err
	}
	return s.Control.Redrive(r.Context(), id, ids)
}

// queuedJSON is a queued delivery with its event (and its schema errors,
// as deadLetterJSON's).
type queuedJSON struct {
	deliveryJSON
	DeliveryCount int             `json:"delivery_count"`
	LockedUntil   *Time           `json:"locked_until"`
	Event         json.RawMessage `json:"event"`
	SchemaErrors  json.RawMessage `json:"schema_errors,omitempty"`
}

func (s *Server) listQueued(w http.ResponseWriter, r *http.Request, f store.DeliveryFilter) {
	qs, next, err := s.Store.ListQueued(r.Context(), f)
	if err != nil {
		s.storeError(w, r, err, "delivery")
		return
	}
	now := s.Clock.Now()
	holds := s.holds(r.Context())
	writeList(w, qs, next, func(q store.DeadLetter) queuedJSON {
		ev := json.RawMessage(q.Event.Payload)
		if !json.Valid(ev) {
			ev = json.RawMessage("null")
		}
		out := queuedJSON{deliveryJSON: toDeliveryJSON(q.Delivery, holds), DeliveryCount: q.Receives, Event: ev,
			SchemaErrors: schemaErrors(q.Event.SchemaErrors)}
		if q.LockedUntil.After(now) {
			out.LockedUntil = optTime(q.LockedUntil)
		}
		return out
	})
}

// schemaErrors returns an event's stored schema errors
// (store.StoredEvent.SchemaErrors, a JSON array written by
// eventtype.StoredErrors) for an answer: nil (omitted) when it has none or
// they are not a JSON array.
func schemaErrors(raw []byte) json.RawMessage {
	if len(raw) == 0 || raw[0] != '[' || !json.Valid(raw) {
		return nil
	}
	return raw
}
