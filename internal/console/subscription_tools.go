package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// subscriptionNotices are the messages an action leaves for the
// subscription's page it returns to, by the value of its ?done=
// parameter. Only these texts are shown, never the parameter itself.
var subscriptionNotices = map[string]string{
	"created":     "Created.",
	"saved":       "Saved.",
	"unchanged":   unchangedNotice,
	"reactivated": "Reactivated: it is active, and its queued deliveries are pushed again.",
	"active":      "Not reactivated: it was active already.",
}

// reactivate takes the Reactivate form: a deactivated push subscription
// is made active and its queued deliveries pushed, as the API's POST
// /v1/subscriptions/{id}/reactivate does; a pull subscription, or one
// awaiting its endpoint's validation, is a 409 page and nothing changes.
func (sa *subscriptionActions) reactivate(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	_, _, err := sa.control.Reactivate(r.Context(), sub.ID)
	if errors.Is(err, store.ErrConflict) {
		sa.errorPage(w, r, v, http.StatusConflict, "Not reactivated: only a deactivated push subscription is. "+
			"A pull subscription never is, and one awaiting validation is activated by its endpoint's handshake.")
		return
	}
	if sa.gone(w, r, v, sub.ID, err) {
		return
	}
	done := "reactivated"
	if sub.State == subscription.StateActive {
		done = "active"
	}
	redirect(w, r, "/console/subscriptions/"+sub.ID+"?done="+done)
}

// rotate takes the Rotate secret form: the subscription gets a new signing
// key as the API's POST /v1/subscriptions/{id}/secret/rotate gives one
// (Herald makes it), the current key signing too for the form's grace
// (a duration, 0s..168h; empty: signing.DefaultGrace). The answer shows
// the new key; a grace out of range is a 400 page naming it.
func (sa *subscriptionActions) rotate(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	grace := signing.DefaultGrace
	if g := strings.TrimSpace(r.PostForm.Get("grace")); g != "" {
		d, err := time.ParseDuration(g)
		if err != nil || d < 0 || d > signing.MaxGrace {
			sa.errorPage(w, r, v, http.StatusBadRequest, "grace: give a duration between 0s and 168h (7 days), such as 24h, not "+g+". Nothing was changed.")
			return
		}
		grace = d
	}
	sub, err := sa.control.RotateSecret(r.Context(), sub.ID, nil, grace)
	if sa.gone(w, r, v, sub.ID, err) {
		return
	}
	view := toSecretView(sub, sa.clock.Now())
	sa.render(w, r, http.StatusOK, "subscription_secret", v, "New secret of "+sub.Name, view)
}

// filterTestView is the filter test's page: the event as pasted and, once
// tried, whether the subscription takes it, else why not, and Result, what
// a push of it would carry (preview.go).
type filterTestView struct {
	ID, Name, Event string
	Tried, Matches  bool
	Why             string
	// Failed is the advanced filter that refused it (-1: another rule).
	Failed int
	// Problem is the event's field Herald could not read.
	Problem formProblem
	Result  *previewResult
}

// exampleEvent is the filter test form's event before one is pasted.
const exampleEvent = `{"specversion": "1.0", "id": "test-1", "source": "/shop", "type": "order.created", "subject": "orders/1", "data": {"total": 10}}`

// filterTestForm shows the filter test's form.
func (sa *subscriptionActions) filterTestForm(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	view := filterTestView{ID: sub.ID, Name: sub.Name, Event: exampleEvent, Failed: -1}
	sa.render(w, r, http.StatusOK, "subscription_filtertest", v, "Filter test of "+sub.Name, view)
}

// filterTest takes the filter test's form: whether the subscription would
// take the event pasted (one CloudEvent as JSON) and which rule refused
// it, and what a push would carry (the body exactly, or filtered, or the
// transform's error), as the API's POST /v1/subscriptions/{id}/filter-test
// says (catalog.Try). Nothing is published. An event Herald cannot read is a
// 400 naming its field.
func (sa *subscriptionActions) filterTest(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	view := filterTestView{ID: sub.ID, Name: sub.Name, Event: r.PostForm.Get("event"), Failed: -1}
	verdict, err := catalog.Try(r.Context(), sub, account.OrDefault(sub.AccountID), []byte(view.Event))
	status := http.StatusOK
	if fe := (*event.FieldError)(nil); errors.As(err, &fe) {
		view.Problem, status = formProblem{Field: fe.Field, Detail: fe.Detail}, http.StatusBadRequest
	} else if err != nil {
		sa.storeError(w, r, v, err)
		return
	} else {
		view.Tried, view.Matches, view.Why, view.Failed = true, verdict.Why == "", verdict.Why, verdict.Failed
		view.Result = resultOf(verdict)
	}
	sa.render(w, r, status, "subscription_filtertest", v, "Filter test of "+sub.Name, view)
}

// sendTest takes the Send a test event form: a test event (the form's
// type, else admission.TestType) goes to the subscription alone through
// the delivery path, as the API's POST /v1/subscriptions/{id}/test sends
// it (admission.NewTestEvent, Publisher.PublishTo), and the browser goes
// to its delivery's page. A type Herald refuses is a 400 page naming it;
// a subscription awaiting its endpoint's validation a 409: nothing is
// published then.
func (sa *subscriptionActions) sendTest(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	typ := strings.TrimSpace(r.PostForm.Get("type"))
	if typ == "" {
		typ = admission.TestType
	}
	ev, err := admission.NewTestEvent(sub.ID, typ, nil, sa.clock.Now())
	if err != nil { // a *event.FieldError naming the type
		sa.errorPage(w, r, v, http.StatusBadRequest, err.Error()+". Nothing was sent.")
		return
	}
	if sub.State == subscription.StateAwaitingValidation {
		sa.errorPage(w, r, v, http.StatusConflict, "Not sent: the subscription awaits its endpoint's validation handshake, "+
			"and Herald pushes nothing to an endpoint before it is validated.")
		return
	}
	res, err := sa.publisher.PublishTo(r.Context(), sub.AccountID, sub.ID, ev)
	if errors.Is(err, admission.ErrNoSubscription) {
		err = store.ErrNotFound // deleted meanwhile
	}
	if sa.gone(w, r, v, sub.ID, err) {
		return
	}
	redirect(w, r, consoleDeliveries+res.DeliveryID)
}
