package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// portalPages are the portal's subscription pages and forms.
type portalPages struct{ *Portal }

// portalListView is the portal's subscriptions list.
type portalListView struct {
	Items []subscriptionRow
	pageLinks
	// Create: the session may make subscriptions (its scope names none);
	// Choices are the event types it may pick (none: any, typed); Form is
	// the create form as typed (empty at first) and why it was refused.
	Create  bool
	Choices []typeChoice
	Form    portalForm
}

// Types is the create form's event types field.
func (v portalListView) Types() typePicker {
	return typePicker{Choices: v.Choices, Checked: v.Form.EventTypes, Problem: v.Form.Problem}
}

// portalForm is a portal subscription form (create: name, url,
// event_types; edit: url, event_types) as typed, and the problem that
// refused it, shown beside its field.
type portalForm struct {
	Name, URL  string
	EventTypes []string
	Problem    formProblem
	// The CEL fields (subscription_expressions.go) and the preview
	// (portal_preview.go).
	expressions
	Preview previewPanel
}

// subscriptions lists the session's subscriptions: those its scope names,
// or a page of its account's (?cursor=).
func (p portalPages) subscriptions(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	p.showList(w, r, v, http.StatusOK, portalForm{})
}

// showList answers status with the subscriptions list, its create form
// holding form.
func (p portalPages) showList(w http.ResponseWriter, r *http.Request, v *portalVisit, status int, form portalForm) {
	view := portalListView{Create: len(v.scope.SubscriptionIDs) == 0, Choices: p.choices(r, v, nil), Form: form}
	var err error
	if view.Form.Preview.Choices, err = p.previewer().choices(r.Context(), form.EventTypes, portalAllows(v), nil); err != nil {
		p.pages.portalStoreError(w, r, v, err)
		return
	}
	subs, err := p.listed(r, v, &view)
	if err != nil {
		p.pages.portalStoreError(w, r, v, err)
		return
	}
	for _, s := range subs {
		view.Items = append(view.Items, subscriptionRow{ID: s.ID, Name: s.Name, URL: redact.URL(s.URL), State: s.State})
	}
	p.pages.portalRender(w, r, status, "subscriptions", v, "Subscriptions", view)
}

// listed returns the subscriptions the list shows, setting view's page
// links: those of the scope that still exist, or a page of the account's.
func (p portalPages) listed(r *http.Request, v *portalVisit, view *portalListView) ([]subscription.Subscription, error) {
	if ids := v.scope.SubscriptionIDs; len(ids) > 0 {
		var subs []subscription.Subscription
		for _, id := range ids {
			s, err := p.Store.GetSubscription(r.Context(), id)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return nil, err
			case v.sees(s.AccountID, s.ID):
				subs = append(subs, s)
			}
		}
		return subs, nil
	}
	cursor := r.URL.Query().Get("cursor")
	subs, next, err := p.Store.ListSubscriptions(r.Context(), account.OrDefault(v.account.ID), store.Page{Cursor: cursor, Limit: listSize})
	view.pageLinks = newPageLinks(cursor, next, func(c string) string { return withQuery("/portal/subscriptions", url.Values{"cursor": {c}}) })
	return subs, err
}

// portalSubView is a subscription's portal page.
type portalSubView struct {
	ID, Name, URL, State string
	EventTypes           []string
	// FilterExpression and Transform are its CEL expressions ("": none).
	FilterExpression, Transform string
	// EndpointState is its endpoint's circuit state (endpointState).
	EndpointState string
	// Form is the edit form: the subscription's URL and types, or what
	// was typed and why it was refused.
	Form portalForm
	// Since is the recover form's example time: an hour before now.
	Since string
	// Choices are the event types the form offers (portalPages.choices);
	// none: a text field.
	Choices []typeChoice
	// Deliveries are a page of its deliveries, newest first (?cursor=).
	Deliveries deliveryTable
	pageLinks
	Notice string
}

// Types is the edit form's event types field.
func (v portalSubView) Types() typePicker {
	return typePicker{Choices: v.Choices, Checked: v.Form.EventTypes, Problem: v.Form.Problem}
}

// portalNotices are the messages an action leaves for the subscription's
// page, by the value of its ?done= parameter; only these are shown.
var portalNotices = map[string]string{
	"saved":     "Saved.",
	"unchanged": unchangedNotice,
	"created":   "Subscription created.",
	"test":      "A test event was sent: its delivery is at the top of the list.",
	"queued":    "A test event was queued: this subscription does not push now (deactivated or pull).",
}

