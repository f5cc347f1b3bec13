package console

import (
	"net/http"

	"github.com/herald-events/herald/internal/subscription"
)

// The portal's subscription forms preview as the console's do
// (preview.go): the form's values, not saved, tried on an event pasted, a
// catalog example of a type the account may choose, or (edit) the event
// of one of the subscription's own latest deliveries. The choices and
// every event tried are the session's account's alone.

// previewer is the portal's previewer, over its store and catalog.
func (p *Portal) previewer() previewer {
	return previewer{store: p.Store, catalog: p.EventTypes, now: p.Clock.Now}
}

// portalAllows reports whether the session's account may choose a type
// (settings.portal_event_types, when set): whose examples the preview
// offers and takes.
func portalAllows(v *portalVisit) func(string) bool {
	return func(t string) bool {
		_, ok := v.account.Settings.PortalAllows([]string{t})
		return ok
	}
}

// Expressions is the form's expressions section (expressionsBlock), whose
// Preview posts the form to action; pull: a pull subscription's form
// (no transform).
func (f portalForm) Expressions(action string, pull bool) expressionsBlock {
	return expressionsBlock{expressions: f.expressions, Problem: f.Problem, NoTransform: pull, Preview: f.Preview, Action: action}
}

// portalPreviews are the portal's forms' Preview actions, over the forms'
// own (portalPages).
type portalPreviews struct{ portalPages }

// previewNew takes the create form's Preview: the subscription of the form
// is made as createSubscription makes it, not stored, and tried on the
// form's event. The list is shown again with the form as typed and what a
// push would carry, or the problem beside its field; nothing is made. Only
// a session whose scope names no subscriptions may (403 otherwise).
func (p portalPreviews) previewNew(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	if len(v.scope.SubscriptionIDs) > 0 {
		p.pages.portalError(w, r, v, http.StatusForbidden, "This portal session is limited to some subscriptions: it cannot make others.")
		return
	}
	form := readPortalForm(r)
	sub, err := p.madeSubscription(r, v, form, "sub_preview", p.Clock.Now().UTC())
	if p.tryPreview(w, r, v, &form, sub, err) {
		p.showList(w, r, v, portalPreviewStatus(form), form)
	}
}

// previewEdit takes a subscription's form's Preview: the subscription as
// the form would change it (subscription.Input's Update of a copy) is
// tried on the form's event; the page is shown again as previewNew shows
// the list. Nothing is changed.
func (p portalPreviews) previewEdit(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	cur, ok := p.ownSubscription(w, r, v)
	if !ok {
		return
	}
	form := readPortalForm(r)
	sub := cur
	in, err := p.formInput(v, form)
	form.expressions.into(&in, expressionsOf(cur))
	if err == nil {
		err = in.Update(r.Context(), &sub, p.Destinations)
	}
	if p.tryPreview(w, r, v, &form, sub, err) {
		p.showSubscription(w, r, v, cur, portalPreviewStatus(form), form)
	}
}

// tryPreview tries the form's event on sub, the subscription the form
// makes (err: why it could not be made, shown beside its field); false
// when it answered (the store's error).
func (p portalPreviews) tryPreview(w http.ResponseWriter, r *http.Request, v *portalVisit, form *portalForm, sub subscription.Subscription, err error) bool {
	if pr, ok := problemOf(err, form.Name); ok {
		form.Problem = pr
		return true
	}
	if err == nil {
		err = p.previewer().run(r.Context(), sub, portalAllows(v), &form.Preview)
	}
	if err != nil {
		p.pages.portalStoreError(w, r, v, err)
		return false
	}
	return true
}

// portalPreviewStatus is the status of a preview's answer: the form's
// problem's, 400 for an event that could not be tried, else 200.
func portalPreviewStatus(form portalForm) int {
	return previewStatus(subscriptionFormView{Problem: form.Problem, Preview: form.Preview})
}
