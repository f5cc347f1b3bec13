// Package signing signs pushes as Standard Webhooks do
// (https://www.standardwebhooks.com): the signed content is
// id + "." + timestamp + "." + body, and the webhook-signature header holds
// one space-separated "v1,<base64 HMAC-SHA256>" (a whsec_ secret) or
// "v1a,<base64 ed25519>" (a whpk_ public key) signature per key in use. It
// also makes keys, encodes them for the API, and verifies signatures (for
// herald sink and tests).
package signing

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Algorithms a subscription signs with.
const (
	HMACSHA256 = "hmac-sha256" // v1: a whsec_ secret shared with the receiver
	Ed25519    = "ed25519"     // v1a: the receiver holds the whpk_ public key
)

// Prefixes of the encoded keys.
const (
	SecretPrefix    = "whsec_"
	PublicKeyPrefix = "whpk_"
)

// Secret sizes: a made secret has DefaultSecretLen bytes; a given one
// MinSecretLen to MaxSecretLen.
const (
	DefaultSecretLen = 32
	MinSecretLen     = 24
	MaxSecretLen     = 64
)

// Grace periods of a rotation.
const (
	DefaultGrace = 24 * time.Hour
	MaxGrace     = 7 * 24 * time.Hour
)

// Keyring is how a subscription's pushes are signed: the algorithm
// (HMACSHA256 or Ed25519) and its keys, the current one first (no expiry),
// then the previous ones of rotations, each signing too until it expires.
// No keys: pushes go unsigned.
type Keyring struct {
	Algorithm string
	Keys      []Key
}

// Key is one key: an HMAC secret's bytes, or an ed25519 private key's
// seed.
type Key struct {
	Key       []byte
	ExpiresAt time.Time // zero: the current key
}

// New makes a key for alg (HMACSHA256: a random secret; Ed25519: a random
// private key seed).
func New(alg string) (Key, error) {
	n := DefaultSecretLen
	if alg == Ed25519 {
		n = ed25519.SeedSize
	} else if alg != HMACSHA256 {
		return Key{}, fmt.Errorf("unknown signing algorithm %q", alg)
	}
	k := make([]byte, n)
	if _, err := rand.Read(k); err != nil {
		return Key{}, err
	}
	return Key{Key: k}, nil
}

// NewSigning returns a subscription's signing with one new key of alg.
func NewSigning(alg string) (Keyring, error) {
	k, err := New(alg)
	if err != nil {
		return Keyring{}, err
	}
	return Keyring{Algorithm: alg, Keys: []Key{k}}, nil
}

// ParseSecret decodes a whsec_ secret: the prefix, then standard base64
// (padded or not) of MinSecretLen to MaxSecretLen bytes.
func ParseSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, errors.New("must start with " + SecretPrefix)
	}
	b, err := decodeBase64(rest)
	if err != nil {
		return nil, errors.New("must be " + SecretPrefix + " followed by standard base64")
	}
	if len(b) < MinSecretLen || len(b) > MaxSecretLen {
		return nil, fmt.Errorf("must hold %d to %d bytes, got %d", MinSecretLen, MaxSecretLen, len(b))
	}
	return b, nil
}

