package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/control"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/strictjson"
)

// maskedValue stands for a secret header's value in every answer.
const maskedValue = "****"

// maskedHeaders returns the names of secret headers with their values
// masked ({} for none).
func maskedHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = maskedValue
	}
	return out
}

// checkHeaderMaps checks headers and secret headers together: at most
// maxHeaders in all, and no name in both (names are case-insensitive).
// Problems name secret_headers (or, when only headers were sent, headers).
func checkHeaderMaps(headers, secret map[string]string, secretSent bool) *inputError {
	field := "headers"
	if secretSent {
		field = "secret_headers"
	}
	if n := len(headers) + len(secret); n > maxHeaders {
		return badInput(field, "headers and secret_headers must hold at most %d headers in all, got %d", maxHeaders, n)
	}
	plain := make(map[string]string, len(headers))
	for k := range headers {
		plain[strings.ToLower(k)] = k
	}
	names := make([]string, 0, len(secret))
	for k := range secret {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if other, ok := plain[strings.ToLower(k)]; ok {
			return badInput(strictjson.JoinPath("secret_headers", k), "is also in headers (as %s): a header is either in headers or in secret_headers", other)
		}
	}
	return nil
}

// signingInput is the signing member of a create: the algorithm
// (hmac-sha256, the default, or ed25519) and, for hmac-sha256, the secret
// to start with (whsec_…; made when absent).
type signingInput struct {
	Algorithm *string `json:"algorithm"`
	Secret    *string `json:"secret"`
}

// newSigning returns the signing of a new subscription from in (nil: the
// defaults).
func newSigning(in *signingInput) (signing.Keyring, *inputError) {
	alg := signing.HMACSHA256
	if in != nil && in.Algorithm != nil {
		alg = *in.Algorithm
		if alg != signing.HMACSHA256 && alg != signing.Ed25519 {
			return signing.Keyring{}, badInput("signing.algorithm", "must be %s or %s, not %s", signing.HMACSHA256, signing.Ed25519, strictjson.Shorten(alg))
		}
	}
	if in != nil && in.Secret != nil {
		if alg != signing.HMACSHA256 {
			return signing.Keyring{}, badInput("signing.secret", "can be given only for %s: an %s key is made by Herald, which keeps the private key", signing.HMACSHA256, alg)
		}
		key, err := signing.ParseSecret(*in.Secret)
		if err != nil {
			return signing.Keyring{}, badInput("signing.secret", "%s", err.Error())
		}
		return signing.Keyring{Algorithm: alg, Keys: []signing.Key{{Key: key}}}, nil
	}
	sg, err := signing.NewSigning(alg)
	if err != nil {
		return signing.Keyring{}, badInput("signing", "%s", err.Error())
	}
	return sg, nil
}

// secretJSON is the answer of the secret routes: the only place a
// subscription's secret (or, for ed25519, its public key) is shown.
type secretJSON struct {
	Algorithm string               `json:"algorithm"`
	Secret    string               `json:"secret,omitempty"`
	PublicKey string               `json:"public_key,omitempty"`
	Previous  []previousSecretJSON `json:"previous"`
}

type previousSecretJSON struct {
	Secret    string `json:"secret,omitempty"`
	PublicKey string `json:"public_key,omitempty"`
	ExpiresAt Time   `json:"expires_at"`
}

func toSecretJSON(sg signing.Keyring, now time.Time) secretJSON {
	out := secretJSON{Algorithm: sg.Algorithm, Previous: []previousSecretJSON{}}
	encode := func(key []byte) (secret, public string) {
		if sg.Algorithm == signing.Ed25519 {
			return "", signing.PublicKey(key)
		}
		return signing.Secret(key), ""
	}
	if len(sg.Keys) > 0 {
		out.Secret, out.PublicKey = encode(sg.Keys[0].Key)
	}
	for _, k := range signing.Previous(sg, now) {
		p := previousSecretJSON{ExpiresAt: timestamp(k.ExpiresAt)}
		p.Secret, p.PublicKey = encode(k.Key)
		out.Previous = append(out.Previous, p)
	}
	return out
}

func (s *Server) getSecret(w http.ResponseWriter, r *http.Request) {
	sub, ok := s.ownSubscription(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, toSecretJSON(sub.Signing, s.Clock.Now()))
}

// rotateInput is the optional body of a rotation.
type rotateInput struct {
	Grace  *string `json:"grace"`
	Secret *string `json:"secret"`
}

func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.ownSubscription(w, r); !ok {
		return
	}
	var in rotateInput
	if r.ContentLength != 0 {
		if !decodeBody(w, r, &in) {
			return
		}
	}
	grace := signing.DefaultGrace
	if in.Grace != nil {
		d, err := time.ParseDuration(*in.Grace)
		switch {
		case err != nil:
			invalid(w, "grace", "must be a Go duration such as 24h or 30m, not "+strictjson.Shorten(*in.Grace))
			return
		case d < 0 || d > signing.MaxGrace:
			invalid(w, "grace", "must be between 0s and 168h (7 days), not "+d.String())
			return
		}
		grace = d
	}
	var key []byte
	if in.Secret != nil {
		k, err := signing.ParseSecret(*in.Secret)
		if err != nil {
			invalid(w, "secret", err.Error())
			return
		}
		key = k
	}
	sub, err := s.Control.RotateSecret(r.Context(), r.PathValue("id"), key, grace)
	switch {
	case errors.Is(err, control.ErrGivenKey):
		invalid(w, "secret", "can be given only for "+signing.HMACSHA256+": an ed25519 key is made by Herald, which keeps the private key")
	case err != nil:
		s.storeError(w, r, err, "subscription")
	default:
		writeJSON(w, http.StatusOK, toSecretJSON(sub.Signing, s.Clock.Now()))
	}
}
