package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
)

// AccountControl is how the console's forms make accounts and make and
// revoke keys: the calls the API's POST /v1/accounts, POST /v1/keys and
// DELETE /v1/keys/{id} make (control.Accounts), which flush the
// authenticator's cache so that a revoked key stops working on this node
// at once (and its console sessions end with it: session.go).
type AccountControl interface {
	// CreateAccount stores an account made by account.Input's New:
	// store.ErrNameTaken.
	CreateAccount(ctx context.Context, a account.Account) error
	// CreateKey stores a key made by auth.NewKey: store.ErrNotFound when
	// its account does not exist.
	CreateKey(ctx context.Context, k account.Key) error
	// DeleteKey revokes a key: store.ErrNotFound when absent.
	DeleteKey(ctx context.Context, id string) error
}

// accountPages are the admin's pages of accounts and their API keys. An
// account key is answered the 404 page on each (adminOnly), as if they did
// not exist.
type accountPages struct {
	base
	accounts AccountControl
	clock    clock.Clock
}

// routes adds the account pages' routes to mux, each for admins only, each
// POST wrapped in the CSRF check (s.change).
func (ap *accountPages) routes(mux *http.ServeMux, s *sessions) {
	mux.Handle("GET /console/accounts", s.signedIn(ap.adminOnly(ap.list)))
	mux.Handle("POST /console/accounts", s.signedIn(ap.adminOnly(s.change(ap.create))))
	mux.Handle("GET /console/accounts/{id}", s.signedIn(ap.adminOnly(ap.account)))
	mux.Handle("POST /console/accounts/{id}/keys", s.signedIn(ap.adminOnly(s.change(ap.createKey))))
	mux.Handle("GET /console/accounts/{id}/keys/{key}/revoke", s.signedIn(ap.adminOnly(ap.confirmRevoke)))
	mux.Handle("POST /console/accounts/{id}/keys/{key}/revoke", s.signedIn(ap.adminOnly(s.change(ap.revoke))))
}

// adminOnly runs h for an admin's session; an account key's is answered
// the 404 page, as a path the console does not serve.
func (ap *accountPages) adminOnly(h sessionHandler) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visit) {
		if !v.admin() {
			ap.errorPage(w, r, v, http.StatusNotFound, "There is no page "+r.URL.Path+".")
			return
		}
		h(w, r, v)
	}
}

// accountsView is the accounts list and its create form.
type accountsView struct {
	Items []account.Account
	pageLinks
	// Name and Problem are the create form's, after a refused one.
	Name    string
	Problem formProblem
}

// list shows a page of accounts after ?cursor=, and the create form.
func (ap *accountPages) list(w http.ResponseWriter, r *http.Request, v *visit) {
	ap.showList(w, r, v, http.StatusOK, accountsView{})
}

// showList renders the accounts list (the page of ?cursor=) with view's
// form, with status.
func (ap *accountPages) showList(w http.ResponseWriter, r *http.Request, v *visit, status int, view accountsView) {
	cursor := r.URL.Query().Get("cursor")
	accs, next, err := ap.store.ListAccounts(r.Context(), store.Page{Cursor: cursor, Limit: listSize})
	if err != nil {
		ap.storeError(w, r, v, err)
		return
	}
	view.Items = accs
	view.pageLinks = newPageLinks(cursor, next, func(c string) string { return withQuery("/console/accounts", url.Values{"cursor": {c}}) })
	ap.render(w, r, status, "accounts", v, "Accounts", view)
}

// create takes the create form (field name): the account is made as the
// API's POST /v1/accounts makes it (account.Input's New, then
// CreateAccount), and the browser goes to its page. A problem is shown on
// the form, naming the field, and nothing is made.
func (ap *accountPages) create(w http.ResponseWriter, r *http.Request, v *visit) {
	name := r.PostForm.Get("name")
	now := ap.clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	a, ierr := account.Input{Name: &name}.New(ids.New("acc_", now), now)
	view := accountsView{Name: name}
	if ierr != nil {
		view.Problem = formProblem{ierr.Field, ierr.Detail, http.StatusBadRequest}
	} else if err := ap.accounts.CreateAccount(r.Context(), a); errors.Is(err, store.ErrNameTaken) {
		view.Problem = formProblem{"name", "an account named " + strconv.Quote(name) + " already exists", http.StatusConflict}
	} else if err != nil {
		ap.storeError(w, r, v, err)
		return
	}
	if view.Problem.status != 0 {
		ap.showList(w, r, v, view.Problem.status, view)
		return
	}
	redirect(w, r, "/console/accounts/"+a.ID+"?done=created")
}

// accountView is an account's page: the account, a page of its keys
// (never their secrets: Herald keeps only their hashes) and the create
// key form.
type accountView struct {
	Account account.Account
	Keys    []account.Key
	pageLinks
	// Roles are the roles the create key form offers.
	Roles []string
	// Form and Problem are the create key form's, after a refused one.
	Form    keyForm
	Problem formProblem
	// Notice says what the action the page follows did.
	Notice string
	// Created is the key just made, and Secret its secret, shown this
	// once.
	Created *account.Key
	Secret  string
}

// keyForm is the create key form's fields.
type keyForm struct{ Name, Role string }

// accountNotices are what an account's page says after its forms (?done=).
var accountNotices = map[string]string{
	"created": "Account created. Make a key for it below.",
	"revoked": "Key revoked: it no longer works, and the console sessions signed in with it have ended.",
	// A key revoked by someone else between the confirmation and its form.
	"revoked-unchanged": "Nothing changed: the key was revoked already.",
}

