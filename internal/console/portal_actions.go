package console

import (
	"errors"
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/subscription"
)

// portalActions are a subscription's secret and test event, and a
// delivery's page and redeliver.
type portalActions struct{ portalPages }

// secretView is the page that shows a subscription's signing secret: the
// current one and those still valid after a rotation (their grace).
type secretView struct {
	ID, Name, Algorithm string
	// Current is the secret (whsec_…) or, for ed25519, the public key
	// (whpk_…) receivers verify with.
	Current  string
	Previous []previousSecret
	Rotated  bool
}

// previousSecret is a secret still valid until ExpiresAt.
type previousSecret struct {
	Value     string
	ExpiresAt time.Time
}

// toSecretView returns what the secret page shows of sub's keyring at
// now (as the API's GET …/secret).
func toSecretView(sub subscription.Subscription, now time.Time) secretView {
	sg := sub.Signing
	encode := func(key []byte) string {
		if sg.Algorithm == signing.Ed25519 {
			return signing.PublicKey(key)
		}
		return signing.Secret(key)
	}
	view := secretView{ID: sub.ID, Name: sub.Name, Algorithm: sg.Algorithm}
	if len(sg.Keys) > 0 {
		view.Current = encode(sg.Keys[0].Key)
	}
	for _, k := range signing.Previous(sg, now) {
		view.Previous = append(view.Previous, previousSecret{Value: encode(k.Key), ExpiresAt: k.ExpiresAt})
	}
	return view
}

// showSecret shows the subscription's signing secret: a POST, so that it
// is shown only when asked for, and kept from the browser's history.
func (p portalActions) showSecret(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	sub, ok := p.ownSubscription(w, r, v)
	if !ok {
		return
	}
	p.pages.portalRender(w, r, http.StatusOK, "secret", v, "Signing secret", toSecretView(sub, p.Clock.Now()))
}

// rotateSecret gives the subscription a new signing key; the old one stays
// valid for signing.DefaultGrace. The page shows the new secret.
func (p portalActions) rotateSecret(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	sub, ok := p.ownSubscription(w, r, v)
	if !ok {
		return
	}
	sub, err := p.Control.RotateSecret(r.Context(), sub.ID, nil, signing.DefaultGrace)
	if err != nil {
		p.changeError(w, r, v, err)
		return
	}
	view := toSecretView(sub, p.Clock.Now())
	view.Rotated = true
	p.pages.portalRender(w, r, http.StatusOK, "secret", v, "Signing secret", view)
}

// sendTest publishes a test event (admission.NewTestEvent, of type
// admission.TestType) to the subscription alone, as the API's POST
// /v1/subscriptions/{id}/test: pushed signed, retried, logged; 409 while
// it awaits its endpoint's validation.
func (p portalActions) sendTest(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	sub, ok := p.ownSubscription(w, r, v)
	if !ok {
		return
	}
	if sub.State == subscription.StateAwaitingValidation {
		p.pages.portalError(w, r, v, http.StatusConflict, "This subscription awaits its endpoint's validation: send the test event once it is active.")
		return
	}
	ev, err := admission.NewTestEvent(sub.ID, admission.TestType, nil, p.Clock.Now())
	if err != nil {
		p.pages.portalStoreError(w, r, v, err)
		return
	}
	res, err := p.Publisher.PublishTo(r.Context(), sub.AccountID, sub.ID, ev)
	switch {
	case errors.Is(err, admission.ErrNoSubscription):
		p.pages.portalError(w, r, v, http.StatusNotFound, "There is no subscription "+sub.ID+".")
	case err != nil:
		p.pages.portalStoreError(w, r, v, err)
	case res.Queued:
		redirect(w, r, "/portal/subscriptions/"+sub.ID+"?done=queued")
	default:
		redirect(w, r, "/portal/subscriptions/"+sub.ID+"?done=test")
	}
}

// delivery shows one delivery of the session's subscriptions and a page of
// its attempts (the console's delivery page's view); another's is a 404.
func (p portalActions) delivery(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	d, ok := p.ownDelivery(w, r, v)
	if !ok {
		return
	}
	view, err := newDeliveryView(r, p.base(), d, portalDeliveries)
	if err != nil {
		p.pages.portalStoreError(w, r, v, err)
		return
	}
	p.pages.portalRender(w, r, http.StatusOK, "delivery", v, "Delivery "+d.ID, view)
}

// ownDelivery reads the path's delivery, answering 404 for one the
// session may not see.
func (p portalActions) ownDelivery(w http.ResponseWriter, r *http.Request, v *portalVisit) (delivery.Delivery, bool) {
	return portalOwn(p.Portal, w, r, v, "delivery", p.Store.GetDelivery,
		func(d delivery.Delivery) (string, string) { return d.AccountID, d.SubscriptionID })
}

// redeliver makes the delivery due now with a fresh attempt budget, as the
// console's Redeliver, and goes back to its page, which says what
// happened.
func (p portalActions) redeliver(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	d, ok := p.ownDelivery(w, r, v)
	if !ok {
		return
	}
	_, err := p.Control.Redeliver(r.Context(), d.ID)
	result, err := redeliverResult(err)
	if err != nil {
		p.changeError(w, r, v, err)
		return
	}
	redirect(w, r, portalDeliveries+d.ID+"?redeliver="+result)
}
