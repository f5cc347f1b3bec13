package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/store"
)

// PortalCookieName is the portal session's cookie: HttpOnly, Path
// /portal/ (the browser sends it to no console page nor API route),
// lasting until the session's expiry (Max-Age). It is Secure when the request came over TLS or
// the public URL is https. SameSite is None when it is Secure and the
// account lets other sites frame the portal
// (settings.portal_frame_ancestors), since a browser sends no Lax cookie
// to a frame on another site, and Lax otherwise: the link is opened from
// another site (a mail, the platform's page), and a Strict cookie set
// there would not come back with the redirect that follows. A framed
// portal therefore needs https. Against cross-site forms it relies on
// its CSRF token and the origin check (csrf.go), not on SameSite.
const PortalCookieName = "herald_portal"

// portalVisit is one request of a portal session: its account, what it
// may see, and its session's hash and CSRF token.
type portalVisit struct {
	account account.Account
	scope   store.PortalScope
	keyID   string
	hash    []byte
	csrf    string
}

// sees reports whether the session may see a resource of accountID and
// subscriptionID: its account's, and one of its subscriptions when its
// scope names some.
func (v *portalVisit) sees(accountID, subscriptionID string) bool {
	if account.OrDefault(accountID) != account.OrDefault(v.scope.AccountID) {
		return false
	}
	return len(v.scope.SubscriptionIDs) == 0 || slices.Contains(v.scope.SubscriptionIDs, subscriptionID)
}

// portalSessions opens links and finds the session of each request.
type portalSessions struct{ *Portal }

// portalHandler serves one request of a portal session.
type portalHandler func(w http.ResponseWriter, r *http.Request, v *portalVisit)

// open takes a one-time link: its session is opened (once: the link's
// token names nothing after) and the browser given its cookie and sent to
// the subscriptions. A link used already, expired or unknown is a 410 page
// saying so, as is one whose key was revoked or whose account is gone.
// A link that opens no session (used, expired, unknown) counts as a
// failure of the client's address, and an address with too many is
// refused before the link is looked at (429 with Retry-After, the link
// left as it was: throttle.go).
func (p portalSessions) open(w http.ResponseWriter, r *http.Request) {
	setPortalHeaders(w, nil)
	if p.throttle.refuse(w, r, func(status int, msg string) { p.pages.portalError(w, r, nil, status, msg) }) {
		return
	}
	token := r.PathValue("token")
	const gone = "This portal link was used already or has expired. Ask for a new one where you found it."
	if len(token) > maxTokenLen {
		p.throttle.failed(r)
		p.pages.portalError(w, r, nil, http.StatusGone, gone)
		return
	}
	cookie := newToken()
	sess, err := p.Store.OpenPortalSession(r.Context(), tokenHash(token), tokenHash(cookie), p.Clock.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		p.throttle.failed(r)
		p.pages.portalError(w, r, nil, http.StatusGone, gone)
		return
	case err != nil:
		p.pages.portalStoreError(w, r, nil, err)
		return
	}
	v, err := p.visit(r.Context(), sess, cookie)
	switch {
	case errors.Is(err, errNoSession):
		p.end(r, sess.Hash)
		p.pages.portalError(w, r, nil, http.StatusGone, gone)
		return
	case err != nil:
		p.pages.portalStoreError(w, r, nil, err)
		return
	}
	http.SetCookie(w, p.cookie(r, v, cookie))
	redirect(w, r, "/portal/subscriptions")
}

// signedIn runs h for the requests of a live portal session, with the
// portal's headers for its account; any other is a 403 page.
func (p portalSessions) signedIn(h portalHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := p.session(w, r)
		setPortalHeaders(w, v)
		switch {
		case errors.Is(err, errNoSession):
			p.pages.portalError(w, r, nil, http.StatusForbidden,
				"This portal session has ended (or there is none). Open a new portal link to start one.")
		case err != nil:
			p.pages.portalStoreError(w, r, nil, err)
		default:
			h(w, r, v)
		}
	})
}

