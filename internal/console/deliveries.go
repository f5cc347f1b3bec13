package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// deliveryPages are the deliveries search (here), one delivery with its
// attempts and the redeliver form (delivery.go), and the dead letters
// with the redrive form (deadletters.go). The forms change deliveries
// through control, as the API's redeliver and redrive do.
type deliveryPages struct {
	base
	control Control
}

// deliveriesView is the deliveries search: its form's values as given,
// and a page of the deliveries matching them, newest first.
type deliveriesView struct {
	// Accounts are the admin's choices (accountChoices); Account is the
	// account searched, "" for every account.
	Accounts []account.Account
	Account  string
	Statuses []delivery.Status
	Search   deliverySearch
	// Invalid names the search's field that is not valid and why; the
	// page then lists nothing.
	Invalid string
	Items   []deliveryRow
	pageLinks
}

// deliverySearch is the search form's fields, as the URL gives them.
type deliverySearch struct {
	Status, SubscriptionID, EventID, Since, Before string
}

// timeLayouts are the forms a search's times may take: what a browser's
// datetime-local field sends (in UTC, which the page says), and RFC 3339.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano}

// parseTime reads a search's time field; the zero time for "".
func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// filter returns the store's filter of the search, or the field that is
// not valid and why.
func (s deliverySearch) filter() (store.DeliveryFilter, string) {
	f := store.DeliveryFilter{SubscriptionID: s.SubscriptionID, EventID: s.EventID, Status: delivery.Status(s.Status)}
	if s.Status != "" && !f.Status.Valid() {
		return f, "status: pick one of the list's statuses."
	}
	var ok bool
	if f.Since, ok = parseTime(s.Since); !ok {
		return f, "published after: give a time as 2026-01-05T09:30 (UTC)."
	}
	if f.Before, ok = parseTime(s.Before); !ok {
		return f, "published before: give a time as 2026-01-05T09:30 (UTC)."
	}
	return f, ""
}

// query is the search as URL parameters, with acc and cursor.
func (s deliverySearch) query(acc, cursor string) url.Values {
	return url.Values{"account_id": {acc}, "status": {s.Status}, "subscription_id": {s.SubscriptionID},
		"event_id": {s.EventID}, "since": {s.Since}, "before": {s.Before}, "cursor": {cursor}}
}

// deliveries shows a page of the deliveries matching the search in the
// URL (status, subscription_id, event_id, since, before; all optional) of
// the key's account, or for an admin of the account picked (?account_id=,
// every account when none), after ?cursor=. A field that is not valid is
// a 400 page naming it, with the form.
func (dp *deliveryPages) deliveries(w http.ResponseWriter, r *http.Request, v *visit) {
	acc, ok := dp.accountParam(w, r, v)
	if !ok {
		return
	}
	q := r.URL.Query()
	view := deliveriesView{Account: acc, Statuses: delivery.Statuses, Search: deliverySearch{
		Status: q.Get("status"), SubscriptionID: strings.TrimSpace(q.Get("subscription_id")),
		EventID: strings.TrimSpace(q.Get("event_id")), Since: q.Get("since"), Before: q.Get("before")}}
	if view.Accounts, ok = dp.accountChoices(w, r, v); !ok {
		return
	}
	f, invalid := view.Search.filter()
	if invalid != "" {
		view.Invalid = invalid
		dp.render(w, r, http.StatusBadRequest, "deliveries", v, "Deliveries", view)
		return
	}
	cursor := q.Get("cursor")
	f.AccountID, f.Page = acc, store.Page{Cursor: cursor, Limit: listSize}
	ds, next, err := dp.store.ListDeliveries(r.Context(), f)
	if err != nil {
		dp.storeError(w, r, v, err)
		return
	}
	view.Items = dp.rowsOf(r.Context(), ds)
	view.pageLinks = newPageLinks(cursor, next, func(c string) string { return withQuery("/console/deliveries", view.Search.query(acc, c)) })
	dp.render(w, r, http.StatusOK, "deliveries", v, "Deliveries", view)
}
