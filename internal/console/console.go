// Package console is Herald's web console, served by herald serve at
// /console/ on the API's address (internal/api mounts it beside the API's
// routes): server-rendered pages from the templates and static files
// embedded in the binary, usable without JavaScript.
//
// A person signs in with an API key of role admin or account
// (session.go): the console keeps a session in the store, valid on every
// node, and gives the browser its token in the herald_session cookie.
// Every request of the session authenticates the key again, so revoking
// the key ends the session; every form that changes something carries the
// session's CSRF token (csrf.go); every response carries the security
// headers of headers.go. An account key sees its own account only; an
// admin key sees every account and may pick one. docs/console.md is the
// user's guide.
//
// The code: Handler (here) holds the route table. sessions (session.go,
// signin.go, csrf.go) signs in and out and wraps the handlers that need a
// session (signedIn) or change something (change); pages (render.go,
// headers.go) renders the templates of templates/ in their layout, the
// error page and static/. Each group of pages is a type embedding base
// (base.go: the store, pages, the account a request may see), such as
// subscriptionPages (subscriptions.go) and deliveryPages (deliveries.go,
// delivery.go, deadletters.go: the forms there change deliveries through
// Control), subscriptionActions (subscription_actions.go,
// subscription_form.go, subscription_tools.go: the subscription forms,
// through Control, Publisher and the subscription package's Input, as the
// API's handlers), eventPages (events.go), endpointPages (endpoints.go:
// Enable and Freeze through Control) and the admin's accountPages
// (accounts.go: accounts and keys through Accounts) and sourcePages
// (sources.go, source_form.go: the broker sources through Sources). A new page is a handler on its
// group's type taking the request's *visit, a template in templates/
// defining "content", and a route in Handler wrapped in signedIn (and in
// change for a POST); html/template escapes what it shows.
//
// The subscriber portal (portal.go) is another handler of this package,
// Portal, served at /portal/: it shares the session store, the CSRF check,
// the headers and the templates' pieces, never the console's routes.
package console

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

// Store is what the console reads and writes: its sessions, and the
// resources its pages show.
type Store interface {
	store.SessionStore
	// The pages' reads, the API's too.
	store.ReadStore
	GetEvent(ctx context.Context, seq int64) (store.StoredEvent, error)
	// The overview's backlog, and what the endpoints not enabled hold.
	CountBacklog(ctx context.Context, limit int64) (store.Backlog, error)
	CountPendingOf(ctx context.Context, endpointIDs []string, limit int64) (int64, error)
	// The broker sources' pages (sources.go), as the API reads them.
	GetSource(ctx context.Context, id string) (source.Source, error)
	ListSources(ctx context.Context, p store.Page) ([]source.Source, string, error)
	ListSourceDeadLetters(ctx context.Context, sourceID string, p store.Page) ([]source.DeadLetter, string, error)
	SourceLeader(ctx context.Context, id string, now time.Time) (owner string, until time.Time, err error)
}

// Control is how the console's forms change deliveries and subscriptions:
// the calls the API's handlers make (control.Service), which tell the
// scheduler and the catalog as well as the store.
type Control interface {
	SubscriptionControl
	EndpointControl
	// Redeliver makes a delivery due now with a fresh attempt budget:
	// store.ErrConflict while an attempt is in progress,
	// store.ErrSubscriptionDeleted when its subscription is gone.
	Redeliver(ctx context.Context, id string) (delivery.Delivery, error)
	// RedriveIDs redrives the dead letters among ids of the account (the
	// others are ignored) and returns how many moved.
	RedriveIDs(ctx context.Context, accountID string, ids []string) (int, error)
	// Recover starts a recover job (job.RecoverRequest's) and returns it
	// with its id and count: store.ErrNotFound when the subscription is gone.
	Recover(ctx context.Context, j job.Job) (job.Job, error)
}

// Authenticator is how the console knows whose key signs in, and whether
// a session's key still works (auth.Authenticator, whose cache the API's
// requests share).
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (auth.Principal, error)
	AuthenticateHash(ctx context.Context, hash []byte) (auth.Principal, error)
}

