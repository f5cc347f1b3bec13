// Package api is Herald's HTTP API, described in openapi.yaml beside this
// file: subscriptions, publishing, the delivery log, dead letters and
// redelivery, health and metrics. Every error is an RFC 9457 problem document
// naming the bad field, and a request that fails validation changes nothing.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/control"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Store is what the API reads from the store directly; changes go through
// the control plane (control.Service).
type Store interface {
	store.ReadStore
	Ping(ctx context.Context) error
	SubscriptionByName(ctx context.Context, accountID, name string) (subscription.Subscription, error)
	ListQueued(ctx context.Context, f store.DeliveryFilter) ([]store.DeadLetter, string, error)
	EndpointID(accountID, url string) string
	CountPending(ctx context.Context) (fresh, retry int64, err error)
	CountQueued(ctx context.Context) (int64, error)
	GetEventType(ctx context.Context, name string) (eventtype.EventType, error)
	ListEventTypes(ctx context.Context, f store.EventTypeFilter, p store.Page) ([]eventtype.EventType, string, error)
	AllEventTypes(ctx context.Context) ([]eventtype.EventType, error)
	EventTypesVersion(ctx context.Context) (int64, error)
	GetSource(ctx context.Context, id string) (source.Source, error)
	ListSources(ctx context.Context, p store.Page) ([]source.Source, string, error)
	ListSourceDeadLetters(ctx context.Context, sourceID string, p store.Page) ([]source.DeadLetter, string, error)
}

// Publisher is the publish path (ingest).
type Publisher interface {
	Publish(ctx context.Context, accountID string, evs []event.Event) ([]admission.Result, error)
	// PublishTo publishes one event for one subscription alone (a test
	// event).
	PublishTo(ctx context.Context, accountID, subscriptionID string, ev event.Event) (admission.Targeted, error)
}

// Server holds what the handlers need.
type Server struct {
	Store    Store
	Control  *control.Service
	Accounts *control.Accounts
	// EventTypes writes the event-type catalog.
	EventTypes *control.EventTypes
	// Sources writes the broker sources.
	Sources   *control.Sources
	Publisher Publisher
	Live      endpoint.Live
	Clock     clock.Clock
	Logger    *slog.Logger
	// Registry serves /metrics; the server adds its own collectors to it.
	Registry *prometheus.Registry
	Version  string
	// HealthWindow is the rolling window of the endpoint failure-rate rule,
	// for the window counts the endpoint resource shows (default 1h).
	HealthWindow time.Duration
	// Destinations is the attempting stage's destination policy and
	// resolver: a subscription URL whose host it refuses is refused (422;
	// see destination.Guard.Check). The zero Guard allows public addresses
	// only and looks names up with net.DefaultResolver.
	Destinations destination.Guard
	// Auth authenticates API keys; nil turns authentication off (every
	// request acts as an admin: --auth=off, for local experiments only).
	Auth Authenticator
	// Queue serves the consumers of queued deliveries.
	Queue Queue
	// Validator confirms endpoint validations made through the validation
	// URL (nil: none).
	Validator interface {
		Confirm(ctx context.Context, id, code string) error
	}
	// Console, when not nil, serves /console and every path under
	// /console/ (internal/console) beside the API's routes: see
	// withConsole.
	Console http.Handler
	// Portal, when not nil, serves /portal and every path under /portal/
	// (internal/console's subscriber portal), as Console does; PortalLinks
	// makes its links for POST /v1/portal-sessions (which answers 404
	// without it).
	Portal      http.Handler
	PortalLinks PortalLinks
	// Tracing: traces are exported (docs/tracing.md), and a publish
	// request's W3C traceparent and tracestate headers go to the
	// Publisher in its context (tracing.WithRequest), the parent of the
	// publish spans of its events that carry no traceparent of their own.
	Tracing bool
	// MaxReceivesPerAccount bounds the receives of one account that wait
	// at once (a long poll), on either API's route; one more answers 429
	// with Retry-After (0: no bound; see receiveSlots).
	MaxReceivesPerAccount int
	// PublishTimeout is how long a publish request may take from the
	// start of its handler (0: api.PublishTimeout, which the HTTP
	// server's WriteTimeout sets; tests shorten it).
	PublishTimeout time.Duration

	published   *prometheus.CounterVec
	receives    *receiveSlots
	asyncAPIDoc asyncAPIDocument
}

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Registry == nil {
		s.Registry = prometheus.NewRegistry()
	}
	if s.HealthWindow <= 0 {
		s.HealthWindow = time.Hour
	}
	s.registerMetrics()
	s.receives = newReceiveSlots(s.MaxReceivesPerAccount, s)

	routes := s.routes()
	mux := http.NewServeMux()
	custom := map[string]*actions{} // by ServeMux pattern
	for _, rt := range routes {
		// After the key and the body's Content-Type, the route's own
		// declaration: its query parameters, then the id in its path (or
		// the account its {topic} names).
		rt.handler = checkParams(rt, checkPathID(rt, s.inTopic(rt, rt.handler)))
		h := s.authorize(rt.access, guard(rt))
		pattern, wildcard, action, ok := splitAction(rt.pattern)
		if !ok {
			mux.Handle(rt.pattern, h)
			continue
		}
		if custom[pattern] == nil {
			custom[pattern] = &actions{wildcard: wildcard}
			mux.Handle(pattern, custom[pattern])
		}
		custom[pattern].add(action, h)
	}
	mux.Handle("/", noRoute(routes))
	return s.logRequests(s.recoverer(s.withConsole(eventGridForm(cleanPathsOnly(checkQuery(mux))))))
}

