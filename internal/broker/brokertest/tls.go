package brokertest

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/herald-events/herald/internal/certfile/certtest"
)

// CA is a certificate of a test's own for a broker (certtest.New: made in
// memory, no certificate is committed): self-signed for 127.0.0.1 and
// localhost, so it is both the server's certificate and the authority a
// client trusts, written to the test's temporary directory for the
// brokers that read files.
type CA struct {
	// PEM is the certificate as a client's tls.ca_pem trusts it.
	PEM string
	// CertFile, KeyFile and CAFile are the server's certificate, its
	// key and the authority's certificate (the same certificate), PEM
	// files.
	CertFile, KeyFile, CAFile string
	// Server is the server's certificate and key.
	Server tls.Certificate
}

// NewCA makes a CA (certtest.New, valid for a day).
func NewCA(t testing.TB) *CA {
	t.Helper()
	p := certtest.New(t, "herald test broker")
	ca := &CA{PEM: string(p.CertPEM)}
	ca.CertFile, ca.KeyFile = p.Write(t, t.TempDir())
	ca.CAFile = ca.CertFile
	var err error
	if ca.Server, err = tls.X509KeyPair(p.CertPEM, p.KeyPEM); err != nil {
		t.Fatal(err)
	}
	return ca
}

// ServerConfig is a TLS server configuration presenting the server
// certificate.
func (ca *CA) ServerConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.Server}, MinVersion: tls.VersionTLS12}
}

// ClientConfig is a TLS client configuration trusting the authority.
func (ca *CA) ClientConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(ca.PEM))
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