// Console serves the console's pages.
type Console struct {
	Store   Store
	Control Control
	// Auth authenticates keys; nil when authentication is off
	// (--auth=off): then any key signs in, as an admin, as the API takes
	// any request as an admin's.
	Auth Authenticator
	// Publisher sends a subscription's test event (admission.Publisher,
	// as the API's POST /v1/subscriptions/{id}/test does).
	Publisher Publisher
	// Destinations refuses a subscription URL whose host the policy does
	// not allow, as the API's (see api.Server's Destinations).
	Destinations destination.Guard
	// Accounts makes accounts and keys and revokes keys for the admin's
	// pages (control.Accounts, as the API's routes).
	Accounts AccountControl
	// EventTypes is the event-type catalog (eventtypes.go; nil: no
	// catalog pages).
	EventTypes EventTypeCatalog
	// Sources writes the broker sources for the admin's source pages
	// (sources.go; control.Sources, as the API's routes; nil: no source
	// pages).
	Sources SourceControl
	// Live is the scheduler's view of the endpoints (nil: the store's
	// health is shown); HealthWindow the failure-rate rule's window, for
	// the endpoints' window counts (default 1h, as the API's).
	Live         endpoint.Live
	HealthWindow time.Duration
	// Health is the circuit's thresholds, which the endpoints page states
	// (zero: health.DefaultConfig()).
	Health health.Config
	Clock  clock.Clock  // default clock.Real{}
	Logger *slog.Logger // default discards
}

// Handler returns the console's routes, every path under Prefix (and
// Prefix without its slash, redirected to it).
func (c *Console) Handler() http.Handler {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Auth == nil {
		c.Auth = authOff{}
	}
	if c.HealthWindow <= 0 {
		c.HealthWindow = time.Hour
	}
	if c.Health == (health.Config{}) {
		c.Health = health.DefaultConfig()
	}
	pg := &pages{log: c.Logger}
	s := &sessions{store: c.Store, auth: c.Auth, clock: c.Clock, log: c.Logger, pages: pg,
		throttle: newSignInThrottle("console sign-in", c.Clock, c.Logger)}
	b := base{store: c.Store, live: c.Live, now: c.Clock.Now, pages: pg}
	subs := &subscriptionPages{b}
	acts := &subscriptionActions{base: b, control: c.Control, publisher: c.Publisher, destinations: c.Destinations, clock: c.Clock,
		eventTypes: c.EventTypes, preview: previewer{store: c.Store, catalog: c.EventTypes, now: c.Clock.Now}}
	evs := &eventPages{b}
	dls := &deliveryPages{base: b, control: c.Control}
	ov := &overviewPages{base: b, clockNow: c.Clock.Now}
	eps := &endpointPages{base: b, control: c.Control, live: c.Live, window: c.HealthWindow, clockNow: c.Clock.Now, circuit: circuitWords(c.Health)}
	accs := &accountPages{base: b, accounts: c.Accounts, clock: c.Clock}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/{$}", s.home(ov.overview))
	mux.HandleFunc("GET /console/login", s.loginPage)
	mux.HandleFunc("POST /console/login", s.signIn)
	mux.Handle("POST /console/logout", s.signedIn(s.change(s.signOut)))
	mux.Handle("GET /console/subscriptions", s.signedIn(subs.subscriptions))
	mux.Handle("GET /console/subscriptions/{id}", s.signedIn(subs.subscription))
	acts.routes(mux, s)
	mux.Handle("GET /console/events", s.signedIn(evs.event))
	mux.Handle("GET /console/deliveries", s.signedIn(dls.deliveries))
	mux.Handle("GET /console/deliveries/{id}", s.signedIn(dls.delivery))
	mux.Handle("POST /console/deliveries/{id}/redeliver", s.signedIn(s.change(dls.redeliver)))
	mux.Handle("GET /console/dead-letters", s.signedIn(dls.deadLetters))
	mux.Handle("POST /console/dead-letters/redrive", s.signedIn(s.change(dls.redrive)))
	eps.routes(mux, s)
	accs.routes(mux, s)
	(&eventTypePages{base: b, catalog: c.EventTypes}).routes(mux, s)
	(&sourcePages{base: b, sources: c.Sources}).routes(mux, s)
	mux.Handle("GET /console/static/", pg.staticFiles(s.notFound))
	mux.HandleFunc("/console/", s.notFound)
	return securityHeaders(mux)
}

// redirect answers 303 See Other to path: after a form, the browser GETs
// the page.
func redirect(w http.ResponseWriter, r *http.Request, path string) {
	http.Redirect(w, r, path, http.StatusSeeOther)
}
