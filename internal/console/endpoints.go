package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
)

// EndpointControl is how the console's endpoint forms change an endpoint's
// circuit and rate limit: the calls the API's POST
// /v1/endpoints/{id}/enable and /freeze and PATCH /v1/endpoints/{id} make
// (control.Service), which go through the scheduler so that every node
// follows. store.ErrNotFound when the endpoint is gone; a bad rate limit is
// a *strictjson.Error naming its field.
type EndpointControl interface {
	EnableEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	FreezeEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	UpdateEndpoint(ctx context.Context, id string, in endpoint.Input) (endpoint.Endpoint, error)
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
	// circuit says when an endpoint's circuit changes state
	// (circuitWords).
	circuit string
}

// circuitWords says, in the order an endpoint that keeps failing meets
// them, the thresholds of c: probation, disabled, frozen.
func circuitWords(c health.Config) string {
	var b strings.Builder
	if c.ProbationAfter > 0 {
		fmt.Fprintf(&b, "After %d consecutive failures an endpoint goes to probation: its deliveries wait a cool-down of %s, doubled after each failed probe up to %s, and a successful probe ends it. ",
			c.ProbationAfter, retry.Human(c.ProbationInitial), retry.Human(c.ProbationMax))
	}
	fmt.Fprintf(&b, "At %d consecutive failures, a failure rate over %g%% in more than %d attempts within %s, or a 410 Gone, it is disabled: one probe every %s, and a success enables it again. ",
		c.DisableConsecutive, c.FailureRate*100, c.MinAttempts, retry.Human(c.Window), retry.Human(c.ProbeInterval))
	fmt.Fprintf(&b, "At %d consecutive failures (or over %d with no success for %s) it is frozen: nothing is attempted until an operator enables it.",
		c.FreezeConsecutive, c.FreezeStaleConsecutive, retry.Human(c.FreezeStaleAfter))
	return b.String()
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
	// Problem is why the rate limit form was refused; PerSecond and Burst
	// what it held then.
	Problem          formProblem
	PerSecond, Burst string
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
		ep.render(w, r, http.StatusOK, "endpoints", v, "Endpoints", endpointsView{accountList: view, Circuit: ep.circuit})
	}
}

// endpointsView is the endpoints list and what the page's intro says of
// the circuit (circuitWords).
type endpointsView struct {
	accountList[endpointView]
	Circuit string
}

// endpointNotices are what an endpoint's page says after its forms
// (?done=).
// A form that would leave the endpoint as it was says so instead
// (the "-unchanged" notices): "Saved" only when something changed.
var endpointNotices = map[string]string{
	"enabled":                  "Enabled: its circuit is closed, and its waiting deliveries are attempted again.",
	"enabled-unchanged":        "Nothing changed: it was enabled already (its consecutive failures count from zero again).",
	"frozen":                   "Frozen: no attempt is made to it, on any node, until it is enabled.",
	"frozen-unchanged":         "Nothing changed: it was frozen already.",
	"rate-limited":             "Rate limit set: every node together sends it no faster.",
	"rate-limited-unchanged":   "Nothing changed: the form held the rate limit it had.",
	"rate-unlimited":           "Rate limit removed.",
	"rate-unlimited-unchanged": "Nothing changed: it had no rate limit.",
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
// says done, the circuit's state the change leads to ("enabled",
// "frozen"); or, when the endpoint was in that state already as the page
// shows it (live), done+"-unchanged". Enable is made even then: it also
// sets the consecutive failures back to zero, as the API's route does.
func (ep *endpointPages) change(change func(ctx context.Context, id string) (endpoint.Endpoint, error), done string) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visit) {
		e, ok := ep.ownEndpoint(w, r, v)
		if !ok {
			return
		}
		before := ep.view(e).State
		if _, err := change(r.Context(), e.ID); ep.failed(w, r, v, "endpoint", e.ID, err) {
			return
		}
		if before == done {
			done += "-unchanged"
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
	mux.Handle("POST /console/endpoints/{id}/rate-limit", s.signedIn(s.change(ep.setRateLimit)))
	mux.Handle("POST /console/endpoints/{id}/rate-limit/remove", s.signedIn(s.change(ep.removeRateLimit)))
}

// setRateLimit is the rate limit form: per_second and burst as typed. A
// refused value shows the page again (400) naming the field, as the API's
// PATCH /v1/endpoints/{id} names it, and nothing changes. Values equal to
// the endpoint's stored rate limit write nothing, and the page says
// nothing changed.
func (ep *endpointPages) setRateLimit(w http.ResponseWriter, r *http.Request, v *visit) {
	e, ok := ep.ownEndpoint(w, r, v)
	if !ok {
		return
	}
	perSecond, burst := strings.TrimSpace(r.PostFormValue("per_second")), strings.TrimSpace(r.PostFormValue("burst"))
	rl, ierr := rateLimitOf(perSecond, burst)
	if ierr == nil && e.RateLimit != nil && *e.RateLimit == rl {
		redirect(w, r, "/console/endpoints/"+e.ID+"?done=rate-limited-unchanged")
		return
	}
	if ierr == nil {
		raw, _ := json.Marshal(rl) // two numbers
		_, err := ep.control.UpdateEndpoint(r.Context(), e.ID, endpoint.Input{RateLimit: raw})
		if !errors.As(err, &ierr) {
			if ep.failed(w, r, v, "endpoint", e.ID, err) {
				return
			}
			redirect(w, r, "/console/endpoints/"+e.ID+"?done=rate-limited")
			return
		}
	}
	view := ep.view(e)
	view.Problem = formProblem{ierr.Field, ierr.Detail, http.StatusBadRequest}
	view.PerSecond, view.Burst = perSecond, burst
	ep.render(w, r, http.StatusBadRequest, "endpoint", v, "Endpoint "+view.URL, view)
}

// rateLimitOf is the rate limit of the form's values; a value that is
// not a number is refused naming its field. Its bounds are the API's to
// check (endpoint.Input).
func rateLimitOf(perSecond, burst string) (endpoint.RateLimit, *strictjson.Error) {
	ps, err := strconv.ParseFloat(perSecond, 64)
	if err != nil || math.IsInf(ps, 0) || math.IsNaN(ps) {
		return endpoint.RateLimit{}, strictjson.Errorf("rate_limit.per_second", "must be a number of requests a second")
	}
	b, err := strconv.Atoi(burst)
	if err != nil {
		return endpoint.RateLimit{}, strictjson.Errorf("rate_limit.burst", "must be a whole number of requests")
	}
	return endpoint.RateLimit{PerSecond: ps, Burst: b}, nil
}

// removeRateLimit removes the endpoint's rate limit; for one that has
// none it writes nothing, and the page says nothing changed.
func (ep *endpointPages) removeRateLimit(w http.ResponseWriter, r *http.Request, v *visit) {
	e, ok := ep.ownEndpoint(w, r, v)
	if !ok {
		return
	}
	if e.RateLimit == nil {
		redirect(w, r, "/console/endpoints/"+e.ID+"?done=rate-unlimited-unchanged")
		return
	}
	_, err := ep.control.UpdateEndpoint(r.Context(), e.ID, endpoint.Input{RateLimit: json.RawMessage("null")})
	if ep.failed(w, r, v, "endpoint", e.ID, err) {
		return
	}
	redirect(w, r, "/console/endpoints/"+e.ID+"?done=rate-unlimited")
}
