package console

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
)

// base is what every group of pages shares: the store the pages read, the
// scheduler's live view of the endpoints (nil: none runs here, the
// store's health is shown), the clock, and the page machinery
// (render.go). Each group is a type of its own that embeds it
// (subscriptionPages, …), so no type holds every handler.
type base struct {
	store Store
	live  endpoint.Live
	now   func() time.Time
	*pages
}

// accountParam returns the account a list shows. An account key's is its
// own: naming another in ?account_id= is a 404, as if it did not exist. An
// admin's is the one ?account_id= names (404 when there is none), or ""
// (every account) without it.
func (b base) accountParam(w http.ResponseWriter, r *http.Request, v *visit) (string, bool) {
	id := r.URL.Query().Get("account_id")
	if !v.admin() {
		own := account.OrDefault(v.AccountID)
		if id != "" && id != own {
			b.errorPage(w, r, v, http.StatusNotFound, "There is no account "+id+".")
			return "", false
		}
		return own, true
	}
	if id == "" {
		return "", true
	}
	if _, err := b.store.GetAccount(r.Context(), id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			b.errorPage(w, r, v, http.StatusNotFound, "There is no account "+id+".")
		} else {
			b.storeError(w, r, v, err)
		}
		return "", false
	}
	return id, true
}

// accountChoices returns the accounts an admin picks from (the first
// store.MaxLimit; another is reached with ?account_id=), none for an
// account key; false when it answered an error.
func (b base) accountChoices(w http.ResponseWriter, r *http.Request, v *visit) ([]account.Account, bool) {
	if !v.admin() {
		return nil, true
	}
	accs, _, err := b.store.ListAccounts(r.Context(), store.Page{Limit: store.MaxLimit})
	if err != nil {
		b.storeError(w, r, v, err)
		return nil, false
	}
	return accs, true
}

// failed answers for the error of a change of the what of id, and reports
// whether there was one: the 404 page when it was deleted meanwhile
// (store.ErrNotFound), the store's error page otherwise.
func (b base) failed(w http.ResponseWriter, r *http.Request, v *visit, what, id string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, store.ErrNotFound):
		b.errorPage(w, r, v, http.StatusNotFound, "There is no "+what+" "+id+".")
	default:
		b.storeError(w, r, v, err)
	}
	return true
}

// withQuery returns path with the parameters of q that are not empty.
func withQuery(path string, q url.Values) string {
	kept := url.Values{}
	for k, vs := range q {
		for _, v := range vs {
			if v != "" {
				kept.Add(k, v)
			}
		}
	}
	if len(kept) == 0 {
		return path
	}
	return path + "?" + kept.Encode()
}
