// Package auth decides who a request is: it makes API keys, keeps only
// their hashes, and authenticates a bearer key against the store through a
// bounded cache that honours revocation within a second or two on every node
// (see Authenticator).
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
)

// KeyPrefix starts every API key Herald makes.
const KeyPrefix = "hk_"

// MaxKeyLen bounds the bearer value Authenticate looks at: Herald's keys are
// 46 bytes; a HERALD_ADMIN_KEY may be longer, up to this.
const MaxKeyLen = 512

// MinAdminKeyLen is the shortest HERALD_ADMIN_KEY accepted: an admin key
// guessable in a brute-force search would open every account.
const MinAdminKeyLen = 24

// shownPrefix is how many leading characters of a key its listing shows
// ("hk_" and 8 more): enough to tell keys apart, far too few to guess the
// rest (256 random bits).
const shownPrefix = len(KeyPrefix) + 8

// NewKey makes a key for accountID with role and name: the secret to hand to
// the user once, and the key as stored (its SHA-256, never the secret).
func NewKey(accountID, role, name string, now time.Time) (secret string, k account.Key) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	secret = KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, account.Key{
		ID: ids.New("key_", now), AccountID: account.OrDefault(accountID), Role: role, Name: name,
		Hash: Hash(secret), Prefix: secret[:shownPrefix], CreatedAt: now,
	}
}

// Hash is the stored form of a key: its SHA-256. Keys carry 256 random
// bits, so a fast hash is as safe as a slow one and costs nothing per
// request.
func Hash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// BearerKey returns the key of an Authorization header value
// ("Bearer <key>", the scheme in any case), or "" when there is none.
func BearerKey(header string) string {
	scheme, key, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

// sameHash compares two hashes in constant time.
func sameHash(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