// route is one operation of the API: a ServeMux pattern, its handler, the
// request body it takes, which decides the Content-Types it accepts (see
// guard), who may call it, and the query parameters it takes besides
// account_id (which its access decides: route.params). checkParams refuses
// any other parameter; checkPathID an {id} that cannot be one.
type route struct {
	pattern string
	handler http.Handler
	body    bodyKind
	access  access
	query   []param
}

// routes returns every operation Handler serves, in registration order. The
// OpenAPI document (openapi.yaml) describes each one; openapi_test.go checks
// that it does.
func (s *Server) routes() []route {
	h := func(f http.HandlerFunc) http.Handler { return f }
	return []route{
		{"POST /v1/accounts", h(s.createAccount), jsonBody, adminRole, nil},
		{"GET /v1/accounts", h(s.listAccounts), noBody, adminRole, listParams()},
		{"GET /v1/accounts/{id}", h(s.getAccount), noBody, adminRole, nil},
		{"PATCH /v1/accounts/{id}", h(s.updateAccount), jsonBody, adminRole, nil},
		{"DELETE /v1/accounts/{id}", h(s.deleteAccount), noBody, adminRole, nil},
		{"POST /v1/keys", h(s.createKey), jsonBody, accountRole, nil},
		{"GET /v1/keys", h(s.listKeys), noBody, accountRole, listParams()},
		{"DELETE /v1/keys/{id}", h(s.deleteKey), noBody, accountRole, nil},
		{"POST /v1/event-types", h(s.createEventType), jsonBody, adminRole, nil},
		{"GET /v1/event-types", h(s.listEventTypes), noBody, anyKey, listParams(groupFilter, archivedFilter)},
		{"GET /v1/event-types/asyncapi.json", h(s.asyncAPI), noBody, anyKey, nil},
		{"GET /v1/event-types/{name}", h(s.getEventType), noBody, anyKey, nil},
		{"PATCH /v1/event-types/{name}", h(s.updateEventType), jsonBody, adminRole, nil},
		{"DELETE /v1/event-types/{name}", h(s.archiveEventType), noBody, adminRole, nil},
		// Broker sources: consumers that publish what they read.
		{"POST /v1/sources", h(s.createSource), jsonBody, adminRole, nil},
		{"GET /v1/sources", h(s.listSources), noBody, adminRole, listParams()},
		{"GET /v1/sources/{id}", h(s.getSource), noBody, adminRole, nil},
		{"PATCH /v1/sources/{id}", h(s.updateSource), jsonBody, adminRole, nil},
		{"DELETE /v1/sources/{id}", h(s.deleteSource), noBody, adminRole, nil},
		{"POST /v1/sources/{id}/pause", s.pauseSource(true), noBody, adminRole, nil},
		{"POST /v1/sources/{id}/resume", s.pauseSource(false), noBody, adminRole, nil},
		{"GET /v1/sources/{id}/dead-letters", h(s.listSourceDeadLetters), noBody, adminRole, listParams()},
		{"POST /v1/subscriptions", h(s.createSubscription), jsonBody, accountRole, nil},
		{"GET /v1/subscriptions", h(s.listSubscriptions), noBody, accountRole, listParams(nameFilter)},
		{"GET /v1/subscriptions/{id}", h(s.getSubscription), noBody, accountRole, nil},
		{"PATCH /v1/subscriptions/{id}", h(s.updateSubscription), jsonBody, accountRole, nil},
		{"DELETE /v1/subscriptions/{id}", h(s.deleteSubscription), noBody, accountRole, nil},
		{"GET /v1/subscriptions/{id}/secret", h(s.getSecret), noBody, accountRole, nil},
		{"POST /v1/subscriptions/{id}/secret/rotate", h(s.rotateSecret), optionalBody, accountRole, nil},
		{"POST /v1/subscriptions/{id}/reactivate", h(s.reactivate), noBody, accountRole, nil},
		{"POST /v1/subscriptions/{id}/deactivate", h(s.deactivate), noBody, accountRole, nil},
		// Every failed delivery of a time range made due again, by a job.
		{"POST /v1/subscriptions/{id}/recover", h(s.recoverSubscription), jsonBody, accountRole, nil},
		{"GET /v1/jobs/{id}", h(s.getJob), noBody, accountRole, nil},
		// A test event for this subscription alone, through the delivery path.
		{"POST /v1/subscriptions/{id}/test", h(s.sendTestEvent), optionalBody, accountRole, nil},
		// Would this event go to this subscription? (Nothing is published.)
		{"POST /v1/subscriptions/{id}/filter-test", h(s.filterTest), jsonBody, accountRole, nil},
		{"POST /v1/filter-test", h(s.filterTestUnsaved), jsonBody, accountRole, nil},
		// Consumers of a pull (or deactivated push) subscription's queue.
		{"POST /v1/subscriptions/{id}/receive", h(s.receive), optionalBody, accountRole, nil},
		{"POST /v1/subscriptions/{id}/acknowledge", s.settle(store.Acknowledge), jsonBody, accountRole, nil},
		{"POST /v1/subscriptions/{id}/release", s.settle(store.Release), jsonBody, accountRole, nil},
		{"POST /v1/subscriptions/{id}/reject", s.settle(store.Reject), jsonBody, accountRole, nil},
		{"POST /v1/subscriptions/{id}/renew-lock", s.settle(store.Renew), jsonBody, accountRole, nil},
		{"POST /v1/events", h(s.publish), eventsBody, publishRole, nil},
		{"GET /v1/deliveries", h(s.listDeliveries), noBody, accountRole, listParams(subscriptionFilter, statusFilter, eventFilter, urlFilter, orderingKeyFilter)},
		{"GET /v1/deliveries/{id}", h(s.getDelivery), noBody, accountRole, nil},
		{"GET /v1/deliveries/{id}/attempts", h(s.listAttempts), noBody, accountRole, listParams()},
		{"POST /v1/deliveries/{id}/redeliver", h(s.redeliver), noBody, accountRole, nil},
		{"GET /v1/dead-letters", h(s.listDeadLetters), noBody, accountRole, listParams(subscriptionFilter)},
		{"POST /v1/dead-letters/redrive", h(s.redrive), jsonBody, accountRole, nil},
		// A one-time link to the subscriber portal (internal/console).
		{"POST /v1/portal-sessions", h(s.createPortalSession), jsonBody, accountRole, nil},
		{"GET /v1/endpoints", h(s.listEndpoints), noBody, accountRole, listParams(stateFilter)},
		{"GET /v1/endpoints/{id}", h(s.getEndpoint), noBody, accountRole, nil},
		// The endpoint's settings: its rate limit.
		{"PATCH /v1/endpoints/{id}", h(s.updateEndpoint), jsonBody, accountRole, nil},
		// An operator's change of the circuit: enabled (counters reset), or
		// frozen until enabled.
		{"POST /v1/endpoints/{id}/enable", s.changeEndpoint(s.Control.EnableEndpoint), noBody, accountRole, nil},
		{"POST /v1/endpoints/{id}/freeze", s.changeEndpoint(s.Control.FreezeEndpoint), noBody, accountRole, nil},
		// Deliveries per minute (or coarser step) from the rollups.
		{"GET /v1/stats", h(s.getStats), noBody, accountRole, []param{windowParam, subscriptionFilter, endpointFilter}},
		// Azure Event Grid's publishing, for its clients (eventgrid.go): a
		// topic's endpoint, and a namespace's topics and their
		// subscriptions' queues (custom methods: see splitAction).
		{"POST /api/events", h(s.publishEventGrid), eventsBody, publishRole, []param{apiVersionParam}},
		{"POST /topics/{topic}:publish", h(s.publishToTopic), eventsBody, topicPublish, []param{apiVersionParam}},
		{"POST /topics/{topic}/eventsubscriptions/{subscription}:receive", h(s.receiveEventGrid), noBody, topicAccount, []param{apiVersionParam, maxEventsParam, maxWaitTimeParam}},
		{"POST /topics/{topic}/eventsubscriptions/{subscription}:acknowledge", s.settleEventGrid(store.Acknowledge), jsonBody, topicAccount, []param{apiVersionParam}},
		{"POST /topics/{topic}/eventsubscriptions/{subscription}:release", s.settleEventGrid(store.Release), jsonBody, topicAccount, []param{apiVersionParam, releaseDelayParam}},
		{"POST /topics/{topic}/eventsubscriptions/{subscription}:reject", s.settleEventGrid(store.Reject), jsonBody, topicAccount, []param{apiVersionParam}},
		{"POST /topics/{topic}/eventsubscriptions/{subscription}:renewLock", s.settleEventGrid(store.Renew), jsonBody, topicAccount, []param{apiVersionParam}},
		{"GET /healthz", h(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.Version})
		}), noBody, public, nil},
		{"GET /readyz", h(s.ready), noBody, public, nil},
		// An Event Grid endpoint validating itself: the code is the key.
		{"GET /v1/validation/{id}", h(s.confirmValidation), noBody, public, []param{codeParam}},
		// Metrics count across accounts: an operator's, like the accounts.
		{"GET /metrics", promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{}), noBody, adminRole, nil},
		{"GET /openapi.yaml", h(serveOpenAPI), noBody, public, nil},
	}
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.Store.Ping(ctx); err != nil {
		unavailable(w, "not ready: the store does not answer: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// recoverer turns a handler panic into a 500 problem and a log line.
func (s *Server) recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Logger.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				internalError(w)
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// storeError answers for an error from the store.
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, err error, what string) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFound(w, what)
	case errors.Is(err, store.ErrSubscriptionDeleted):
		conflict(w, "", "the "+what+"'s subscription was deleted; it cannot be delivered again")
	case errors.Is(err, store.ErrInvalidCursor):
		invalid(w, "cursor", "not a cursor this list returned")
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrClosed), errors.Is(err, context.DeadlineExceeded):
		unavailable(w, storeUnavailable)
	case errors.Is(err, store.ErrStaleCatalog):
		// A publish re-matched several times while subscriptions kept
		// changing under it: nothing was written.
		unavailable(w, "subscriptions changed while the events were matched; nothing was stored, publish again")
	case errors.Is(err, context.Canceled):
		// The client went away.
	default:
		s.Logger.Error("store error", "method", r.Method, "path", r.URL.Path, "err", err)
		internalError(w)
	}
}

// page reads limit (1..store.MaxLimit, default store.DefaultLimit) and
// cursor. The list checks the cursor: one it did not give is a
// store.ErrInvalidCursor error, which storeError answers 400 naming cursor.
func page(w http.ResponseWriter, r *http.Request) (store.Page, bool) {
	p := store.Page{Cursor: cursorParam.in(r), Limit: store.DefaultLimit}
	if v := limitParam.in(r); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			invalid(w, "limit", "limit must be a whole number from 1 to "+strconv.Itoa(store.MaxLimit))
			return p, false
		}
		p.Limit = n
	}
	return p, true
}

func (s *Server) registerMetrics() {
	s.published = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_events_published_total",
		Help: "Events accepted by POST /v1/events, by whether they were duplicates.",
	}, []string{"duplicate"})
	s.Registry.MustRegister(s.published)
	s.Registry.MustRegister(newPendingCollector(s.Store))
}
