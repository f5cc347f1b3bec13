package console

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// SubscriptionControl is how the console's forms change subscriptions:
// the calls the API's subscription handlers make (control.Service), which
// sync the catalog and tell the scheduler as the API's do.
type SubscriptionControl interface {
	// CreateSubscription stores a subscription made by subscription.Input's
	// New: store.ErrNameTaken, *store.SubscriptionLimitError.
	CreateSubscription(ctx context.Context, sub subscription.Subscription) error
	// UpdateSubscription reads the subscription, lets change modify it
	// (its error is returned and nothing is written) and stores it.
	UpdateSubscription(ctx context.Context, id string, change func(*subscription.Subscription) error) (subscription.Subscription, error)
	// DeleteSubscription deletes it; its pending deliveries end as dropped.
	DeleteSubscription(ctx context.Context, id string) error
	// Reactivate makes a deactivated push subscription active and pushes
	// its queued deliveries (how many it returns): store.ErrConflict for a
	// pull subscription or one awaiting validation.
	Reactivate(ctx context.Context, id string) (subscription.Subscription, int, error)
	// RotateSecret gives it a new signing key (secret nil: one Herald
	// makes); the current key signs too until now+grace.
	RotateSecret(ctx context.Context, id string, secret []byte, grace time.Duration) (subscription.Subscription, error)
}

// Publisher is how the console sends a test event: admission's PublishTo,
// which the API's POST /v1/subscriptions/{id}/test calls.
type Publisher interface {
	// PublishTo publishes ev for the subscription alone:
	// admission.ErrNoSubscription when it is gone.
	PublishTo(ctx context.Context, accountID, subscriptionID string, ev event.Event) (admission.Targeted, error)
}

// subscriptionActions are the subscriptions' forms: create and edit
// (subscription_form.go, here), delete with its confirmation, reactivate,
// rotate the secret, the filter test and the test event
// (subscription_tools.go), and recover with its job's page (recover.go). Each one changes what the API's route of the
// same name changes, through the same calls (SubscriptionControl,
// subscription.Input, catalog.Try, Publisher), so it is checked and takes
// effect as the API's does.
type subscriptionActions struct {
	base
	control      Control
	publisher    Publisher
	destinations destination.Guard
	clock        clock.Clock
	// eventTypes is the catalog the forms offer event types from (nil:
	// none, the types are typed).
	eventTypes EventTypeCatalog
	// preview finds and tries the forms' preview events
	// (subscription_preview.go).
	preview previewer
}

// routes adds the actions' routes to mux, each POST wrapped in the CSRF
// check (s.change).
func (sa *subscriptionActions) routes(mux *http.ServeMux, s *sessions) {
	mux.Handle("GET /console/subscriptions/new", s.signedIn(sa.newForm))
	mux.Handle("POST /console/subscriptions/new", s.signedIn(s.change(sa.create)))
	mux.Handle("GET /console/subscriptions/{id}/edit", s.signedIn(sa.editForm))
	mux.Handle("POST /console/subscriptions/{id}/edit", s.signedIn(s.change(sa.edit)))
	mux.Handle("POST /console/subscriptions/new/preview", s.signedIn(s.change(formPreviews{sa}.previewNew)))
	mux.Handle("POST /console/subscriptions/{id}/preview", s.signedIn(s.change(formPreviews{sa}.previewEdit)))
	mux.Handle("GET /console/subscriptions/{id}/delete", s.signedIn(sa.confirmDelete))
	mux.Handle("POST /console/subscriptions/{id}/delete", s.signedIn(s.change(sa.delete)))
	mux.Handle("POST /console/subscriptions/{id}/reactivate", s.signedIn(s.change(sa.reactivate)))
	mux.Handle("POST /console/subscriptions/{id}/rotate", s.signedIn(s.change(sa.rotate)))
	mux.Handle("GET /console/subscriptions/{id}/filter-test", s.signedIn(sa.filterTestForm))
	mux.Handle("POST /console/subscriptions/{id}/filter-test", s.signedIn(s.change(sa.filterTest)))
	mux.Handle("POST /console/subscriptions/{id}/test", s.signedIn(s.change(sa.sendTest)))
	mux.Handle("POST /console/subscriptions/{id}/recover", s.signedIn(s.change(sa.recoverSubscription)))
	mux.Handle("GET /console/jobs/{id}", s.signedIn(sa.job))
}

