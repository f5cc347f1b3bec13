package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
)

// maxFormBytes bounds a form's body: the console's forms are small.
const maxFormBytes = 16 << 10

// loginView is what the sign-in page shows.
type loginView struct {
	// Message says why the form is shown again, or that a session ended.
	Message string
	// Error marks Message as a refusal.
	Error bool
}

// loginPage shows the sign-in form, or sends a signed-in visitor on.
func (s *sessions) loginPage(w http.ResponseWriter, r *http.Request) {
	switch _, err := s.session(w, r); {
	case err == nil:
		redirect(w, r, "/console/subscriptions")
		return
	case !errors.Is(err, errNoSession):
		s.storeError(w, r, nil, err)
		return
	}
	var view loginView
	switch {
	case r.URL.Query().Has("signed_out"):
		view.Message = "You have signed out."
	case r.URL.Query().Has("ended"):
		view.Message = "Your session has ended (idle for " + idleText + ", or its key was revoked): sign in again."
	}
	s.render(w, r, http.StatusOK, "login", nil, "Sign in", view)
}

// idleText is IdleTimeout in words.
var idleText = strconv.Itoa(int(IdleTimeout.Hours())) + " hours"

// signIn takes the sign-in form: an API key of role admin or account
// starts a session (session.go) and goes to the subscriptions; any other
// key shows the form again saying why (401 unknown or revoked, 403 a
// publish key, 400 none). An unknown key counts as a failure of the
// client's address, and an address with too many is refused before its
// form is read (429 with Retry-After: throttle.go).
func (s *sessions) signIn(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(w, r) {
		return
	}
	if s.throttle.refuse(w, r, func(status int, msg string) { s.loginRefused(w, r, status, msg) }) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.loginRefused(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	if key == "" {
		s.loginRefused(w, r, http.StatusBadRequest, "Enter an API key.")
		return
	}
	p, err := s.auth.Authenticate(r.Context(), key)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		s.throttle.failed(r)
		s.loginRefused(w, r, http.StatusUnauthorized, "Herald does not know this key: it was revoked, or never made.")
		return
	case err != nil:
		s.storeError(w, r, nil, err)
		return
	case !mayUse(p.Role):
		s.loginRefused(w, r, http.StatusForbidden, "A key of role "+p.Role+" cannot sign in: use an account or admin key.")
		return
	}
	if old, err := r.Cookie(CookieName); err == nil && len(old.Value) <= maxTokenLen {
		s.end(w, r, tokenHash(old.Value)) // this browser's earlier session
	}
	if err := s.start(r.Context(), w, r, p, key); err != nil {
		s.storeError(w, r, nil, err)
		return
	}
	redirect(w, r, "/console/subscriptions")
}

// loginRefused shows the sign-in form again with status and why.
func (s *sessions) loginRefused(w http.ResponseWriter, r *http.Request, status int, why string) {
	s.render(w, r, status, "login", nil, "Sign in", loginView{Message: why, Error: true})
}

// signOut ends the session and goes to the sign-in page.
func (s *sessions) signOut(w http.ResponseWriter, r *http.Request, v *visit) {
	s.end(w, r, v.hash)
	redirect(w, r, "/console/login?signed_out")
}

// authOff is the Authenticator with authentication off (--auth=off): any
// key is an admin of account.DefaultID, as every API request is.
type authOff struct{}

var offPrincipal = auth.Principal{KeyID: "auth-off", AccountID: account.DefaultID, Role: account.RoleAdmin}

func (authOff) Authenticate(_ context.Context, key string) (auth.Principal, error) {
	if key == "" {
		return auth.Principal{}, auth.ErrUnauthenticated
	}
	return offPrincipal, nil
}

func (authOff) AuthenticateHash(context.Context, []byte) (auth.Principal, error) {
	return offPrincipal, nil
}
