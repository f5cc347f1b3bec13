package console

import (
	"net/http"

	"github.com/herald-events/herald/internal/subscription"
)

// formPreviews are the create and edit forms' Preview actions, over the
// forms' own (subscriptionActions).
type formPreviews struct{ *subscriptionActions }

// previewNew takes the create form's Preview: the subscription of the
// form is made as create makes it (subscription.Input's New) but not
// stored, and tried on the form's event (previewer.run). The form is shown
// again as typed, with what a push would carry, or with the problem beside
// its field (the status create would answer; 400 for an event that cannot
// be tried). Nothing is made or sent.
func (sa formPreviews) previewNew(w http.ResponseWriter, r *http.Request, v *visit) {
	view, acc, ok := sa.createForm(w, r, v)
	if !ok {
		return
	}
	if view.Problem.status == 0 {
		now := sa.clock.Now().UTC()
		sub, err := sa.madeSubscription(r.Context(), view.Form, acc, "sub_preview", now)
		if !sa.tryPreview(w, r, v, &view, sub, err) {
			return
		}
	}
	sa.showForm(w, r, v, previewStatus(view), view)
}

// previewEdit takes the edit form's Preview: the subscription as the form
// would change it (subscription.Input's Update of a copy, as edit
// updates it) is tried on the form's event, its own deliveries' events
// among the choices. The form is shown again as previewNew shows it;
// nothing is changed or sent.
func (sa formPreviews) previewEdit(w http.ResponseWriter, r *http.Request, v *visit) {
	cur, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	f := readSubscriptionForm(r)
	f.Mode = cur.DeliveryMode
	view := subscriptionFormView{ID: cur.ID, Pull: cur.DeliveryMode == subscription.ModePull, Form: f,
		Preview: readPreview(r.PostForm), sub: &cur}
	sub := cur
	in, ierr := f.updateInput(cur)
	var err error = ierr
	if ierr == nil {
		err = in.Update(r.Context(), &sub, sa.destinations)
	}
	if sa.tryPreview(w, r, v, &view, sub, err) {
		sa.showForm(w, r, v, previewStatus(view), view)
	}
}

// tryPreview tries the preview's event on sub, the subscription the form
// makes (err: why it could not be made, shown beside its field), setting
// view's Problem or Preview; false when it answered (the store's error).
func (sa formPreviews) tryPreview(w http.ResponseWriter, r *http.Request, v *visit, view *subscriptionFormView, sub subscription.Subscription, err error) bool {
	if p, ok := problemOf(err, view.Form.Name); ok {
		view.Problem = p
		return true
	}
	if err == nil {
		err = sa.preview.run(r.Context(), sub, anyType, &view.Preview)
	}
	if err != nil {
		sa.storeError(w, r, v, err)
		return false
	}
	return true
}

// previewStatus is the status of a preview's answer: the form's problem's,
// 400 for an event that could not be tried, else 200.
func previewStatus(view subscriptionFormView) int {
	switch {
	case view.Problem.status != 0:
		return view.Problem.status
	case view.Preview.Problem.Detail != "":
		return http.StatusBadRequest
	}
	return http.StatusOK
}
