package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
	"github.com/herald-events/herald/internal/testsignal"
)

// The subscriber portal, at /portal/: what a platform hands its own
// customers (docs/portal.md). POST /v1/portal-sessions (internal/api)
// calls NewLink, which stores an unopened portal session (store.Session
// with a store.PortalScope) and returns a one-time link; opening the
// link (portal_session.go: portalSessions) opens the session once and
// gives the browser the herald_portal cookie. Every request of it sees one account, and only
// the subscriptions its scope names when it names some: their pages
// (portal_pages.go: portalPages) and their actions (portal_actions.go:
// portalActions), every form
// with the session's CSRF token. No console route takes its cookie (its
// Path is /portal/, and the console refuses a portal session's token),
// nor does the API (which takes keys only). Its pages have their own
// frame (templates/portal/), without the console's navigation, and send
// the account's settings.portal_frame_ancestors as CSP frame-ancestors.

// PortalPrefix is the path the portal is served under.
const PortalPrefix = "/portal/"

// A portal link's time to live, from its making: PortalDefaultTTL unless
// the request says otherwise, from PortalMinTTL to PortalMaxTTL. The
// session it opens ends when the link would have.
const (
	PortalDefaultTTL = time.Hour
	PortalMinTTL     = 5 * time.Minute
	PortalMaxTTL     = 24 * time.Hour
)

// PortalControl is how the portal's forms change subscriptions and
// deliveries: the control plane's calls the API makes (control.Service).
type PortalControl interface {
	CreateSubscription(ctx context.Context, sub subscription.Subscription) error
	UpdateSubscription(ctx context.Context, id string, change func(*subscription.Subscription) error) (subscription.Subscription, error)
	RotateSecret(ctx context.Context, id string, secret []byte, grace time.Duration) (subscription.Subscription, error)
	Redeliver(ctx context.Context, id string) (delivery.Delivery, error)
	Recover(ctx context.Context, j job.Job) (job.Job, error)
}

// TestPublisher publishes a test event to one subscription alone, as the
// API's POST /v1/subscriptions/{id}/test does (admission.Publisher).
type TestPublisher interface {
	PublishTo(ctx context.Context, accountID, subscriptionID string, ev event.Event) (admission.Targeted, error)
}

// Portal serves the subscriber portal.
type Portal struct {
	Store     Store
	Control   PortalControl
	Publisher TestPublisher
	// Destinations checks a subscription URL the portal is given, as the
	// API's (destination.Guard.Check).
	Destinations destination.Guard
	// EventTypes is the event-type catalog: the types a subscriber may
	// pick and read (portal_eventtypes.go; nil: none).
	EventTypes EventTypeCatalog
	// Auth authenticates again, on each request, the key that made a
	// session's link: revoking it ends the session. nil: authentication
	// is off (any key is an admin's).
	Auth Authenticator
	// PublicURL is Herald's base URL, which a link begins with; an https
	// one makes the cookie Secure (portal_session.go).
	PublicURL string
	// Live is the scheduler's view of the endpoints, for what holds a
	// delivery (nil: the store's health).
	Live   endpoint.Live
	Clock  clock.Clock  // default clock.Real{}
	Logger *slog.Logger // default discards
	// TestSignals are for tests: TypesBuilt emits the catalog version
	// the event types page's shared part was built for
	// (portalTypesCache), once per build.
	TestSignals struct {
		TypesBuilt testsignal.Signal[int64]
	}

	pages *pages
	// throttle counts the links that open nothing (throttle.go).
	throttle *signInThrottle
	// types is the event types page's costly part, shared per catalog
	// version (portal_eventtypes.go).
	types portalTypesCache
}

// PortalLink is a link NewLink made.
type PortalLink struct {
	URL       string
	ExpiresAt time.Time
}

// NewLink stores an unopened portal session of scope (its ExpiresAt is
// ttl from now; OpenedAt is ignored), made by the key of hash keyHash
// (keyID for logs), and returns its one-time link. The caller checks the
// scope: its account and subscriptions exist and the key may act in it.
func (p *Portal) NewLink(ctx context.Context, keyHash []byte, keyID string, scope store.PortalScope, ttl time.Duration) (PortalLink, error) {
	p.defaults()
	token := newToken()
	now := p.Clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	scope.ExpiresAt, scope.OpenedAt = now.Add(ttl), time.Time{}
	sess := store.Session{Hash: tokenHash(token), KeyHash: keyHash, KeyID: keyID, CreatedAt: now, LastSeenAt: now, Portal: &scope}
	if err := p.Store.CreateSession(ctx, sess, MaxSessionsPerKey); err != nil {
		return PortalLink{}, fmt.Errorf("making a portal session: %w", err)
	}
	return PortalLink{URL: strings.TrimSuffix(p.PublicURL, "/") + PortalPrefix + token, ExpiresAt: scope.ExpiresAt}, nil
}

func (p *Portal) defaults() {
	if p.Clock == nil {
		p.Clock = clock.Real{}
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	if p.Auth == nil {
		p.Auth = authOff{}
	}
	if p.pages == nil {
		p.pages = &pages{log: p.Logger}
	}
	if p.throttle == nil {
		p.throttle = newSignInThrottle("portal link", p.Clock, p.Logger)
	}
}

// Handler returns the portal's routes, every path under PortalPrefix
// (and PortalPrefix without its slash).
func (p *Portal) Handler() http.Handler {
	p.defaults()
	s, pg := portalSessions{p}, portalPages{p}
	ac := portalActions{pg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /portal/{token}", s.open)
	mux.Handle("GET /portal/{$}", s.signedIn(s.home))
	mux.Handle("GET /portal/subscriptions", s.signedIn(pg.subscriptions))
	mux.Handle("POST /portal/subscriptions", s.signedIn(s.change(pg.createSubscription)))
	mux.Handle("GET /portal/subscriptions/{id}", s.signedIn(pg.subscription))
	mux.Handle("POST /portal/subscriptions/{id}", s.signedIn(s.change(pg.editSubscription)))
	mux.Handle("POST /portal/subscriptions/preview", s.signedIn(s.change(portalPreviews{pg}.previewNew)))
	mux.Handle("POST /portal/subscriptions/{id}/preview", s.signedIn(s.change(portalPreviews{pg}.previewEdit)))
	mux.Handle("POST /portal/subscriptions/{id}/secret", s.signedIn(s.change(ac.showSecret)))
	mux.Handle("POST /portal/subscriptions/{id}/rotate", s.signedIn(s.change(ac.rotateSecret)))
	mux.Handle("POST /portal/subscriptions/{id}/test", s.signedIn(s.change(ac.sendTest)))
	mux.Handle("POST /portal/subscriptions/{id}/recover", s.signedIn(s.change(ac.recoverSubscription)))
	mux.Handle("GET /portal/event-types", s.signedIn(pg.eventTypes))
	mux.Handle("GET /portal/jobs/{id}", s.signedIn(ac.job))
	mux.Handle("GET /portal/deliveries/{id}", s.signedIn(ac.delivery))
	mux.Handle("POST /portal/deliveries/{id}/redeliver", s.signedIn(s.change(ac.redeliver)))
	mux.HandleFunc("/portal/", s.notFound)
	mux.HandleFunc("/portal", s.notFound)
	return mux
}

// base is the console's page base over the portal's store and clock (the
// delivery rows and page the two share).
func (p *Portal) base() base {
	return base{store: p.Store, live: p.Live, now: p.Clock.Now, pages: p.pages}
}
