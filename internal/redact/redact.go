// Package redact hides the secrets of URLs in what Herald shows: API
// answers, console and portal pages, logs, attempt errors and operational
// events. A URL's userinfo is a secret: its password (user:password@), or
// the user name alone when there is no password (https://TOKEN@host/, a
// token written as the user). Stored URLs keep their secrets, and
// attempts send them.
package redact

import (
	"net/url"
	"strings"
	"unicode"
)

// Mask replaces a URL's secret wherever Herald shows one: its password
// (user:xxxxx@, as url.URL.Redacted writes it), or its user name when it
// has no password (xxxxx@).
const Mask = "xxxxx"

// URL returns a URL with the secret of its userinfo, if any, replaced by
// Mask: the password (user:xxxxx@, as url.URL.Redacted does), or the user
// name of a userinfo without a password (xxxxx@). It is for everything
// Herald shows: API answers, pages, logs and operational events. The
// stored URL keeps the secret, and attempts send it. A string that does
// not parse as a URL is redacted as Text does.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return Text(s)
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	if name := u.User.Username(); name == "" || name == Mask {
		return s
	}
	u.User = url.User(Mask)
	return u.String()
}

// Masked reports whether the URL s shows Mask where a secret goes (a
// password of Mask, or a user name of Mask without a password): it is a
// URL as Herald shows one, not one to store. A string that does not parse
// as a URL is not.
func Masked(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return false
	}
	if pw, ok := u.User.Password(); ok {
		return pw == Mask
	}
	return u.User.Username() == Mask
}

// Text returns s with the secret of every URL in it replaced by Mask:
// wherever "://" is followed by an authority (up to the next /, ?, #,
// quote, angle bracket, backslash or white space) holding a userinfo
// (up to the authority's last @), the password is replaced when the
// userinfo has a colon (what lies between its first colon and the @),
// else the whole userinfo, the user name standing for a token. It is for
// text that may quote a URL: an error of net/http or net/url (url.Error
// quotes its URL, with its userinfo when the request was not made by
// http.Client.Do, and http.Client.Do hides a password as *** but not a
// user name), an error of a handshake, a flag's value. The text is read
// once, left to right.
func Text(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is in b
	for pos := 0; ; {
		i := strings.Index(s[pos:], "://")
		if i < 0 {
			break
		}
		a := pos + i + len("://")
		end := len(s)
		if n := strings.IndexFunc(s[a:], endsAuthority); n >= 0 {
			end = a + n
		}
		if from, to := secret(s[a:end]); from < to && s[a+from:a+to] != Mask {
			b.WriteString(s[done : a+from])
			b.WriteString(Mask)
			done = a + to
		}
		pos = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// secret returns where the secret of an authority's userinfo lies,
// auth[from:to]: its password when it has a colon, else its user name;
// from == to when there is no userinfo.
func secret(auth string) (from, to int) {
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return 0, 0
	}
	if colon := strings.IndexByte(auth[:at], ':'); colon >= 0 {
		return colon + 1, at
	}
	return 0, at
}

// endsAuthority reports whether r ends a URL's authority in Text.
func endsAuthority(r rune) bool {
	return strings.ContainsRune(`/?#\"'<>`, r) || unicode.IsSpace(r)
}

// Error returns err with the secrets of the URLs in its text redacted
// (Text): err itself when there are none, else an error whose Error is
// the redacted text and which unwraps to err (errors.Is and errors.As
// still see what caused it). Every error that may quote a delivery URL
// passes through it where it leaves the code that sent a request (an
// attempt, a validation handshake), before it is logged, stored or shown.
// Nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := Text(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// redactedError is an error shown with its URL secrets redacted.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
