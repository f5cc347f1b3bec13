package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/store"
)

// consoleDeliveries and portalDeliveries are where the console's and the
// portal's delivery pages are: a delivery's is the prefix and its ID.
const (
	consoleDeliveries = "/console/deliveries/"
	portalDeliveries  = "/portal/deliveries/"
)

// deliveryTable is a subscription page's table of deliveries (the
// "subscription-deliveries" template): each links to Link and its ID.
type deliveryTable struct {
	Link  string
	Items []deliveryRow
}

// excerptBytes bounds the response body an attempt's row shows (the store
// keeps up to 4 KiB of it).
const excerptBytes = 512

// deliveryView is one delivery's page: its fields, a page of its
// attempts (oldest first), and what the last redeliver did.
type deliveryView struct {
	deliveryRow
	// Endpoint is its endpoint's URL (without its password) and State its
	// circuit's state ("" when it could not be read).
	EndpointURL, EndpointState string
	// Link is where the delivery pages are: consoleDeliveries or
	// portalDeliveries (the page's links and form go there).
	Link     string
	Attempts []attemptRow
	// NextAttempts is the URL of the attempts' next page ("" on the last).
	NextAttempts string
	// Notice says what the redeliver the page follows did; Refused marks
	// it as refused.
	Notice  string
	Refused bool
}

// attemptRow is one attempt as the page shows it.
type attemptRow struct {
	Number     int
	StartedAt  time.Time
	Latency    time.Duration
	StatusCode int
	Outcome    string
	Error      string
	// Excerpt is the start of the response body, as text.
	Excerpt string
}

// redeliverNotices are the messages a redeliver leaves for the page it
// returns to, by the value of its ?redeliver= parameter. Only these
// texts are shown, never the parameter itself.
var redeliverNotices = map[string]struct {
	text    string
	refused bool
}{
	"done":       {"Redelivered: the delivery is due now, with a fresh attempt budget.", false},
	"attempting": {"Not redelivered: an attempt of this delivery is in progress. Try again when it ends.", true},
	"deleted":    {"Not redelivered: its subscription was deleted.", true},
}

// delivery shows one delivery and a page of its attempts (?cursor=): 404
// for one that does not exist, and for an account key one of another
// account.
func (dp *deliveryPages) delivery(w http.ResponseWriter, r *http.Request, v *visit) {
	d, ok := dp.ownDelivery(w, r, v)
	if !ok {
		return
	}
	view, err := newDeliveryView(r, dp.base, d, consoleDeliveries)
	if err != nil {
		dp.storeError(w, r, v, err)
		return
	}
	dp.render(w, r, http.StatusOK, "delivery", v, "Delivery "+d.ID, view)
}

// newDeliveryView returns the page of d at r (its ?cursor= the attempts',
// its ?redeliver= the notice), the delivery pages being under prefix: with
// what holds it (rowOf) and its endpoint's URL and state.
func newDeliveryView(r *http.Request, b base, d delivery.Delivery, prefix string) (deliveryView, error) {
	as, next, err := b.store.ListAttempts(r.Context(), d.ID, store.Page{Cursor: r.URL.Query().Get("cursor"), Limit: listSize})
	if err != nil {
		return deliveryView{}, err
	}
	now := b.now()
	hr := holdReader(r.Context(), b.store, b.live, now)
	view := deliveryView{deliveryRow: rowOf(hr, d, now), Link: prefix, Attempts: attemptRows(as)}
	view.EndpointURL, view.EndpointState = b.endpointState(r.Context(), d.EndpointID)
	if next != "" {
		view.NextAttempts = prefix + d.ID + "?cursor=" + next
	}
	if n, ok := redeliverNotices[r.URL.Query().Get("redeliver")]; ok {
		view.Notice, view.Refused = n.text, n.refused
	}
	return view, nil
}

// excerpt is the start of a body as text: at most limit bytes, not valid
// UTF-8 replaced, "…" after it when cut.
func excerpt(body []byte, limit int) string {
	cut := len(body) > limit
	if cut {
		body = body[:limit]
	}
	s := strings.ToValidUTF8(string(body), "\uFFFD")
	if cut {
		s += "…"
	}
	return s
}

// ownDelivery reads the delivery of the path's id, answering the 404 page
// when there is none or the session may not see it.
func (dp *deliveryPages) ownDelivery(w http.ResponseWriter, r *http.Request, v *visit) (delivery.Delivery, bool) {
	return own(dp.base, w, r, v, "delivery", dp.store.GetDelivery, func(d delivery.Delivery) string { return d.AccountID })
}

// redeliver takes the delivery page's Redeliver form: the delivery is
// made due now with a fresh attempt budget (Control.Redeliver), and the
// browser goes back to its page, which says what happened; a redeliver
// refused (an attempt in progress, its subscription deleted) is said
// there too.
func (dp *deliveryPages) redeliver(w http.ResponseWriter, r *http.Request, v *visit) {
	d, ok := dp.ownDelivery(w, r, v)
	if !ok {
		return
	}
	_, err := dp.control.Redeliver(r.Context(), d.ID)
	result, err := redeliverResult(err)
	switch {
	case errors.Is(err, store.ErrNotFound): // deleted since it was read
		dp.errorPage(w, r, v, http.StatusNotFound, "There is no delivery "+d.ID+".")
		return
	case err != nil:
		dp.storeError(w, r, v, err)
		return
	}
	redirect(w, r, consoleDeliveries+d.ID+"?redeliver="+result)
}

// redeliverResult is the redeliverNotices key for what Control.Redeliver
// returned, or the error a page answers instead.
func redeliverResult(err error) (string, error) {
	switch {
	case err == nil:
		return "done", nil
	case errors.Is(err, store.ErrConflict):
		return "attempting", nil
	case errors.Is(err, store.ErrSubscriptionDeleted):
		return "deleted", nil
	default:
		return "", err
	}
}

// attemptRows returns the rows a delivery's page shows of as.
func attemptRows(as []delivery.Attempt) []attemptRow {
	rows := make([]attemptRow, 0, len(as))
	for _, a := range as {
		rows = append(rows, attemptRow{Number: a.Number, StartedAt: a.StartedAt, Latency: a.Duration,
			StatusCode: a.StatusCode, Outcome: a.Outcome, Error: redact.Text(a.Error), Excerpt: excerpt(a.ResponseBody, excerptBytes)})
	}
	return rows
}
