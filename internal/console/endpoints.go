package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/store"
)

// EndpointControl is how the console's endpoint forms change an endpoint's
// circuit: the calls the API's POST /v1/endpoints/{id}/enable and
// /freeze make (control.Service), which go through the scheduler so that
// every node follows. store.ErrNotFound when the endpoint is gone.
type EndpointControl interface {
	EnableEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	FreezeEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
}

// endpointPages are the endpoints list and an endpoint's page with its
// Enable and Freeze forms.
type endpointPages struct {
	base
	control EndpointControl
	// live is nil when no scheduler runs here: the store's health is shown.
	live endpoint.Live
	// window is the failure-rate rule's window, the API's HealthWindow.
	window   time.Duration
	clockNow func() time.Time
}

// endpointView is what the pages show of an endpoint: the fields of the
// API's endpoint resource (internal/api/endpoints.go), its URL without
// the password, the window counts over the same window.
type endpointView struct {
	endpoint.Status
	// Account is the endpoint's account; URL its URL with any password
	// hidden (redact.URL); State and Reason its health's.
	Account, URL, State, Reason string
	// Notice says what the action the page follows did.
	Notice string
}

// FailureRate is the window's failures over its attempts, in percent
// ("—" without attempts).
func (v endpointView) FailureRate() string {
	if v.WindowAttempts == 0 {
		return "—"
	}
	return strconv.FormatFloat(100*float64(v.WindowFailures)/float64(v.WindowAttempts), 'f', 1, 64) + "%"
}

// view returns e as the API's endpoint resource shows it (endpoint.StatusOf).
func (ep *endpointPages) view(e endpoint.Endpoint) endpointView {
	st := endpoint.StatusOf(e, ep.live, ep.window, ep.clockNow())
	return endpointView{Status: st, Account: account.OrDefault(e.AccountID), URL: redact.URL(e.URL),
		State: string(st.Health.State), Reason: st.Health.Reason}
}

// endpoints shows a page of endpoints (accountPage).
func (ep *endpointPages) endpoints(w http.ResponseWriter, r *http.Request, v *visit) {
	view, ok := accountPage(ep.base, w, r, v, "/console/endpoints",
		func(ctx context.Context, acc string, p store.Page) ([]endpoint.Endpoint, string, error) {
			return ep.store.ListEndpoints(ctx, acc, "", p)
		}, ep.view)
	if ok {
		ep.render(w, r, http.StatusOK, "endpoints", v, "Endpoints", view)
	}
}

// endpointNotices are what an endpoint's page says after its forms
// (?done=).
var endpointNotices = map[string]string{
	"enabled": "Enabled: its circuit is closed, and its waiting deliveries are attempted again.",
	"frozen":  "Frozen: no attempt is made to it, on any node, until it is enabled.",
}

// endpoint shows one endpoint and its forms: 404 for one that does not
// exist, and for an account key one of another account.
func (ep *endpointPages) endpoint(w http.ResponseWriter, r *http.Request, v *visit) {
	e, ok := ep.ownEndpoint(w, r, v)
	if !ok {
		return
	}
	view := ep.view(e)
	view.Notice = endpointNotices[r.URL.Query().Get("done")]
	ep.render(w, r, http.StatusOK, "endpoint", v, "Endpoint "+view.URL, view)
}

// ownEndpoint reads the endpoint of the path's id, answering the 404 page
// when there is none or the session may not see it.
func (ep *endpointPages) ownEndpoint(w http.ResponseWriter, r *http.Request, v *visit) (endpoint.Endpoint, bool) {
	return own(ep.base, w, r, v, "endpoint", ep.store.GetEndpoint, func(e endpoint.Endpoint) string { return e.AccountID })
}

// change returns the handler of an endpoint form: change (EnableEndpoint
// or FreezeEndpoint, as the API's route of that name calls it) is made on
// the endpoint of the path, and the browser goes back to its page, which
// says done.
func (ep *endpointPages) change(change func(ctx context.Context, id string) (endpoint.Endpoint, error), done string) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visit) {
		e, ok := ep.ownEndpoint(w, r, v)
		if !ok {
			return
		}
		if _, err := change(r.Context(), e.ID); ep.failed(w, r, v, "endpoint", e.ID, err) {
			return
		}
		redirect(w, r, "/console/endpoints/"+e.ID+"?done="+done)
	}
}

// routes adds the endpoint pages' routes to mux, each POST wrapped in the
// CSRF check (s.change).
func (ep *endpointPages) routes(mux *http.ServeMux, s *sessions) {
	mux.Handle("GET /console/endpoints", s.signedIn(ep.endpoints))
	mux.Handle("GET /console/endpoints/{id}", s.signedIn(ep.endpoint))
	mux.Handle("POST /console/endpoints/{id}/enable", s.signedIn(s.change(ep.change(ep.control.EnableEndpoint, "enabled"))))
	mux.Handle("POST /console/endpoints/{id}/freeze", s.signedIn(s.change(ep.change(ep.control.FreezeEndpoint, "frozen"))))
}