// notFound answers a path the portal does not serve.
func (p portalSessions) notFound(w http.ResponseWriter, r *http.Request) {
	v, _ := p.session(w, r)
	setPortalHeaders(w, v)
	p.pages.portalError(w, r, v, http.StatusNotFound, "There is no page "+r.URL.Path+".")
}

// home sends the session to its subscriptions.
func (p portalSessions) home(w http.ResponseWriter, r *http.Request, _ *portalVisit) {
	redirect(w, r, "/portal/subscriptions")
}

// session returns the visit of the request's portal cookie, or
// errNoSession when there is none or it has ended (then it is deleted and
// the cookie cleared): see visit.
func (p portalSessions) session(w http.ResponseWriter, r *http.Request) (*portalVisit, error) {
	ck, err := r.Cookie(PortalCookieName)
	if err != nil || ck.Value == "" || len(ck.Value) > maxTokenLen {
		return nil, errNoSession
	}
	hash := tokenHash(ck.Value)
	sess, err := p.Store.GetSession(r.Context(), hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errNoSession
	case err != nil:
		return nil, err
	}
	v, err := p.visit(r.Context(), sess, ck.Value)
	if errors.Is(err, errNoSession) && sess.Portal != nil && !sess.Portal.OpenedAt.IsZero() { // not an unopened link
		p.end(r, hash)
	}
	return v, err
}

// visit returns the visit of sess, opened with the cookie token, or
// errNoSession when it is no opened portal session (a console session, a
// link not opened), or has ended: expired, its key revoked (or no longer
// one that acts in its account), its account deleted.
func (p portalSessions) visit(ctx context.Context, sess store.Session, token string) (*portalVisit, error) {
	sc := sess.Portal
	if sc == nil || sc.OpenedAt.IsZero() || !p.Clock.Now().Before(sc.ExpiresAt) {
		return nil, errNoSession
	}
	pr, err := p.Auth.AuthenticateHash(ctx, sess.KeyHash)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		return nil, errNoSession
	case err != nil:
		return nil, err
	case pr.Role != account.RoleAdmin && (pr.Role != account.RoleAccount || account.OrDefault(pr.AccountID) != account.OrDefault(sc.AccountID)):
		return nil, errNoSession
	}
	acc, err := p.Store.GetAccount(ctx, account.OrDefault(sc.AccountID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errNoSession
	case err != nil:
		return nil, err
	}
	return &portalVisit{account: acc, scope: *sc, keyID: sess.KeyID, hash: sess.Hash, csrf: csrfToken(token)}, nil
}

// end deletes the portal session of hash (a failure is logged: the
// clean-up deletes it once expired).
func (p portalSessions) end(r *http.Request, hash []byte) {
	if err := p.Store.DeleteSession(context.WithoutCancel(r.Context()), hash); err != nil {
		p.Logger.Warn("portal: ending a session", "err", err)
	}
}

// cookie is the cookie that carries v's session token (see
// PortalCookieName).
func (p portalSessions) cookie(r *http.Request, v *portalVisit, token string) *http.Cookie {
	secure := r.TLS != nil || strings.HasPrefix(p.PublicURL, "https://")
	same := http.SameSiteLaxMode
	if secure && len(v.account.Settings.PortalFrameAncestors) > 0 {
		same = http.SameSiteNoneMode
	}
	// Max-Age rather than Expires: the browser's clock need not agree
	// with the server's.
	maxAge := max(int(v.scope.ExpiresAt.Sub(p.Clock.Now())/time.Second), 1)
	return &http.Cookie{Name: PortalCookieName, Value: token, Path: PortalPrefix, HttpOnly: true, Secure: secure,
		SameSite: same, MaxAge: maxAge}
}

// change runs h for a request whose form carries the session's CSRF token
// and that no page of another origin made (checkForm); 403 otherwise.
func (p portalSessions) change(h portalHandler) portalHandler {
	return func(w http.ResponseWriter, r *http.Request, v *portalVisit) {
		if status, msg := checkForm(w, r, v.csrf); status != 0 {
			p.pages.portalError(w, r, v, status, msg)
			return
		}
		h(w, r, v)
	}
}
