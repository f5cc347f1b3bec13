package store

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// idAlphabet is the ID alphabet: Crockford's base32 in lower case, as
// internal/ids writes it.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

var idEncoding = base32.NewEncoding(idAlphabet).WithPadding(base32.NoPadding)

// EndpointKeySize is the size in bytes of an installation's EndpointKey.
const EndpointKeySize = 32

// EndpointKey is the secret endpoint IDs are made with: EndpointKeySize
// random bytes made once per installation, when its schema is created or
// upgraded to version 11, and kept in its database (table
// installation_keys), so that every node sharing a database makes the same
// IDs and they stay the same across restarts. The store holds it
// (Store.EndpointID); nothing else makes endpoint IDs.
type EndpointKey struct{ key []byte }

// NewEndpointKey returns a new random key.
func NewEndpointKey() (EndpointKey, error) {
	b := make([]byte, EndpointKeySize)
	if _, err := rand.Read(b); err != nil {
		return EndpointKey{}, err
	}
	return EndpointKey{key: b}, nil
}

// EndpointKeyFrom returns the key of b, as Bytes returned it: an error
// unless b holds EndpointKeySize bytes.
func EndpointKeyFrom(b []byte) (EndpointKey, error) {
	if len(b) != EndpointKeySize {
		return EndpointKey{}, fmt.Errorf("an endpoint key has %d bytes, not %d", EndpointKeySize, len(b))
	}
	return EndpointKey{key: bytes.Clone(b)}, nil
}

// Bytes returns the key's bytes, to be stored.
func (k EndpointKey) Bytes() []byte { return bytes.Clone(k.key) }

// ID returns the ID of an account's endpoint for a delivery URL: "ep_"
// followed by 20 base32 characters (100 bits) of the HMAC-SHA256, keyed
// with k, of the account (DefaultAccount when empty), a zero byte and the
// URL. Subscriptions of one account that share a URL share an endpoint,
// the same URL in two accounts is two endpoints, and an ID says nothing of
// its URL to whoever does not hold the key: a password in the URL cannot
// be guessed from it offline, as it could from an unkeyed hash.
func (k EndpointKey) ID(accountID, url string) string {
	return k.id(AccountOrDefault(accountID) + "\x00" + url)
}

// OrphanID returns the ID that replaces, when endpoint IDs are first keyed
// (schema 11), an ID stored by an earlier release whose URL is no longer
// known (a finished delivery of an endpoint no subscription uses any
// more): a keyed hash of the old ID, so that the deliveries that shared it
// still share one, and it cannot be taken for the ID of any account's URL
// (an account is never empty, so ID never hashes a text that starts with
// a zero byte).
func (k EndpointKey) OrphanID(old string) string { return k.id("\x00" + old) }

func (k EndpointKey) id(text string) string {
	mac := hmac.New(sha256.New, k.key)
	mac.Write([]byte(text))
	return "ep_" + idEncoding.EncodeToString(mac.Sum(nil))[:20]
}

// redactedPassword replaces a URL's password wherever Herald shows one,
// as url.URL.Redacted writes it.
const redactedPassword = "xxxxx"

// RedactedURL returns a delivery URL with the password of its userinfo, if
// any, replaced by "xxxxx" (as url.URL.Redacted does), for everything Herald
// shows: API answers, logs and operational events. The stored URL keeps the
// password, and attempts send it. A string that does not parse as a URL is
// redacted as RedactedText does.
func RedactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return RedactedText(s)
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}

// RedactedText returns s with the password of every URL in it replaced by
// "xxxxx": wherever "://" is followed by an authority (up to the next /, ?,
// #, quote, angle bracket, backslash or white space) holding a userinfo
// with a colon (user:password@), what lies between the first colon and the
// authority's last @ is replaced. It is for text that may quote a URL: an
// error of net/http or net/url (url.Error quotes its URL, with the password
// when the request was not made by http.Client.Do), an error of a
// handshake, a flag's value. The text is read once, left to right.
func RedactedText(s string) string {
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

// endsAuthority reports whether r ends a URL's authority in RedactedText.
func endsAuthority(r rune) bool {
	return strings.ContainsRune(`/?#\"'<>`, r) || unicode.IsSpace(r)
}

// RedactedError returns err with the passwords of the URLs in its text
// redacted (RedactedText): err itself when there are none, else an error
// whose Error is the redacted text and which unwraps to err (errors.Is and
// errors.As still see what caused it). Every error that may quote a
// delivery URL passes through it where it leaves the code that sent a
// request (an attempt, a validation handshake), before it is logged,
// stored or shown. Nil stays nil.
func RedactedError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := RedactedText(msg); red != msg {
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