// ParsePublicKey decodes a whpk_ public key.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(s, PublicKeyPrefix)
	if !ok {
		return nil, errors.New("must start with " + PublicKeyPrefix)
	}
	b, err := decodeBase64(rest)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("must be %s followed by the standard base64 of %d bytes", PublicKeyPrefix, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

func decodeBase64(s string) ([]byte, error) {
	if strings.HasSuffix(s, "=") {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// Secret encodes an HMAC key as a whsec_ secret.
func Secret(key []byte) string { return SecretPrefix + base64.StdEncoding.EncodeToString(key) }

// PublicKey encodes the public key of an ed25519 seed as whpk_.
func PublicKey(seed []byte) string {
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// Content is what a signature covers.
func Content(id string, timestamp int64, body []byte) []byte {
	ts := strconv.FormatInt(timestamp, 10)
	b := make([]byte, 0, len(id)+len(ts)+len(body)+2)
	b = append(b, id...)
	b = append(b, '.')
	b = append(b, ts...)
	b = append(b, '.')
	return append(b, body...)
}

// Signer signs with a subscription's keys. It is made once per catalog
// entry (an ed25519 private key is derived from its seed once).
type Signer struct {
	alg  string
	keys []signerKey
}

type signerKey struct {
	hmac      *sync.Pool // of *hmacState: HMAC-SHA256 with the key, for reuse (nil for ed25519)
	priv      ed25519.PrivateKey
	expiresAt time.Time
}

// NewSigner returns the signer of s; nil when s has no keys (nothing to
// sign with).
func NewSigner(s Keyring) *Signer {
	if len(s.Keys) == 0 {
		return nil
	}
	sg := &Signer{alg: s.Algorithm}
	for _, k := range s.Keys {
		sk := signerKey{expiresAt: k.ExpiresAt}
		if s.Algorithm == Ed25519 {
			if len(k.Key) != ed25519.SeedSize {
				continue
			}
			sk.priv = ed25519.NewKeyFromSeed(k.Key)
		} else {
			// A reused HMAC starts from its key's state saved at the first
			// Reset, instead of hashing the key's pads for every signature.
			key := k.Key
			sk.hmac = &sync.Pool{New: func() any { return &hmacState{mac: hmac.New(sha256.New, key)} }}
		}
		sg.keys = append(sg.keys, sk)
	}
	return sg
}

// hmacState is a reusable HMAC of one key and the scratch bytes a signature
// is built in, so that signing allocates only the header value it returns.
type hmacState struct {
	mac     hash.Hash
	scratch []byte
}

// maxSignatureLen is the capacity Sign starts its header value with: two
// v1a signatures (4 + 88 bytes each) and a space, enough for every
// rotation but a third key; more only grows the value.
const maxSignatureLen = 2*(4+88) + 1

// Sign returns the webhook-signature value for the push of body with this
// id and timestamp at now: one signature per key not expired at now (the
// current key never expires), space-separated, the current one first. It
// allocates the value it returns, and for ed25519 one copy of the content.
func (s *Signer) Sign(id string, timestamp int64, body []byte, now time.Time) string {
	if s == nil {
		return ""
	}
	// An HMAC is fed the content's three parts as they are; only ed25519
	// needs the content in one piece (a copy of the body: built once, and
	// only then).
	var content []byte
	var stack [maxSignatureLen]byte
	out := stack[:0]
	for _, k := range s.keys {
		if !k.expiresAt.IsZero() && !now.Before(k.expiresAt) {
			continue
		}
		if len(out) > 0 {
			out = append(out, ' ')
		}
		if k.priv != nil {
			if content == nil {
				content = Content(id, timestamp, body)
			}
			out = append(out, "v1a,"...)
			out = base64.StdEncoding.AppendEncode(out, ed25519.Sign(k.priv, content))
			continue
		}
		st := k.hmac.Get().(*hmacState)
		st.mac.Reset()
		// id.timestamp. in the scratch bytes, then the body.
		st.scratch = append(st.scratch[:0], id...)
		st.scratch = append(st.scratch, '.')
		st.scratch = strconv.AppendInt(st.scratch, timestamp, 10)
		st.scratch = append(st.scratch, '.')
		st.mac.Write(st.scratch)
		st.mac.Write(body)
		st.scratch = st.mac.Sum(st.scratch[:0])
		out = append(out, "v1,"...)
		out = base64.StdEncoding.AppendEncode(out, st.scratch)
		k.hmac.Put(st)
	}
	return string(out)
}

// Verifier checks webhook-signature headers with a whsec_ secret or a
// whpk_ public key, as a receiver does.
type Verifier struct {
	secret []byte
	pub    ed25519.PublicKey
}

// NewSecretVerifier verifies v1 signatures with a whsec_ secret.
func NewSecretVerifier(secret string) (*Verifier, error) {
	rest, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("must start with " + SecretPrefix)
	}
	b, err := decodeBase64(rest)
	if err != nil || len(b) == 0 {
		return nil, errors.New("must be " + SecretPrefix + " followed by standard base64")
	}
	return &Verifier{secret: b}, nil
}

// NewPublicKeyVerifier verifies v1a signatures with a whpk_ public key.
func NewPublicKeyVerifier(key string) (*Verifier, error) {
	pub, err := ParsePublicKey(key)
	if err != nil {
		return nil, err
	}
	return &Verifier{pub: pub}, nil
}

// Verify reports whether one of the space-separated signatures in header
// is valid for the content (id, timestamp, body), and why not when none is.
func (v *Verifier) Verify(id, timestamp string, body []byte, header string) error {
	if id == "" || timestamp == "" || header == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	content := []byte(id + "." + timestamp + "." + string(body))
	for _, sig := range strings.Fields(header) {
		ver, val, ok := strings.Cut(sig, ",")
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(val)
		if err != nil {
			continue
		}
		switch {
		case ver == "v1" && v.secret != nil:
			m := hmac.New(sha256.New, v.secret)
			m.Write(content)
			if subtle.ConstantTimeCompare(m.Sum(nil), raw) == 1 {
				return nil
			}
		case ver == "v1a" && v.pub != nil:
			if ed25519.Verify(v.pub, content, raw) {
				return nil
			}
		}
	}
	return errors.New("no signature matches")
}

// MaxPrevious is how many previous keys a subscription keeps signing with
// at once; a rotation beyond it drops the one expiring first.
const MaxPrevious = 10

// Rotate returns sg with next as its current key: the current one becomes a
// previous key expiring at now+grace (at once for a zero grace), and
// previous keys already expired at now are dropped.
func Rotate(sg Keyring, next Key, now time.Time, grace time.Duration) Keyring {
	out := Keyring{Algorithm: sg.Algorithm, Keys: []Key{{Key: next.Key}}}
	var prev []Key
	if len(sg.Keys) > 0 && grace > 0 {
		prev = append(prev, Key{Key: sg.Keys[0].Key, ExpiresAt: now.Add(grace).UTC().Truncate(time.Millisecond)})
	}
	prev = append(prev, Previous(sg, now)...)
	if len(prev) > MaxPrevious {
		prev = prev[:MaxPrevious] // newest first: the dropped ones expire first or were made first
	}
	out.Keys = append(out.Keys, prev...)
	return out
}

// Previous returns sg's previous keys not expired at now, newest first.
func Previous(sg Keyring, now time.Time) []Key {
	var out []Key
	for _, k := range sg.Keys {
		if !k.ExpiresAt.IsZero() && now.Before(k.ExpiresAt) {
			out = append(out, k)
		}
	}
	return out
}