// subscription shows one of the session's subscriptions: its URL and
// event types (with the form that edits them), its actions, and a page of
// its deliveries. Another's is a 404, as if it did not exist.
func (p portalPages) subscription(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	sub, ok := p.ownSubscription(w, r, v)
	if !ok {
		return
	}
	p.showSubscription(w, r, v, sub, http.StatusOK, portalForm{URL: redact.URL(sub.URL), EventTypes: sub.EventTypes, expressions: expressionsOf(sub)})
}

// showSubscription answers status with sub's page, its edit form holding
// form.
func (p portalPages) showSubscription(w http.ResponseWriter, r *http.Request, v *portalVisit, sub subscription.Subscription, status int, form portalForm) {
	cursor := r.URL.Query().Get("cursor")
	ds, next, err := p.Store.ListDeliveries(r.Context(), store.DeliveryFilter{AccountID: account.OrDefault(sub.AccountID),
		SubscriptionID: sub.ID, Page: store.Page{Cursor: cursor, Limit: listSize}})
	if err == nil {
		form.Preview.Choices, err = p.previewer().choices(r.Context(), form.EventTypes, portalAllows(v), &sub)
	}
	if err != nil {
		p.pages.portalStoreError(w, r, v, err)
		return
	}
	view := portalSubView{ID: sub.ID, Name: sub.Name, URL: redact.URL(sub.URL), State: sub.State, EventTypes: sub.EventTypes,
		FilterExpression: sub.Filters.Expression, Transform: sub.Delivery.Transform,
		Choices: p.choices(r, v, sub.EventTypes), Deliveries: deliveryTable{Link: portalDeliveries, Items: p.base().rowsOf(r.Context(), ds)},
		Form: form, Since: exampleSince(p.Clock.Now())}
	if status == http.StatusOK {
		view.Notice = portalNotices[r.URL.Query().Get("done")]
	}
	_, view.EndpointState = p.base().endpointState(r.Context(), sub.EndpointID)
	view.pageLinks = newPageLinks(cursor, next, func(c string) string {
		return withQuery("/portal/subscriptions/"+sub.ID, url.Values{"cursor": {c}})
	})
	p.pages.portalRender(w, r, status, "subscription", v, sub.Name, view)
}

// ownSubscription reads the path's subscription, answering 404 for one
// the session may not see.
func (p portalPages) ownSubscription(w http.ResponseWriter, r *http.Request, v *portalVisit) (subscription.Subscription, bool) {
	return portalOwn(p.Portal, w, r, v, "subscription", p.Store.GetSubscription,
		func(s subscription.Subscription) (string, string) { return s.AccountID, s.ID })
}

// portalOwn reads the path's {id} with get, answering 404 (naming it a
// what) when there is none or the session may not see it (scope gives
// its account and subscription), and the store's error otherwise.
func portalOwn[T any](p *Portal, w http.ResponseWriter, r *http.Request, v *portalVisit, what string,
	get func(context.Context, string) (T, error), scope func(T) (string, string)) (T, bool) {
	id := r.PathValue("id")
	x, err := get(r.Context(), id)
	if err == nil && !v.sees(scope(x)) {
		err = store.ErrNotFound
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		p.pages.portalError(w, r, v, http.StatusNotFound, "There is no "+what+" "+id+".")
		return x, false
	case err != nil:
		p.pages.portalStoreError(w, r, v, err)
		return x, false
	}
	return x, true
}

// createSubscription takes the list's form (name, url, event_types): a
// push subscription of the account with the API's defaults. Only a
// session whose scope names no subscriptions may (403 otherwise). Bad
// input shows the list again (400, 409, 422) with the values typed and
// the problem beside its field; nothing is made.
func (p portalPages) createSubscription(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	if len(v.scope.SubscriptionIDs) > 0 {
		p.pages.portalError(w, r, v, http.StatusForbidden, "This portal session is limited to some subscriptions: it cannot make others.")
		return
	}
	form := readPortalForm(r)
	sub, err := p.newSubscription(r, v, form)
	if pr, ok := problemOf(err, form.Name); ok {
		form.Problem = pr
		p.showList(w, r, v, pr.status, form)
		return
	}
	if p.changeError(w, r, v, err) {
		return
	}
	redirect(w, r, "/portal/subscriptions/"+sub.ID+"?done=created")
}

// newSubscription makes and stores the subscription of form in the
// session's account, as the API's POST /v1/subscriptions would.
func (p portalPages) newSubscription(r *http.Request, v *portalVisit, form portalForm) (subscription.Subscription, error) {
	now := p.Clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	sub, err := p.madeSubscription(r, v, form, ids.New("sub_", now), now)
	if err != nil {
		return sub, err
	}
	return sub, p.Control.CreateSubscription(r.Context(), sub)
}