// newForm shows the create form: for an admin with the account to make it
// in (?account_id=, else the default account).
func (sa *subscriptionActions) newForm(w http.ResponseWriter, r *http.Request, v *visit) {
	f := subscriptionForm{Account: account.OrDefault(r.URL.Query().Get("account_id")), Mode: subscription.ModePush}
	if !v.admin() {
		f.Account = account.OrDefault(v.AccountID)
	}
	sa.showForm(w, r, v, http.StatusOK, subscriptionFormView{Form: f})
}

// showForm renders the create or edit form view with status.
func (sa *subscriptionActions) showForm(w http.ResponseWriter, r *http.Request, v *visit, status int, view subscriptionFormView) {
	title := "New subscription"
	if view.ID != "" {
		title = "Edit " + view.Form.Name
	} else {
		var ok bool
		if view.Accounts, ok = sa.accountChoices(w, r, v); !ok {
			return
		}
	}
	view.Presets = presets()
	sa.offerTypes(r, &view)
	var err error
	if view.Preview.Choices, err = sa.preview.choices(r.Context(), view.Form.types(), anyType, view.sub); err != nil {
		sa.storeError(w, r, v, err)
		return
	}
	sa.render(w, r, status, "subscription_form", v, title, view)
}

// offerTypes sets the event types the form offers (typeChoices): the
// catalog's, and the types the subscription takes (or the form was sent
// with) that it leaves out, per the account's settings.catalog_only.
// Without them (no catalog, or it could not be read: logged) the form
// takes types typed.
func (sa *subscriptionActions) offerTypes(r *http.Request, view *subscriptionFormView) {
	if acc, err := sa.store.GetAccount(r.Context(), account.OrDefault(view.Form.Account)); err == nil {
		view.CatalogOnly = acc.Settings.CatalogOnly
	}
	cs, err := typeChoices(r.Context(), sa.eventTypes, nil, view.Form.types(), view.CatalogOnly)
	if err != nil {
		sa.log.Warn("reading the event types for the subscription form", "err", err)
	}
	view.Choices = cs
}

// create takes the create form: the subscription is made as the API's
// POST /v1/subscriptions makes it (subscription.Input's New with the
// account's failure policy and the destination policy, then
// CreateSubscription), and the browser goes to its page. A problem is
// shown on the form, naming the field, and nothing is made.
func (sa *subscriptionActions) create(w http.ResponseWriter, r *http.Request, v *visit) {
	view, acc, ok := sa.createForm(w, r, v)
	if !ok {
		return
	}
	f := view.Form
	var sub subscription.Subscription
	var err error
	if view.Problem.status == 0 {
		sub, err = sa.newSubscription(r.Context(), f, acc)
		if p, ok := problemOf(err, f.Name); ok {
			view.Problem = p
		} else if err != nil {
			sa.storeError(w, r, v, err)
			return
		}
	}
	if view.Problem.status != 0 {
		sa.showForm(w, r, v, view.Problem.status, view)
		return
	}
	redirect(w, r, "/console/subscriptions/"+sub.ID+"?done=created")
}

// createForm reads the create form's POST and the account it makes the
// subscription in (an account key's own; for an admin the form's), with
// the problem of an account that does not exist; false when it answered
// (404: an account key naming another account).
func (sa *subscriptionActions) createForm(w http.ResponseWriter, r *http.Request, v *visit) (subscriptionFormView, account.Account, bool) {
	f := readSubscriptionForm(r)
	if !v.admin() {
		if f.Account != "" && f.Account != account.OrDefault(v.AccountID) {
			sa.errorPage(w, r, v, http.StatusNotFound, "There is no account "+f.Account+".")
			return subscriptionFormView{}, account.Account{}, false
		}
		f.Account = account.OrDefault(v.AccountID)
	}
	f.Account = account.OrDefault(f.Account)
	view := subscriptionFormView{Form: f, Preview: readPreview(r.PostForm)}
	acc, err := sa.store.GetAccount(r.Context(), f.Account)
	if errors.Is(err, store.ErrNotFound) {
		view.Problem = formProblem{"account_id", "there is no account " + f.Account, http.StatusNotFound}
	} else if err != nil {
		sa.storeError(w, r, v, err)
		return view, acc, false
	}
	return view, acc, true
}

// newSubscription makes and stores the subscription of f in acc.
func (sa *subscriptionActions) newSubscription(ctx context.Context, f subscriptionForm, acc account.Account) (subscription.Subscription, error) {
	now := sa.clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	sub, err := sa.madeSubscription(ctx, f, acc, ids.New("sub_", now), now)
	if err != nil {
		return sub, err
	}
	return sub, sa.control.CreateSubscription(ctx, sub)
}

