package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/store"
)

// Sessions. A session lives in the store (store.Session), kept by the
// SHA-256 of its token; the token is only in the browser's cookie. Every
// request of a session reads it from the store (one read by its key) and
// authenticates its API key again through Authenticator, whose cache makes
// that free until the auth version moves: a revoked key ends its sessions
// on the node that revoked it at once, on the others within
// auth.DefaultRecheck.
const (
	// CookieName is the session cookie: HttpOnly, SameSite=Strict, Path
	// /console/, Secure when the request came over TLS, and no expiry of
	// its own (the browser drops it when it closes; the server ends the
	// session when it is idle).
	CookieName = "herald_session"
	// IdleTimeout ends a session that made no request for this long; the
	// server's clean-up deletes such sessions (internal/server).
	IdleTimeout = 12 * time.Hour
	// TouchEvery bounds a session's writes: a request writes its
	// last-seen time only when the stored one is older than this, so a
	// session costs at most one store write a minute however many
	// requests it makes. The idle time counts from the stored last-seen
	// time, so a session may end up to TouchEvery short of IdleTimeout
	// after its last request.
	TouchEvery = time.Minute
	// MaxSessionsPerKey bounds the sessions of one key: a sign-in past it
	// ends the key's session last seen longest ago.
	MaxSessionsPerKey = 10
)

// maxTokenLen bounds the cookie value looked up: a token is 43 bytes.
const maxTokenLen = 64

// errNoSession: the request has no session, or one that has ended.
var errNoSession = errors.New("no session")

// sessions signs people in and out, and finds the session of each request.
type sessions struct {
	store store.SessionStore
	auth  Authenticator
	clock clock.Clock
	log   *slog.Logger
	// throttle counts the sign-in form's unknown keys (throttle.go).
	throttle *signInThrottle
	*pages
}

// home shows a signed-in visitor the overview, and sends others to sign
// in first; a session that cannot be read (the store away) is storeError's.
func (s *sessions) home(overview sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.session(w, r)
		switch {
		case errors.Is(err, errNoSession):
			redirect(w, r, "/console/login")
		case err != nil: // the store: 503 while it is away, not a sign-in
			s.storeError(w, r, nil, err)
		default:
			overview(w, r, v)
		}
	}
}

// notFound answers a path the console does not serve, with its 404 page
// (with the navigation when signed in).
func (s *sessions) notFound(w http.ResponseWriter, r *http.Request) {
	v, _ := s.session(w, r)
	s.errorPage(w, r, v, http.StatusNotFound, "There is no page "+r.URL.Path+".")
}

// visit is one request of a signed-in session: who it is, and its
// session's hash and CSRF token.
type visit struct {
	auth.Principal
	hash []byte
	csrf string
}

// admin reports whether the session's key is an admin's, who sees every
// account.
func (v *visit) admin() bool { return v.Role == account.RoleAdmin }

// sees reports whether the session may see a resource of accountID: an
// admin's sees every account's, an account key's its own account's only.
func (v *visit) sees(accountID string) bool {
	return v.admin() || account.OrDefault(accountID) == account.OrDefault(v.AccountID)
}

// sessionHandler serves one request of a signed-in session.
type sessionHandler func(w http.ResponseWriter, r *http.Request, v *visit)

// signedIn runs h for requests of a live session. Without one a GET is
// sent to sign in (saying the session ended when it brought a cookie); any
// other method is refused (403).
func (s *sessions) signedIn(h sessionHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.session(w, r)
		switch {
		case errors.Is(err, errNoSession) && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			if _, had := r.Cookie(CookieName); had == nil {
				redirect(w, r, "/console/login?ended")
				return
			}
			redirect(w, r, "/console/login")
		case errors.Is(err, errNoSession):
			s.errorPage(w, r, nil, http.StatusForbidden, "You are not signed in (or your session has ended): sign in again.")
		case err != nil:
			s.storeError(w, r, nil, err)
		default:
			h(w, r, v)
		}
	})
}

// session returns the visit of the request's session cookie, or
// errNoSession when there is none or it has ended: unknown, idle for
// IdleTimeout, or its key revoked (then the session is deleted). A cookie
// that names no live session (or a portal session: portal_session.go) is
// cleared. A live session last seen more
// than TouchEvery ago is touched.
func (s *sessions) session(w http.ResponseWriter, r *http.Request) (*visit, error) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" || len(ck.Value) > maxTokenLen {
		return nil, errNoSession
	}
	ctx, hash, now := r.Context(), tokenHash(ck.Value), s.clock.Now()
	sess, err := s.store.GetSession(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		clearCookie(w, r)
		return nil, errNoSession
	case err != nil:
		return nil, err
	case sess.Portal != nil: // a portal session's token (or link): never the console's
		clearCookie(w, r)
		return nil, errNoSession
	}
	if !now.Before(sess.LastSeenAt.Add(IdleTimeout)) {
		s.end(w, r, hash)
		return nil, errNoSession
	}
	p, err := s.auth.AuthenticateHash(ctx, sess.KeyHash)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated), err == nil && !mayUse(p.Role):
		s.end(w, r, hash)
		return nil, errNoSession
	case err != nil:
		return nil, err
	}
	if sess.LastSeenAt.Before(now.Add(-TouchEvery)) {
		if err := s.store.TouchSession(ctx, hash, now, now.Add(-TouchEvery)); err != nil {
			s.log.Warn("console: noting a session's use", "key_id", p.KeyID, "err", err)
		}
	}
	return &visit{Principal: p, hash: hash, csrf: csrfToken(ck.Value)}, nil
}

// mayUse reports whether a key of role may sign in: admin and account
// keys may, publish keys may not.
func mayUse(role string) bool { return role == account.RoleAdmin || role == account.RoleAccount }

// start makes a session for the principal of key and gives the browser
// its cookie.
func (s *sessions) start(ctx context.Context, w http.ResponseWriter, r *http.Request, p auth.Principal, key string) error {
	token := newToken()
	now := s.clock.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
	sess := store.Session{Hash: tokenHash(token), KeyHash: auth.Hash(key), KeyID: p.KeyID, CreatedAt: now, LastSeenAt: now}
	if err := s.store.CreateSession(ctx, sess, MaxSessionsPerKey); err != nil {
		return fmt.Errorf("making a session: %w", err)
	}
	http.SetCookie(w, sessionCookie(r, token))
	return nil
}

// end deletes the session of hash (a failure is logged: the session then
// ends when idle) and clears the browser's cookie.
func (s *sessions) end(w http.ResponseWriter, r *http.Request, hash []byte) {
	if err := s.store.DeleteSession(context.WithoutCancel(r.Context()), hash); err != nil {
		s.log.Warn("console: ending a session", "err", err)
	}
	clearCookie(w, r)
}

// sessionCookie is the cookie that carries token.
func sessionCookie(r *http.Request, token string) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: token, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// clearCookie tells the browser to drop the session cookie.
func clearCookie(w http.ResponseWriter, r *http.Request) {
	ck := sessionCookie(r, "")
	ck.MaxAge = -1
	http.SetCookie(w, ck)
}

// newToken returns a session token: 256 random bits, base64url.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenHash is the stored form of a session token (store.Session.Hash):
// its SHA-256. Tokens carry 256 random bits, so a fast hash is as safe as
// a slow one.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
