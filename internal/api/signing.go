package api

import (
	"errors"
	"net/http"
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
	Grace  *strictjson.Duration `json:"grace"`
	Secret *string              `json:"secret"`
}

func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.ownSubscription(w, r); !ok {
		return
	}
	var in rotateInput
	if !decodeOptionalBody(w, r, &in) {
		return
	}
	grace := signing.DefaultGrace
	if in.Grace != nil {
		if d := in.Grace.D(); d < 0 || d > signing.MaxGrace {
			invalid(w, "grace", "must be between 0s and 168h (7 days), not "+d.String())
			return
		}
		grace = in.Grace.D()
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
