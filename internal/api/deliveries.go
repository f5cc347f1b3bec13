package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// deliveryJSON is the delivery resource. Times that have not happened are null.
type deliveryJSON struct {
	ID               string     `json:"id"`
	SubscriptionID   string     `json:"subscription_id"`
	EndpointID       string     `json:"endpoint_id"`
	EventID          string     `json:"event_id"`
	EventSource      string     `json:"event_source"`
	Status           string     `json:"status"`
	Attempts         int        `json:"attempts"`
	NextAttemptAt    *time.Time `json:"next_attempt_at"`
	LastAttemptAt    *time.Time `json:"last_attempt_at"`
	LastStatusCode   *int       `json:"last_status_code"`
	LastOutcome      *string    `json:"last_outcome"`
	DeadLetterReason *string    `json:"dead_letter_reason"`
	CreatedAt        time.Time  `json:"created_at"`
	DeliveredAt      *time.Time `json:"delivered_at"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toDeliveryJSON(d store.Delivery) deliveryJSON {
	out := deliveryJSON{
		ID: d.ID, SubscriptionID: d.SubscriptionID, EndpointID: d.EndpointID,
		EventID: d.EventID, EventSource: d.EventSource, Status: string(d.Status),
		Attempts: d.Attempts, LastAttemptAt: optTime(d.LastAttemptAt),
		LastOutcome: optString(d.LastOutcome), DeadLetterReason: optString(d.DeadLetterReason),
		CreatedAt: d.CreatedAt.UTC(), DeliveredAt: optTime(d.DeliveredAt),
	}
	if d.Status == store.StatusPending {
		out.NextAttemptAt = optTime(d.NextAttemptAt)
	}
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
	q := r.URL.Query()
	f := store.DeliveryFilter{SubscriptionID: q.Get("subscription_id"), Status: store.Status(q.Get("status")), EventID: q.Get("event_id"), Page: p}
	if f.Status != "" && !f.Status.Valid() {
		invalid(w, "status", "status must be one of pending, delivered, dead_lettered, dropped, queued")
		return
	}
	ds, next, err := s.Store.ListDeliveries(r.Context(), f)
	if err != nil {
		s.storeError(w, r, err, "delivery")
		return
	}
	writeList(w, ds, next, toDeliveryJSON)
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := s.Store.GetDelivery(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "delivery")
		return
	}
	writeJSON(w, http.StatusOK, toDeliveryJSON(d))
}

// attemptJSON is one row of a delivery's attempt log.
type attemptJSON struct {
	Number       int       `json:"number"`
	StartedAt    time.Time `json:"started_at"`
	DurationMS   float64   `json:"duration_ms"`
	StatusCode   *int      `json:"status_code"`
	Outcome      string    `json:"outcome"`
	Error        *string   `json:"error"`
	ResponseBody string    `json:"response_body"`
}

func (s *Server) listAttempts(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := s.Store.GetDelivery(r.Context(), id); err != nil {
		s.storeError(w, r, err, "delivery")
		return
	}
	as, next, err := s.Store.ListAttempts(r.Context(), id, p)
	if err != nil {
		s.storeError(w, r, err, "delivery")
		return
	}
	writeList(w, as, next, func(a store.AttemptRecord) attemptJSON {
		j := attemptJSON{
			Number: a.Number, StartedAt: a.StartedAt.UTC(), DurationMS: float64(a.Duration.Microseconds()) / 1000,
			Outcome: a.Outcome, Error: optString(a.Error), ResponseBody: strings.ToValidUTF8(string(a.ResponseBody), "\uFFFD"),
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
	d, err := s.Control.Redeliver(r.Context(), r.PathValue("id"))
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			conflict(w, "", "an attempt of this delivery is in progress; try again when it ends")
			return
		}
		s.storeError(w, r, err, "delivery")
		return
	}
	writeJSON(w, http.StatusAccepted, toDeliveryJSON(d))
}

// deadLetterJSON is a dead-lettered delivery with Event Grid's dead-letter
// fields (reason, attempts, last outcome, publish and last attempt times)
// and the event itself.
type deadLetterJSON struct {
	deliveryJSON
	DeliveryAttempts        int             `json:"delivery_attempts"`
	LastDeliveryOutcome     string          `json:"last_delivery_outcome"`
	PublishTime             time.Time       `json:"publish_time"`
	LastDeliveryAttemptTime *time.Time      `json:"last_delivery_attempt_time"`
	Event                   json.RawMessage `json:"event"`
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	dls, next, err := s.Store.ListDeadLetters(r.Context(), store.DeadLetterFilter{SubscriptionID: r.URL.Query().Get("subscription_id"), Page: p})
	if err != nil {
		s.storeError(w, r, err, "dead letter")
		return
	}
	writeList(w, dls, next, func(dl store.DeadLetter) deadLetterJSON {
		ev := json.RawMessage(dl.Event.Payload)
		if !json.Valid(ev) {
			ev = json.RawMessage("null")
		}
		return deadLetterJSON{
			deliveryJSON: toDeliveryJSON(dl.Delivery), DeliveryAttempts: dl.Attempts,
			LastDeliveryOutcome: dl.LastOutcome, PublishTime: dl.Event.PublishedAt.UTC(),
			LastDeliveryAttemptTime: optTime(dl.LastAttemptAt), Event: ev,
		}
	})
}

// redrive moves a subscription's dead letters (all, or the ids listed) back
// to pending with a fresh attempt budget.
func (s *Server) redrive(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SubscriptionID string   `json:"subscription_id"`
		IDs            []string `json:"ids"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.SubscriptionID == "" {
		invalid(w, "subscription_id", "subscription_id is required")
		return
	}
	if len(in.IDs) > 1000 {
		invalid(w, "ids", "at most 1000 ids per request")
		return
	}
	n, err := s.Control.Redrive(r.Context(), in.SubscriptionID, in.IDs)
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