// madeSubscription is the subscription of f in acc, with id, made as the
// API's create makes it (subscription.Input's New), not stored.
func (sa *subscriptionActions) madeSubscription(ctx context.Context, f subscriptionForm, acc account.Account, id string, now time.Time) (subscription.Subscription, error) {
	in, ierr := f.createInput()
	if ierr != nil {
		return subscription.Subscription{}, ierr
	}
	return in.New(ctx, subscription.Creation{ID: id, AccountID: acc.ID, Now: now,
		FailurePolicy: acc.Settings.FailurePolicy, Destinations: sa.destinations})
}

// ownSubscription reads the subscription of the path's id, answering the
// 404 page when there is none or the session may not see it.
func (b base) ownSubscription(w http.ResponseWriter, r *http.Request, v *visit) (subscription.Subscription, bool) {
	return own(b, w, r, v, "subscription", b.store.GetSubscription, func(s subscription.Subscription) string { return s.AccountID })
}

// own reads the what of the path's id with get, answering the 404 page
// when there is none or the session may not see it (its account, by
// accountOf), the store's error page for another error.
func own[T any](b base, w http.ResponseWriter, r *http.Request, v *visit, what string,
	get func(context.Context, string) (T, error), accountOf func(T) string) (T, bool) {
	id := r.PathValue("id")
	x, err := get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !v.sees(accountOf(x)) {
		b.errorPage(w, r, v, http.StatusNotFound, "There is no "+what+" "+id+".")
		return x, false
	}
	if err != nil {
		b.storeError(w, r, v, err)
		return x, false
	}
	return x, true
}

// editForm shows the edit form, filled with the subscription's fields.
func (sa *subscriptionActions) editForm(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	sa.showForm(w, r, v, http.StatusOK, subscriptionFormView{ID: sub.ID, Pull: sub.DeliveryMode == subscription.ModePull, Form: formOf(sub), sub: &sub})
}

// edit takes the edit form as the API's PATCH /v1/subscriptions/{id}
// takes a request of the fields that changed (subscription.Input's Update
// within UpdateSubscription), and the browser goes to its page, which says
// "Saved." only when something changed (ifChanged). A problem is shown on
// the form, beside the field, with the values typed, and nothing is
// changed.
func (sa *subscriptionActions) edit(w http.ResponseWriter, r *http.Request, v *visit) {
	cur, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	f := readSubscriptionForm(r)
	f.Mode = cur.DeliveryMode
	_, err := sa.control.UpdateSubscription(r.Context(), cur.ID, ifChanged(func(sub *subscription.Subscription) error {
		if !v.sees(sub.AccountID) {
			return store.ErrNotFound
		}
		in, ierr := f.updateInput(*sub)
		if ierr != nil {
			return ierr
		}
		return in.Update(r.Context(), sub, sa.destinations)
	}))
	done := savedOrUnchanged(&err)
	if p, ok := problemOf(err, f.Name); ok {
		sa.showForm(w, r, v, p.status, subscriptionFormView{ID: cur.ID, Pull: cur.DeliveryMode == subscription.ModePull, Form: f, Problem: p,
			Preview: readPreview(r.PostForm), sub: &cur})
		return
	}
	if sa.gone(w, r, v, cur.ID, err) {
		return
	}
	redirect(w, r, "/console/subscriptions/"+cur.ID+"?done="+done)
}

// gone answers for the error of a change of subscription id, and reports
// whether there was one (base's failed).
func (sa *subscriptionActions) gone(w http.ResponseWriter, r *http.Request, v *visit, id string, err error) bool {
	return sa.failed(w, r, v, "subscription", id, err)
}

// confirmDelete asks whether to delete the subscription, saying what
// becomes of its deliveries.
func (sa *subscriptionActions) confirmDelete(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	sa.render(w, r, http.StatusOK, "subscription_delete", v, "Delete "+sub.Name, toSubscriptionView(sub))
}

// delete takes the confirmation's form: the subscription is deleted as the
// API's DELETE /v1/subscriptions/{id} deletes it (its pending deliveries
// end as dropped), and the browser goes to the list of its account.
func (sa *subscriptionActions) delete(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	if sa.gone(w, r, v, sub.ID, sa.control.DeleteSubscription(r.Context(), sub.ID)) {
		return
	}
	acc := ""
	if v.admin() {
		acc = account.OrDefault(sub.AccountID)
	}
	redirect(w, r, withQuery("/console/subscriptions", map[string][]string{"account_id": {acc}}))
}
