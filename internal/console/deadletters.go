package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
)

// deadLettersView is the dead letters page: a page of dead-lettered
// deliveries, newest first, each with a checkbox for the redrive form.
type deadLettersView struct {
	// Accounts are the admin's choices (accountChoices); Account is the
	// account shown, "" for every account.
	Accounts       []account.Account
	Account        string
	SubscriptionID string
	Items          []deliveryRow
	pageLinks
	// Notice says what the redrive the page follows did.
	Notice string
}

// deadLetters shows a page of the dead letters of the key's account, or
// for an admin of the account picked (?account_id=, every account when
// none), of one subscription with ?subscription_id=, after ?cursor=.
func (dp *deliveryPages) deadLetters(w http.ResponseWriter, r *http.Request, v *visit) {
	acc, ok := dp.accountParam(w, r, v)
	if !ok {
		return
	}
	q := r.URL.Query()
	view := deadLettersView{Account: acc, SubscriptionID: strings.TrimSpace(q.Get("subscription_id"))}
	if view.Accounts, ok = dp.accountChoices(w, r, v); !ok {
		return
	}
	cursor := q.Get("cursor")
	dls, next, err := dp.store.ListDeadLetters(r.Context(), store.DeadLetterFilter{AccountID: acc,
		SubscriptionID: view.SubscriptionID, Page: store.Page{Cursor: cursor, Limit: listSize}})
	if err != nil {
		dp.storeError(w, r, v, err)
		return
	}
	view.Items = dp.deadLetterRows(r.Context(), dls)
	view.pageLinks = newPageLinks(cursor, next, func(c string) string {
		return deadLettersURL(acc, view.SubscriptionID, url.Values{"cursor": {c}})
	})
	if n, err := strconv.Atoi(q.Get("redriven")); err == nil && n >= 0 {
		view.Notice = redrivenText(n)
	}
	dp.render(w, r, http.StatusOK, "deadletters", v, "Dead letters", view)
}

// deadLettersURL is the URL of the dead letters of acc and sub, with the
// parameters of more.
func deadLettersURL(acc, sub string, more url.Values) string {
	q := url.Values{"account_id": {acc}, "subscription_id": {sub}}
	for k, vs := range more {
		q[k] = vs
	}
	return withQuery("/console/dead-letters", q)
}

// redrivenText says how many dead letters a redrive moved.
func redrivenText(n int) string {
	switch n {
	case 0:
		return "No dead letters were redriven: those selected are no longer dead letters."
	case 1:
		return "1 dead letter redriven: it is due now, with a fresh attempt budget."
	}
	return strconv.Itoa(n) + " dead letters redriven: they are due now, with a fresh attempt budget."
}

// redrive takes the dead letters page's form: the selected dead letters
// (form fields id, at most listSize delivery IDs; account_id and
// subscription_id say which list to return to) are redriven, as the API's
// POST /v1/dead-letters/redrive {"ids": […]} does (Control.RedriveIDs),
// and the browser goes back to the list, which says how many moved. An
// account key redrives its own account's only; an admin's, each one's in
// its own account. None selected, or a value that is not a delivery ID,
// is a 400 page saying so, and nothing changes.
func (dp *deliveryPages) redrive(w http.ResponseWriter, r *http.Request, v *visit) {
	sel := r.PostForm["id"]
	switch {
	case len(sel) == 0:
		dp.errorPage(w, r, v, http.StatusBadRequest, "Select the dead letters to redrive (id): none was selected, so nothing changed.")
		return
	case len(sel) > listSize:
		dp.errorPage(w, r, v, http.StatusBadRequest, "id: at most "+strconv.Itoa(listSize)+" dead letters at a time; nothing changed.")
		return
	}
	for _, id := range sel {
		if !ids.Delivery.Fits(id) {
			dp.errorPage(w, r, v, http.StatusBadRequest, "id: "+id+" is not a delivery ID ("+ids.Delivery.String()+"); nothing changed.")
			return
		}
	}
	byAccount, ok := dp.accountsOf(w, r, v, sel)
	if !ok {
		return
	}
	total := 0
	for acc, ids := range byAccount {
		n, err := dp.control.RedriveIDs(r.Context(), acc, ids)
		total += n
		if err != nil {
			dp.storeError(w, r, v, err)
			return
		}
	}
	back := deadLettersURL(r.PostForm.Get("account_id"), r.PostForm.Get("subscription_id"), url.Values{"redriven": {strconv.Itoa(total)}})
	redirect(w, r, back)
}

// accountsOf groups the delivery IDs sel by the account a redrive takes
// them in: an account key's own for all; for an admin, each delivery's
// (one read each; those that do not exist are left out, as a redrive
// ignores them). false when it answered an error.
func (dp *deliveryPages) accountsOf(w http.ResponseWriter, r *http.Request, v *visit, sel []string) (map[string][]string, bool) {
	if !v.admin() {
		return map[string][]string{account.OrDefault(v.AccountID): sel}, true
	}
	out := map[string][]string{}
	for _, id := range sel {
		d, err := dp.store.GetDelivery(r.Context(), id)
		switch {
		case err == nil:
			acc := account.OrDefault(d.AccountID)
			out[acc] = append(out[acc], id)
		case !errors.Is(err, store.ErrNotFound):
			dp.storeError(w, r, v, err)
			return nil, false
		}
	}
	return out, true
}
