package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
)

// CSRF. Every state-changing request of a session carries the session's
// CSRF token in the form field csrfField (the templates put it in each
// form as a hidden field); change refuses one without it or with another
// (403), comparing in constant time. The token is an HMAC of the session's
// token, so it is per session, needs no storage, and cannot be made without
// the cookie, which pages of other sites never read. Besides, every POST,
// the sign-in's included (which has no session yet), is refused when the
// browser says it comes from another origin (sameOrigin), and the cookie is
// SameSite=Strict.

// csrfField is the form field that carries the CSRF token.
const csrfField = "csrf"

// csrfToken is the CSRF token of the session whose token is token.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("herald console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// change runs h for a request whose form carries the session's CSRF token
// and that no page of another origin made (checkForm); 403 otherwise.
func (s *sessions) change(h sessionHandler) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visit) {
		if status, msg := checkForm(w, r, v.csrf); status != 0 {
			if status == http.StatusForbidden && msg == crossOriginMessage {
				v = nil
			}
			s.errorPage(w, r, v, status, msg)
			return
		}
		h(w, r, v)
	}
}

// crossOriginMessage is checkForm's answer to a form another origin sent.
const crossOriginMessage = "A page of another site sent this request; the console takes forms from its own pages only."

// checkForm reads r's form (at most maxFormBytes) and returns 0 when a
// page of the same origin sent it (sameOrigin) with the CSRF token want;
// else the status to answer (403, or 400 for a form that cannot be read)
// and what to say. The console's and the portal's changes share it.
func checkForm(w http.ResponseWriter, r *http.Request, want string) (int, string) {
	if err := crossOrigin.Check(r); err != nil {
		return http.StatusForbidden, crossOriginMessage
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return http.StatusBadRequest, "The form could not be read: " + err.Error()
	}
	got := r.PostForm.Get(csrfField)
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return http.StatusForbidden, "This form did not carry this session's CSRF token, so nothing was changed. Reload the page and try again."
	}
	return 0, ""
}

// crossOrigin is net/http's check of Sec-Fetch-Site, else Origin against
// Host: what a browser sends for a page of another origin.
var crossOrigin = http.NewCrossOriginProtection()

// sameOrigin reports whether a browser may have sent r from a page of the
// console's own origin; it answers 403 when not.
func (s *sessions) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if err := crossOrigin.Check(r); err != nil {
		s.errorPage(w, r, nil, http.StatusForbidden, crossOriginMessage)
		return false
	}
	return true
}
