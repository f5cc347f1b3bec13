package endpoint

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
)

var idEncoding = base32.NewEncoding(ids.Alphabet).WithPadding(base32.NoPadding)

// KeySize is the size in bytes of an installation's Key.
const KeySize = 32

// Key is the secret endpoint IDs are made with: KeySize random bytes made
// once per installation, when its schema is created or upgraded to version
// 11, and kept in its database (table installation_keys), so that every
// node sharing a database makes the same IDs and they stay the same across
// restarts. The store holds it (store.EndpointStore.EndpointID); nothing
// else makes endpoint IDs.
type Key struct{ key []byte }

// NewKey returns a new random key.
func NewKey() (Key, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return Key{}, err
	}
	return Key{key: b}, nil
}

// KeyFrom returns the key of b, as Bytes returned it: an error unless b
// holds KeySize bytes.
func KeyFrom(b []byte) (Key, error) {
	if len(b) != KeySize {
		return Key{}, fmt.Errorf("an endpoint key has %d bytes, not %d", KeySize, len(b))
	}
	return Key{key: bytes.Clone(b)}, nil
}

// Bytes returns the key's bytes, to be stored.
func (k Key) Bytes() []byte { return bytes.Clone(k.key) }

// ID returns the ID of an account's endpoint for a delivery URL: "ep_"
// followed by 20 base32 characters (100 bits) of the HMAC-SHA256, keyed
// with k, of the account (account.DefaultID when empty), a zero byte and
// the URL. Subscriptions of one account that share a URL share an
// endpoint, the same URL in two accounts is two endpoints, and an ID says
// nothing of its URL to whoever does not hold the key: a password in the
// URL cannot be guessed from it offline, as it could from an unkeyed hash.
func (k Key) ID(accountID, url string) string {
	return k.id(account.OrDefault(accountID) + "\x00" + url)
}

// OrphanID returns the ID that replaces, when endpoint IDs are first keyed
// (schema 11), an ID stored by an earlier release whose URL is no longer
// known (a finished delivery of an endpoint no subscription uses any
// more): a keyed hash of the old ID, so that the deliveries that shared it
// still share one, and it cannot be taken for the ID of any account's URL
// (an account is never empty, so ID never hashes a text that starts with
// a zero byte).
func (k Key) OrphanID(old string) string { return k.id("\x00" + old) }

func (k Key) id(text string) string {
	mac := hmac.New(sha256.New, k.key)
	mac.Write([]byte(text))
	return "ep_" + idEncoding.EncodeToString(mac.Sum(nil))[:20]
}
