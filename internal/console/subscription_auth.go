package console

import (
	"strings"
	"time"

	"github.com/herald-events/herald/internal/certfile"
	"github.com/herald-events/herald/internal/subscription"
)

// authView is what a subscription's page shows of its endpoint
// authentication (docs/endpoint-auth.md): what the API's resource shows,
// the client secret and the private key as ****, the token URL's secret
// hidden (subscription.Auth.Masked:
// the page is made from the masked copy, so the secrets never reach a
// template). Of an mTLS certificate it shows the leaf's subject and
// expiry, not the PEM.
type authView struct {
	Type                             string
	TokenURL, ClientID, ClientSecret string
	Scopes                           string
	Audience                         string
	CertSubject                      string
	CertNotAfter                     time.Time
	Certificates                     int
	PrivateKey                       string
}

// toAuthView returns the page's view of a (nil for none).
func toAuthView(a *subscription.Auth) *authView {
	if a == nil {
		return nil
	}
	m := a.Masked()
	v := &authView{Type: m.Type, TokenURL: m.TokenURL, ClientID: m.ClientID, ClientSecret: m.ClientSecret,
		Scopes: strings.Join(m.Scopes, " "), Audience: m.Audience, PrivateKey: m.PrivateKey}
	if m.Certificate != "" {
		// Checked when stored (subscription/auth.go): a chain that no
		// longer parses shows as 0 certificates.
		if chain, err := certfile.ParseCertificates([]byte(m.Certificate)); err == nil && len(chain) > 0 {
			v.CertSubject, v.CertNotAfter, v.Certificates = chain[0].Subject.String(), chain[0].NotAfter, len(chain)
		}
	}
	return v
}
