package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
)

// PortalLinks makes the subscriber portal's one-time links
// (console.Portal.NewLink).
type PortalLinks interface {
	NewLink(ctx context.Context, keyHash []byte, keyID string, scope store.PortalScope, ttl time.Duration) (console.PortalLink, error)
}

// maxPortalSubscriptions bounds a portal session's subscription_ids.
const maxPortalSubscriptions = 100

// portalSessionInput is the body of POST /v1/portal-sessions.
type portalSessionInput struct {
	// AccountID is the account the portal shows (absent: the request's).
	AccountID *string `json:"account_id"`
	// SubscriptionIDs, when not empty, are the only subscriptions of it
	// the portal shows.
	SubscriptionIDs *[]string            `json:"subscription_ids"`
	TTL             *strictjson.Duration `json:"ttl"`
}

// portalSessionJSON is the answer: the one-time link and when it (and the
// session it opens) ends.
type portalSessionJSON struct {
	URL       string `json:"url"`
	ExpiresAt Time   `json:"expires_at"`
}

// createPortalSession makes a one-time link to the subscriber portal
// (internal/console's portal) limited to an account and optionally some
// of its subscriptions, for ttl (console.PortalDefaultTTL; from
// console.PortalMinTTL to console.PortalMaxTTL). An account key makes
// links to its own account only (403); an unknown account is a 404 naming
// account_id, a subscription not of the account a 400 naming its entry.
// Revoking the key that made a link ends its session.
func (s *Server) createPortalSession(w http.ResponseWriter, r *http.Request) {
	if s.PortalLinks == nil {
		notFound(w, "the subscriber portal (this server does not serve it)")
		return
	}
	var in portalSessionInput
	if !decodeBody(w, r, &in) {
		return
	}
	ttl := console.PortalDefaultTTL
	if in.TTL != nil {
		if ttl = in.TTL.D(); ttl < console.PortalMinTTL || ttl > console.PortalMaxTTL {
			invalid(w, "ttl", fmt.Sprintf("must be from %s to %s, not %s", console.PortalMinTTL, console.PortalMaxTTL, ttl))
			return
		}
	}
	scope, ok := s.portalScope(w, r, in)
	if !ok {
		return
	}
	c := callerOf(r)
	keyHash := auth.Hash(auth.BearerKey(r.Header.Get("Authorization")))
	link, err := s.PortalLinks.NewLink(r.Context(), keyHash, c.KeyID, scope, ttl)
	if err != nil {
		s.storeError(w, r, err, "portal session")
		return
	}
	writeJSON(w, http.StatusCreated, portalSessionJSON{URL: link.URL, ExpiresAt: timestamp(link.ExpiresAt)})
}

// portalScope checks the account and subscriptions in asks for and
// returns them as a scope; false when it answered a problem.
func (s *Server) portalScope(w http.ResponseWriter, r *http.Request, in portalSessionInput) (store.PortalScope, bool) {
	c := callerOf(r)
	sc := store.PortalScope{AccountID: c.Account}
	if in.AccountID != nil {
		sc.AccountID = *in.AccountID
		switch _, err := s.account(r.Context(), sc.AccountID); {
		case c.Role != account.RoleAdmin && sc.AccountID != c.AccountID:
			forbidden(w, "a key of role "+c.Role+" makes portal links to its own account ("+c.AccountID+") only; account_id names another")
			return sc, false
		case errors.Is(err, store.ErrNotFound):
			writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: "account_id",
				Detail: "account " + quoteHeader(sc.AccountID) + " not found"})
			return sc, false
		case err != nil:
			s.storeError(w, r, err, "account")
			return sc, false
		}
	}
	if in.SubscriptionIDs == nil {
		return sc, true
	}
	ids := *in.SubscriptionIDs
	if len(ids) > maxPortalSubscriptions {
		invalid(w, "subscription_ids", fmt.Sprintf("must list at most %d subscriptions, got %d", maxPortalSubscriptions, len(ids)))
		return sc, false
	}
	for i, id := range ids {
		field := fmt.Sprintf("subscription_ids[%d]", i)
		if slices.Contains(ids[:i], id) {
			invalid(w, field, "repeats the subscription "+quoteHeader(id))
			return sc, false
		}
		sub, err := s.Store.GetSubscription(r.Context(), id)
		switch {
		case errors.Is(err, store.ErrNotFound), err == nil && account.OrDefault(sub.AccountID) != account.OrDefault(sc.AccountID):
			invalid(w, field, "account "+sc.AccountID+" has no subscription "+quoteHeader(id))
			return sc, false
		case err != nil:
			s.storeError(w, r, err, "subscription")
			return sc, false
		}
	}
	sc.SubscriptionIDs = ids
	return sc, true
}
