package subscription

import (
	"cmp"
	"crypto/tls"
	"encoding/pem"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/certfile"
	"github.com/herald-events/herald/internal/redact"

	"github.com/herald-events/herald/internal/strictjson"
)

// The kinds of endpoint authentication (Auth.Type; docs/endpoint-auth.md).
const (
	AuthOAuth2 = "oauth2_client_credentials"
	AuthMTLS   = "mtls"
)

// Auth is how a push subscription authenticates to its endpoint (and its
// dead-letter URL): an OAuth2 client-credentials token (RFC 6749 §4.4)
// sent as Authorization: Bearer, or a TLS client certificate. It is kept
// in the delivery column with the other DeliveryOptions, in clear like
// secret_headers; the API shows ClientSecret and PrivateKey as **** and
// TokenURL as redact.URL does (Masked).
type Auth struct {
	Type string `json:"type"`
	// OAuth2 client credentials.
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
	// mTLS: PEM blocks, the certificate chain leaf first.
	Certificate string `json:"certificate,omitempty"`
	PrivateKey  string `json:"private_key,omitempty"`
}

// Bounds of an auth's fields.
const (
	maxAuthText   = 1024     // client_id, client_secret, audience, a scope
	maxAuthScopes = 32       // scopes
	maxAuthPEM    = 64 << 10 // certificate, private_key
)

// masked is how the API shows a secret (the client secret, the private key).
const masked = "****"

// authInput is auth as a request sends it: every field, checked by type.
type authInput struct {
	Type         *string   `json:"type"`
	TokenURL     *string   `json:"token_url"`
	ClientID     *string   `json:"client_id"`
	ClientSecret *string   `json:"client_secret"`
	Scopes       *[]string `json:"scopes"`
	Audience     *string   `json:"audience"`
	Certificate  *string   `json:"certificate"`
	PrivateKey   *string   `json:"private_key"`
}

// applyAuth applies auth: null removes it, an object replaces it whole
// (as secret_headers are replaced), its secrets included; a token_url sent
// as Herald shows the stored one keeps it (sentURL).
func (in Input) applyAuth(sub *Subscription) *strictjson.Error {
	if in.Auth == nil {
		return nil
	}
	if string(in.Auth) == "null" {
		sub.Delivery.Auth = nil
		return nil
	}
	var ai authInput
	if err := strictjson.Decode(in.Auth, "auth", &ai); err != nil {
		return err
	}
	var storedTokenURL string
	if old := sub.Delivery.Auth; old != nil {
		storedTokenURL = old.TokenURL
	}
	a, err := ai.auth(storedTokenURL)
	if err != nil {
		return err
	}
	sub.Delivery.Auth = a
	return nil
}

// auth checks ai and returns the Auth it says; storedTokenURL is the token
// URL of the auth it replaces ("" for none).
func (ai authInput) auth(storedTokenURL string) (*Auth, *strictjson.Error) {
	if ai.Type == nil {
		return nil, badInput("auth.type", "is required: %s or %s", AuthOAuth2, AuthMTLS)
	}
	switch *ai.Type {
	case AuthOAuth2:
		if field := firstSet(named{"certificate", ai.Certificate}, named{"private_key", ai.PrivateKey}); field != "" {
			return nil, badInput("auth."+field, "is for type %s, not %s", AuthMTLS, AuthOAuth2)
		}
		return ai.oauth2(storedTokenURL)
	case AuthMTLS:
		if field := firstSet(named{"token_url", ai.TokenURL}, named{"client_id", ai.ClientID},
			named{"client_secret", ai.ClientSecret}, named{"audience", ai.Audience}); field != "" || ai.Scopes != nil {
			return nil, badInput("auth."+cmp.Or(field, "scopes"), "is for type %s, not %s", AuthOAuth2, AuthMTLS)
		}
		return ai.mtls()
	}
	return nil, badInput("auth.type", "must be %s or %s, not %s", AuthOAuth2, AuthMTLS, strconv.Quote(*ai.Type))
}

