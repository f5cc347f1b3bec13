package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Problem types of authentication and authorization.
const (
	probUnauthorized = "urn:herald:problem:unauthorized"
	probForbidden    = "urn:herald:problem:forbidden"
)

// access is who may call a route.
type access int

const (
	// public: no key (liveness, readiness, the OpenAPI document).
	public access = iota
	// publishRole: any key (publish, account and admin roles).
	publishRole
	// accountRole: account and admin keys.
	accountRole
	// adminRole: admin keys only (accounts, metrics).
	adminRole
	// topicPublish and topicAccount are publishRole and accountRole for
	// the Event Grid namespace routes (eventgrid.go): they act in the
	// account the path's {topic} names (topicAccount) instead of one
	// ?account_id= names.
	topicPublish
	topicAccount
	// anyKey: any key, acting in no account (the installation-wide
	// event-type catalog's reads: ?account_id= is refused there).
	anyKey
)

// allows reports whether a key of this role may call a route of access a.
func (a access) allows(role string) bool {
	switch a {
	case public, publishRole, topicPublish, anyKey:
		return true
	case accountRole, topicAccount:
		return role == account.RoleAccount || role == account.RoleAdmin
	default:
		return role == account.RoleAdmin
	}
}

// takesAccount reports whether a route of access a acts in an account
// that ?account_id= may name (authorize): the publish and account routes.
func (a access) takesAccount() bool { return a == publishRole || a == accountRole }

// Authenticator is how the API knows who a request is (auth.Authenticator).
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (auth.Principal, error)
	Account(ctx context.Context, id string) (account.Account, error)
}

// caller is who a request acts as, and in which account.
type caller struct {
	auth.Principal
	// Account is the account the request acts in: the key's own, or for
	// an admin key the ?account_id= one (account.DefaultID without it).
	Account string
}

type callerKey struct{}

// callerOf returns the caller authorize put in the request's context.
func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(callerKey{}).(caller)
	return c
}

// accountOf returns the account a request acts in.
func accountOf(r *http.Request) string { return callerOf(r).Account }

// authorize runs h for requests whose key may call a route of access a:
// 401 without a key or with an unknown one (with WWW-Authenticate), 403
// for a key of a role the route does not take, or for a key that names an
// account other than its own in ?account_id= (read on the routes whose
// access takes an account; checkParams refuses it on the others). An
// admin's ?account_id= must name an existing account (404 otherwise). With
// no Authenticator (auth off) every request is an admin's.
func (s *Server) authorize(a access, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a == public {
			h.ServeHTTP(w, r)
			return
		}
		p := auth.Principal{KeyID: "auth-off", AccountID: account.DefaultID, Role: account.RoleAdmin}
		if s.Auth != nil {
			var err error
			p, err = s.Auth.Authenticate(r.Context(), auth.BearerKey(r.Header.Get("Authorization")))
			switch {
			case errors.Is(err, auth.ErrUnauthenticated):
				w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
				writeProblem(w, Problem{Type: probUnauthorized, Title: "Unauthorized", Status: http.StatusUnauthorized,
					Detail: "send an API key as Authorization: Bearer <key>; this request had none, or one Herald does not know (revoked or never made)"})
				return
			case err != nil:
				s.storeError(w, r, err, "API key")
				return
			}
		}
		if !a.allows(p.Role) {
			forbidden(w, "a key of role "+p.Role+" may not "+r.Method+" "+r.URL.Path+"; it needs "+a.needs())
			return
		}
		c := caller{Principal: p, Account: p.AccountID}
		if id, ok := r.URL.Query()[accountParam.name]; ok && a.takesAccount() {
			if id[0] == "" {
				invalid(w, "account_id", "must name an account; leave it out to act in the key's own account")
				return
			}
			if p.Role != account.RoleAdmin {
				if id[0] != p.AccountID {
					forbidden(w, "a key of role "+p.Role+" acts only in its own account ("+p.AccountID+"); account_id names another")
					return
				}
			} else if !accountIDs.fits(id[0]) {
				notFoundID(w, accountParam.name, &accountIDs, id[0])
				return
			} else if _, err := s.account(r.Context(), id[0]); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: "account_id",
						Detail: "account " + quoteHeader(id[0]) + " not found"})
					return
				}
				s.storeError(w, r, err, "account")
				return
			}
			c.Account = id[0]
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// account reads an account through the Authenticator's cache (the store
// when auth is off).
func (s *Server) account(ctx context.Context, id string) (account.Account, error) {
	if s.Auth != nil {
		return s.Auth.Account(ctx, id)
	}
	return s.Store.GetAccount(ctx, id)
}

func (a access) needs() string {
	switch a {
	case accountRole, topicAccount:
		return "an account or admin key"
	case adminRole:
		return "an admin key"
	}
	return "a key"
}

func forbidden(w http.ResponseWriter, detail string) {
	writeProblem(w, Problem{Type: probForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: detail})
}

// ownSubscription reads the subscription the path's {id} names and
// reports whether it may be served: 404 when it is absent or another
// account's.
func (s *Server) ownSubscription(w http.ResponseWriter, r *http.Request) (subscription.Subscription, bool) {
	sub, err := s.Store.GetSubscription(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return sub, false
	}
	return sub, ownedBy(w, r, sub.AccountID, "subscription")
}

// ownDelivery is ownSubscription for a delivery.
func (s *Server) ownDelivery(w http.ResponseWriter, r *http.Request) (delivery.Delivery, bool) {
	d, err := s.Store.GetDelivery(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "delivery")
		return d, false
	}
	return d, ownedBy(w, r, d.AccountID, "delivery")
}

// ownEndpoint is ownSubscription for an endpoint.
func (s *Server) ownEndpoint(w http.ResponseWriter, r *http.Request) (endpoint.Endpoint, bool) {
	ep, err := s.Store.GetEndpoint(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "endpoint")
		return ep, false
	}
	return ep, ownedBy(w, r, ep.AccountID, "endpoint")
}

// ownedBy answers 404 (as if absent) when a resource of another account
// than the request's is asked for, and reports whether it may be served.
func ownedBy(w http.ResponseWriter, r *http.Request, accountID, what string) bool {
	if account.OrDefault(accountID) != accountOf(r) {
		notFound(w, what)
		return false
	}
	return true
}

// RouteAccess is one route of the API and who may call it.
type RouteAccess struct {
	// Pattern is the route's ServeMux pattern ("GET /v1/subscriptions/{id}").
	Pattern string
	// Access is "public" (no key), "publish" (any key), "account"
	// (account and admin keys) or "admin".
	Access string
}

// Routes lists every route the API serves with its access, in
// registration order (for tests and documentation).
func (s *Server) Routes() []RouteAccess {
	names := map[access]string{public: "public", publishRole: "publish", accountRole: "account", adminRole: "admin",
		topicPublish: "publish", topicAccount: "account", anyKey: "publish"}
	var out []RouteAccess
	for _, rt := range s.routes() {
		out = append(out, RouteAccess{Pattern: rt.pattern, Access: names[rt.access]})
	}
	return out
}