// madeSubscription is the subscription of form in the session's account,
// with id, made as the API's POST /v1/subscriptions makes it, not stored.
func (p portalPages) madeSubscription(r *http.Request, v *portalVisit, form portalForm, id string, now time.Time) (subscription.Subscription, error) {
	in, err := p.formInput(v, form)
	if err != nil {
		return subscription.Subscription{}, err
	}
	in.Name = &form.Name
	form.expressions.into(&in, expressions{})
	if err := in.CheckCreate(); err != nil {
		return subscription.Subscription{}, err
	}
	return in.New(r.Context(), subscription.Creation{ID: id, AccountID: account.OrDefault(v.account.ID),
		Now: now, FailurePolicy: v.account.Settings.FailurePolicy, Destinations: p.Destinations})
}

// editSubscription takes a subscription's form (url, event_types), as the
// API's PATCH would. Bad input shows the page again with the values typed
// and the problem beside its field, and changes nothing; the page says
// "Saved." only when something changed.
func (p portalPages) editSubscription(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	sub, ok := p.ownSubscription(w, r, v)
	if !ok {
		return
	}
	form := readPortalForm(r)
	in, err := p.formInput(v, form)
	form.expressions.into(&in, expressionsOf(sub))
	if err == nil {
		_, err = p.Control.UpdateSubscription(r.Context(), sub.ID, ifChanged(func(s *subscription.Subscription) error {
			if !v.sees(s.AccountID, s.ID) {
				return store.ErrNotFound
			}
			return in.Update(r.Context(), s, p.Destinations)
		}))
	}
	done := savedOrUnchanged(&err)
	if pr, ok := problemOf(err, sub.Name); ok {
		form.Problem = pr
		p.showSubscription(w, r, v, sub, pr.status, form)
		return
	}
	if p.changeError(w, r, v, err) {
		return
	}
	redirect(w, r, "/portal/subscriptions/"+sub.ID+"?done="+done)
}

// readPortalForm returns a portal subscription form's fields as typed:
// the event types from a box for each of the account's portal event
// types, or one text field of types separated by commas or spaces.
func readPortalForm(r *http.Request) portalForm {
	f := portalForm{Name: r.PostForm.Get("name"), URL: r.PostForm.Get("url"), expressions: readExpressions(r.PostForm),
		Preview: readPreview(r.PostForm)}
	for _, t := range r.PostForm["event_types"] {
		f.EventTypes = append(f.EventTypes, strings.FieldsFunc(t, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' })...)
	}
	return f
}

// formInput is the subscription input of form, refusing types outside
// the account's settings.portal_event_types (a *strictjson.Error naming
// event_types).
func (p portalPages) formInput(v *portalVisit, form portalForm) (subscription.Input, error) {
	types := form.EventTypes
	if t, ok := v.account.Settings.PortalAllows(types); !ok {
		return subscription.Input{}, strictjson.Errorf("event_types", "may only list the event types %s, not %s",
			strings.Join(v.account.Settings.PortalEventTypes, ", "), t)
	}
	url := form.URL
	return subscription.Input{URL: &url, EventTypes: &types}, nil
}

// changeError answers for the error of a create or update and reports
// whether there was one: the field at fault (400; 422 for a destination
// refused), a name taken (409), a subscription gone (404).
func (p portalPages) changeError(w http.ResponseWriter, r *http.Request, v *portalVisit, err error) bool {
	switch {
	case err == nil:
		return false
	case p.inputError(w, r, v, err):
	case errors.Is(err, store.ErrNameTaken):
		p.pages.portalError(w, r, v, http.StatusConflict, "name: another subscription of this account has this name; nothing changed.")
	case errors.Is(err, store.ErrNotFound):
		p.pages.portalError(w, r, v, http.StatusNotFound, "There is no such subscription.")
	default:
		p.pages.portalStoreError(w, r, v, err)
	}
	return true
}

// inputError answers 400 (422 for a destination refused or fields that
// do not go together) naming the field of a domain package's refusal,
// and reports whether err was one.
func (p portalPages) inputError(w http.ResponseWriter, r *http.Request, v *portalVisit, err error) bool {
	var ie *strictjson.Error
	var refused *subscription.DestinationError
	var combo *subscription.CombinationError
	var unknown *eventtype.UnknownTypeError
	status, field, detail := http.StatusUnprocessableEntity, "", ""
	switch {
	case errors.As(err, &unknown): // settings.catalog_only
		field, detail = unknown.Field, unknown.Detail
	case errors.As(err, &refused):
		field, detail = refused.Field, refused.Detail
	case errors.As(err, &combo):
		field, detail = combo.Field, combo.Detail
	case errors.As(err, &ie):
		status, field, detail = http.StatusBadRequest, ie.Field, ie.Detail
	default:
		return false
	}
	p.pages.portalError(w, r, v, status, field+": "+detail+"; nothing changed.")
	return true
}