// named is a text field of an auth and its name.
type named struct {
	name string
	v    *string
}

// firstSet names the first of fields that is set ("" when none is).
func firstSet(fields ...named) string {
	for _, f := range fields {
		if f.v != nil {
			return f.name
		}
	}
	return ""
}

// oauth2 checks an oauth2_client_credentials auth (storedTokenURL: as
// auth).
func (ai authInput) oauth2(storedTokenURL string) (*Auth, *strictjson.Error) {
	a := &Auth{Type: AuthOAuth2}
	if ai.TokenURL == nil {
		return nil, badInput("auth.token_url", "is required for type %s", AuthOAuth2)
	}
	u, err := sentURL("auth.token_url", *ai.TokenURL, storedTokenURL)
	if err != nil {
		return nil, err
	}
	a.TokenURL = u
	for _, f := range []struct {
		name     string
		v        *string
		to       *string
		required bool
	}{{"client_id", ai.ClientID, &a.ClientID, true}, {"client_secret", ai.ClientSecret, &a.ClientSecret, true},
		{"audience", ai.Audience, &a.Audience, false}} {
		if f.v == nil {
			if f.required {
				return nil, badInput("auth."+f.name, "is required for type %s", AuthOAuth2)
			}
			continue
		}
		if err := strictjson.CheckText("auth."+f.name, *f.v, maxAuthText, f.required); err != nil {
			return nil, err
		}
		*f.to = *f.v
	}
	if a.ClientSecret == masked {
		return nil, badInput("auth.client_secret", "is the secret itself: %s is how answers show it", masked)
	}
	if ai.Scopes != nil {
		if len(*ai.Scopes) > maxAuthScopes {
			return nil, badInput("auth.scopes", "must hold at most %d scopes, got %d", maxAuthScopes, len(*ai.Scopes))
		}
		for i, s := range *ai.Scopes {
			if err := strictjson.CheckText("auth.scopes["+strconv.Itoa(i)+"]", s, maxAuthText, true); err != nil {
				return nil, err
			}
		}
		a.Scopes = *ai.Scopes
	}
	return a, nil
}

// mtls checks an mtls auth: both PEMs parse and the key is the
// certificate's (tls.X509KeyPair).
func (ai authInput) mtls() (*Auth, *strictjson.Error) {
	for _, f := range []struct {
		name string
		v    *string
	}{{"certificate", ai.Certificate}, {"private_key", ai.PrivateKey}} {
		if f.v == nil {
			return nil, badInput("auth."+f.name, "is required for type %s (PEM)", AuthMTLS)
		}
		if len(*f.v) > maxAuthPEM {
			return nil, badInput("auth."+f.name, "must be at most %d bytes, got %d", maxAuthPEM, len(*f.v))
		}
	}
	cert, key := []byte(*ai.Certificate), []byte(*ai.PrivateKey)
	if _, err := certfile.ParseCertificates(cert); err != nil {
		return nil, badInput("auth.certificate", "is not a PEM certificate")
	}
	if b, _ := pem.Decode(key); b == nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return nil, badInput("auth.private_key", "is not a PEM private key")
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return nil, badInput("auth.private_key", "is not the private key of the certificate, or does not parse")
	}
	return &Auth{Type: AuthMTLS, Certificate: *ai.Certificate, PrivateKey: *ai.PrivateKey}, nil
}

// Masked returns a copy of a as Herald shows it: its secrets as ****, and
// its token URL's userinfo secret as redact.URL shows it.
func (a Auth) Masked() Auth {
	a.TokenURL = redact.URL(a.TokenURL)
	if a.ClientSecret != "" {
		a.ClientSecret = masked
	}
	if a.PrivateKey != "" {
		a.PrivateKey = masked
	}
	return a
}
