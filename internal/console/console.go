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
package console

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

// Store is what the console reads and writes: its sessions, and the
// resources its pages show.
type Store interface {
	store.SessionStore
	GetAccount(ctx context.Context, id string) (account.Account, error)
	ListAccounts(ctx context.Context, p store.Page) ([]account.Account, string, error)
	GetSubscription(ctx context.Context, id string) (subscription.Subscription, error)
	ListSubscriptions(ctx context.Context, accountID string, p store.Page) ([]subscription.Subscription, string, error)
	ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]delivery.Delivery, string, error)
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
	Store Store
	// Auth authenticates keys; nil when authentication is off
	// (--auth=off): then any key signs in, as an admin, as the API takes
	// any request as an admin's.
	Auth   Authenticator
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
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/{$}", c.home)
	mux.HandleFunc("GET /console/login", c.loginPage)
	mux.HandleFunc("POST /console/login", c.signIn)
	mux.Handle("POST /console/logout", c.signedIn(c.change(c.signOut)))
	mux.Handle("GET /console/subscriptions", c.signedIn(c.subscriptions))
	mux.Handle("GET /console/subscriptions/{id}", c.signedIn(c.subscription))
	mux.Handle("GET /console/static/", c.staticFiles())
	mux.HandleFunc("/console/", c.notFound)
	return securityHeaders(c.recoverer(mux))
}

// home sends a visitor to the subscriptions, or to sign in first.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	if _, err := c.session(w, r); err != nil {
		redirect(w, r, "/console/login")
		return
	}
	redirect(w, r, "/console/subscriptions")
}

// notFound answers a path the console does not serve, with its 404 page.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	v, _ := c.session(w, r) // the navigation, when signed in
	c.errorPage(w, r, v, http.StatusNotFound, "There is no page "+r.URL.Path+".")
}

// recoverer turns a handler panic into a 500 page and a log line.
func (c *Console) recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				c.Logger.Error("console handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				c.errorPage(w, r, nil, http.StatusInternalServerError, "Something went wrong; the server's log says what.")
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// redirect answers 303 See Other to path: after a form, the browser GETs
// the page.
func redirect(w http.ResponseWriter, r *http.Request, path string) {
	http.Redirect(w, r, path, http.StatusSeeOther)
}
