// Package redact hides the passwords of URLs in what Herald shows: API
// answers, logs and operational events. Stored URLs keep their passwords,
// and attempts send them.
package redact

import (
	"net/url"
	"strings"
	"unicode"
)

// redactedPassword replaces a URL's password wherever Herald shows one,
// as url.URL.Redacted writes it.
const redactedPassword = "xxxxx"

// URL returns a delivery URL with the password of its userinfo, if
// any, replaced by "xxxxx" (as url.URL.Redacted does), for everything Herald
// shows: API answers, logs and operational events. The stored URL keeps the
// password, and attempts send it. A string that does not parse as a URL is
// redacted as Text does.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return Text(s)
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}

// Text returns s with the password of every URL in it replaced by
// "xxxxx": wherever "://" is followed by an authority (up to the next /, ?,
// #, quote, angle bracket, backslash or white space) holding a userinfo
// with a colon (user:password@), what lies between the first colon and the
// authority's last @ is replaced. It is for text that may quote a URL: an
// error of net/http or net/url (url.Error quotes its URL, with the password
// when the request was not made by http.Client.Do), an error of a
// handshake, a flag's value. The text is read once, left to right.
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
		auth := s[a:end]
		at, colon := strings.LastIndexByte(auth, '@'), strings.IndexByte(auth, ':')
		if at >= 0 && colon >= 0 && colon < at && auth[colon+1:at] != redactedPassword {
			b.WriteString(s[done : a+colon+1])
			b.WriteString(redactedPassword)
			done = a + at
		}
		pos = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// endsAuthority reports whether r ends a URL's authority in Text.
func endsAuthority(r rune) bool {
	return strings.ContainsRune(`/?#\"'<>`, r) || unicode.IsSpace(r)
}

// Error returns err with the passwords of the URLs in its text
// redacted (Text): err itself when there are none, else an error
// whose Error is the redacted text and which unwraps to err (errors.Is and
// errors.As still see what caused it). Every error that may quote a
// delivery URL passes through it where it leaves the code that sent a
// request (an attempt, a validation handshake), before it is logged,
// stored or shown. Nil stays nil.
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

// redactedError is an error shown with its URL passwords redacted.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
