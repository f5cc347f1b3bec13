package store

import (
	"crypto/sha256"
	"encoding/base32"
	"net/url"
	"strings"
)

// idAlphabet is the ID alphabet: Crockford's base32 in lower case, as
// internal/ids writes it.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

var idEncoding = base32.NewEncoding(idAlphabet).WithPadding(base32.NoPadding)

// EndpointIDFor returns the stable ID of an account's endpoint for a
// delivery URL: "ep_" followed by 20 base32 characters of a SHA-256 of the
// account and the URL (of the URL alone in DefaultAccount, as before
// accounts existed, so endpoint IDs survive the upgrade). Subscriptions of
// one account that share a URL share an endpoint, and every node computes
// the same ID without asking the database.
func EndpointIDFor(accountID, url string) string {
	var sum [sha256.Size]byte
	if accountID == "" || accountID == DefaultAccount {
		sum = sha256.Sum256([]byte(url))
	} else {
		sum = sha256.Sum256([]byte(accountID + "\x00" + url))
	}
	return "ep_" + strings.ToLower(idEncoding.EncodeToString(sum[:]))[:20]
}

// EndpointID is EndpointIDFor(DefaultAccount, url).
func EndpointID(url string) string { return EndpointIDFor(DefaultAccount, url) }

// RedactedURL returns a delivery URL with the password of its userinfo, if
// any, replaced by "xxxxx" (as url.URL.Redacted does), for everything Herald
// shows: API answers, logs and operational events. The stored URL keeps the
// password, and attempts send it.
func RedactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}
