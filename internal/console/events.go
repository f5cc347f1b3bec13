package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
)

// payloadBytes bounds the payload the events page shows (an event may
// hold up to event.MaxBodyBytes); a longer one is cut, and the page says
// so.
const payloadBytes = 64 << 10

// eventPages are the events page: an event looked up by its ID.
type eventPages struct{ base }

// eventsView is the events page: the ID looked up and, found through its
// deliveries, the events of that ID (one per source that used it) with
// their payloads, and a page of the deliveries, newest first.
type eventsView struct {
	// Accounts are the admin's choices (accountChoices); Account is the
	// account searched, "" for every account.
	Accounts []account.Account
	Account  string
	ID       string
	Events   []eventRow
	// Deliveries are a page of the deliveries of the ID.
	Deliveries []deliveryRow
	pageLinks
}

// eventRow is one stored event: its fields and its payload, indented.
type eventRow struct {
	AccountID, ID, Source, Type, Subject string
	PublishedAt                          time.Time
	Payload                              string
	// Cut: the payload is longer than payloadBytes and shown cut.
	Cut bool
	// Gone: the store keeps its deliveries but no more its payload.
	Gone bool
	// SchemaErrors are how it breaks its type's schema, as kept when it
	// was published under schema_validation warn (none: nil).
	SchemaErrors []eventtype.Violation
}

// event shows the event of ?id= (its CloudEvents id) of the key's account,
// or for an admin of the account picked (?account_id=, every account when
// none): its payload and its deliveries, 50 a page (?cursor=). Herald finds
// an event by its deliveries: one that went to no subscription is not
// found, as the page says.
func (ep *eventPages) event(w http.ResponseWriter, r *http.Request, v *visit) {
	acc, ok := ep.accountParam(w, r, v)
	if !ok {
		return
	}
	view := eventsView{Account: acc, ID: strings.TrimSpace(r.URL.Query().Get("id"))}
	if view.Accounts, ok = ep.accountChoices(w, r, v); !ok {
		return
	}
	if view.ID != "" && !ep.lookUp(w, r, v, &view) {
		return
	}
	ep.render(w, r, http.StatusOK, "events", v, "Events", view)
}

// lookUp fills view with the events of view.ID and a page of their
// deliveries; false when it answered an error.
func (ep *eventPages) lookUp(w http.ResponseWriter, r *http.Request, v *visit, view *eventsView) bool {
	cursor := r.URL.Query().Get("cursor")
	ds, next, err := ep.store.ListDeliveries(r.Context(), store.DeliveryFilter{AccountID: view.Account, EventID: view.ID,
		Page: store.Page{Cursor: cursor, Limit: listSize}})
	if err != nil {
		ep.storeError(w, r, v, err)
		return false
	}
	view.Deliveries = ep.rowsOf(r.Context(), ds)
	view.pageLinks = newPageLinks(cursor, next, func(c string) string {
		return withQuery("/console/events", url.Values{"account_id": {view.Account}, "id": {view.ID}, "cursor": {c}})
	})
	seen := map[int64]bool{}
	for _, d := range ds {
		if seen[d.EventSeq] {
			continue
		}
		seen[d.EventSeq] = true
		row, err := ep.eventOf(r, d)
		if err != nil {
			ep.storeError(w, r, v, err)
			return false
		}
		view.Events = append(view.Events, row)
	}
	return true
}

// eventOf reads the event of the delivery d.
func (ep *eventPages) eventOf(r *http.Request, d delivery.Delivery) (eventRow, error) {
	row := eventRow{AccountID: account.OrDefault(d.AccountID), ID: d.EventID, Source: d.EventSource, PublishedAt: d.CreatedAt}
	e, err := ep.store.GetEvent(r.Context(), d.EventSeq)
	if errors.Is(err, store.ErrNotFound) {
		row.Gone = true
		return row, nil
	}
	if err != nil {
		return row, err
	}
	row.Type, row.Subject, row.PublishedAt = e.Type, e.Subject, e.PublishedAt
	row.Payload, row.Cut = indented(e.Payload)
	if len(e.SchemaErrors) > 0 {
		// Written by eventtype.StoredErrors: a bounded JSON array. What
		// does not read as one shows nothing.
		_ = json.Unmarshal(e.SchemaErrors, &row.SchemaErrors)
	}
	return row, nil
}

// indented returns a payload as indented JSON (as it is when it is not
// JSON), cut to payloadBytes, and whether it was cut.
func indented(payload []byte) (string, bool) {
	var buf bytes.Buffer
	if json.Indent(&buf, payload, "", "  ") == nil {
		payload = buf.Bytes()
	}
	s := excerpt(payload, payloadBytes)
	return s, len(payload) > payloadBytes
}