// account shows an account, a page of its keys after ?cursor=, and the
// create key form.
func (ap *accountPages) account(w http.ResponseWriter, r *http.Request, v *visit) {
	ap.showAccount(w, r, v, http.StatusOK, accountView{Notice: accountNotices[r.URL.Query().Get("done")]})
}

// showAccount renders the account of the path's id (the 404 page when
// there is none) with view's form and notice, with status.
func (ap *accountPages) showAccount(w http.ResponseWriter, r *http.Request, v *visit, status int, view accountView) {
	a, ok := ap.pathAccount(w, r, v)
	if !ok {
		return
	}
	cursor := r.URL.Query().Get("cursor")
	keys, next, err := ap.store.ListKeys(r.Context(), a.ID, store.Page{Cursor: cursor, Limit: listSize})
	if err != nil {
		ap.storeError(w, r, v, err)
		return
	}
	view.Account, view.Keys = a, keys
	view.pageLinks = newPageLinks(cursor, next, func(c string) string {
		return withQuery("/console/accounts/"+a.ID, url.Values{"cursor": {c}})
	})
	view.Roles = keyRoles(a.ID)
	if view.Form.Role == "" {
		view.Form.Role = account.RoleAccount
	}
	ap.render(w, r, status, "account", v, "Account "+a.Name, view)
}

// keyRoles are the roles of the keys an account may hold: admin keys
// belong to the default account only (account.KeySpec's Check).
func keyRoles(accountID string) []string {
	if accountID == account.DefaultID {
		return []string{account.RoleAccount, account.RolePublish, account.RoleAdmin}
	}
	return []string{account.RoleAccount, account.RolePublish}
}

// pathAccount reads the account of the path's id, answering the 404 page
// when there is none.
func (ap *accountPages) pathAccount(w http.ResponseWriter, r *http.Request, v *visit) (account.Account, bool) {
	return own(ap.base, w, r, v, "account", ap.store.GetAccount, func(a account.Account) string { return a.ID })
}

// createKey takes the create key form (fields name, role): the key is
// made as the API's POST /v1/keys makes it (account.KeyInput's Spec and
// Check, auth.NewKey, CreateKey), and the account's page shows its
// secret, this once. A problem is shown on the form, naming the field,
// and nothing is made.
func (ap *accountPages) createKey(w http.ResponseWriter, r *http.Request, v *visit) {
	a, ok := ap.pathAccount(w, r, v)
	if !ok {
		return
	}
	f := keyForm{Name: r.PostForm.Get("name"), Role: r.PostForm.Get("role")}
	in := account.KeyInput{AccountID: &a.ID, Name: &f.Name}
	if f.Role != "" {
		in.Role = &f.Role
	}
	spec, ierr := in.Spec(a.ID)
	if ierr == nil {
		ierr = spec.Check()
	}
	if ierr != nil {
		ap.showAccount(w, r, v, http.StatusBadRequest, accountView{Form: f,
			Problem: formProblem{ierr.Field, ierr.Detail, http.StatusBadRequest}})
		return
	}
	secret, k := auth.NewKey(spec.AccountID, spec.Role, spec.Name, ap.clock.Now().UTC().Truncate(time.Millisecond))
	if ap.failed(w, r, v, "account", a.ID, ap.accounts.CreateKey(r.Context(), k)) {
		return
	}
	ap.showAccount(w, r, v, http.StatusCreated, accountView{Created: &k, Secret: secret})
}

// revokeView is the revoke confirmation's page.
type revokeView struct {
	Account account.Account
	Key     account.Key
}

// pathKey reads the account and key of the path (the 404 page when
// either is absent, or the key is of another account).
func (ap *accountPages) pathKey(w http.ResponseWriter, r *http.Request, v *visit) (revokeView, bool) {
	a, ok := ap.pathAccount(w, r, v)
	if !ok {
		return revokeView{}, false
	}
	id := r.PathValue("key")
	k, err := ap.store.GetKey(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && account.OrDefault(k.AccountID) != a.ID {
		ap.errorPage(w, r, v, http.StatusNotFound, "There is no key "+id+" in account "+a.ID+".")
		return revokeView{}, false
	}
	if err != nil {
		ap.storeError(w, r, v, err)
		return revokeView{}, false
	}
	return revokeView{Account: a, Key: k}, true
}

// confirmRevoke asks whether to revoke the key, saying what becomes of
// whoever uses it.
func (ap *accountPages) confirmRevoke(w http.ResponseWriter, r *http.Request, v *visit) {
	view, ok := ap.pathKey(w, r, v)
	if !ok {
		return
	}
	title := "Revoke key " + strings.TrimSpace(view.Key.Name+" "+view.Key.ID)
	ap.render(w, r, http.StatusOK, "key_revoke", v, title, view)
}

// revoke takes the confirmation's form: the key is revoked as the API's
// DELETE /v1/keys/{id} revokes it (DeleteKey), and the browser goes back
// to its account's page. Revoking the key this session signed in with
// ends the session: the browser is then sent to sign in. A key revoked
// meanwhile (between the confirmation and its form) is as asked, and the
// page says it was revoked already.
func (ap *accountPages) revoke(w http.ResponseWriter, r *http.Request, v *visit) {
	view, ok := ap.pathKey(w, r, v)
	if !ok {
		return
	}
	done := "revoked"
	err := ap.accounts.DeleteKey(r.Context(), view.Key.ID)
	switch {
	case errors.Is(err, store.ErrNotFound): // revoked meanwhile: as asked, but not by this form
		done = "revoked-unchanged"
	case err != nil:
		ap.storeError(w, r, v, err)
		return
	}
	redirect(w, r, "/console/accounts/"+view.Account.ID+"?done="+done)
}
