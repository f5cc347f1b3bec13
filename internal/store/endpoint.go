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

// EndpointID returns the stable ID of the endpoint for a delivery URL:
// "ep_" followed by 20 base32 characters of the URL's SHA-256. Subscriptions
// that share a URL share an endpoint, and every node computes the same ID
// without asking the database.
func EndpointID(url string) string {
	sum := sha256.Sum256([]byte(url))
	return "ep_" + strings.ToLower(idEncoding.EncodeToString(sum[:]))[:20]
}

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
