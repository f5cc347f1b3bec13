package server_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/certfile"
	"github.com/herald-events/herald/internal/certfile/certtest"
	"github.com/herald-events/herald/internal/server"
)

// tlsAPI is the bundle's API served over HTTPS by the HTTP server herald
// serve runs (api.HTTPServer), with a certificate made for the test.
type tlsAPI struct {
	base              string // https://127.0.0.1:PORT
	hs                *api.HTTPServer
	pair              *certfile.Pair
	cert              certtest.Pair
	certFile, keyFile string
}

// serveTLS serves b's API over HTTPS on a loopback port until the test ends.
func serveTLS(b *bundle) *tlsAPI {
	b.t.Helper()
	cert := certtest.New(b.t, "herald test")
	certFile, keyFile := cert.Write(b.t, b.t.TempDir())
	pair, err := certfile.Load(certFile, keyFile)
	if err != nil {
		b.t.Fatal(err)
	}
	hs := api.NewHTTPServer(b.srv.Handler(), b.srv.API.Logger, api.ConnLimits{Max: server.DefaultConfig().MaxConnections})
	hs.TLSConfig = pair.TLSConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	b.t.Cleanup(func() { b.srv.StopWaiting(); _ = hs.Close() })
	return &tlsAPI{base: "https://" + ln.Addr().String(), hs: hs, pair: pair, cert: cert, certFile: certFile, keyFile: keyFile}
}

// transport returns a transport trusting the certificates of pairs, HTTP/2
// when the server offers it.
func tlsTransport(pairs ...certtest.Pair) *http.Transport {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pairs[0].Pool}, ForceAttemptHTTP2: true}
	for _, p := range pairs[1:] {
		tr.TLSClientConfig.RootCAs.AddCert(p.Cert)
	}
	return tr
}

// TestHTTPSServesHTTP2: with a TLS configuration the API server speaks
// HTTP/2 over TLS (HTTP/1.1 to a client that offers only it), and the
// console's session cookie is Secure.
func TestHTTPSServesHTTP2(t *testing.T) {
	b := setup(t)
	s := serveTLS(b)
	tr := tlsTransport(s.cert)
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get(s.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
		t.Fatalf("GET /readyz over TLS: %d %s (ALPN %v); want 200 over HTTP/2", resp.StatusCode, resp.Proto, resp.TLS)
	}
	// The connection cap sees TLS connections, HTTP/2's idle state too (so
	// that it can close the oldest idle one).
	eventually(t, "the HTTP/2 connection counted, and idle", func() bool {
		open, idle, _ := s.hs.Conns()
		return open == 1 && idle == 1
	})
	h1 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.cert.Pool}}
	resp, err = (&http.Client{Transport: h1}).Get(s.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 1 {
		t.Fatalf("GET /healthz with HTTP/1.1 only: %d %s", resp.StatusCode, resp.Proto)
	}
	h1.CloseIdleConnections()

	noRedirect := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.PostForm(s.base+"/console/login", url.Values{"key": {adminKey}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "herald_session" {
			session = c
		}
	}
	if session == nil || !session.Secure || !session.HttpOnly {
		t.Fatalf("console sign-in over TLS: %d, cookies %v; want a Secure, HttpOnly herald_session", resp.StatusCode, resp.Header["Set-Cookie"])
	}
}

// TestHTTPSReload: after Reload a new connection gets the new certificate
// while a connection opened before keeps serving with the old one; a pair
// that does not load leaves the new one served.
func TestHTTPSReload(t *testing.T) {
	b := setup(t)
	s := serveTLS(b)
	next := certtest.New(t, "herald test, next")
	tr := tlsTransport(s.cert, next)
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	served := func(c *http.Client) string {
		t.Helper()
		resp, err := c.Get(s.base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if cn := served(client); cn != "herald test" {
		t.Fatalf("served %q", cn)
	}
	if err := os.WriteFile(s.certFile, next.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.keyFile, next.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.pair.Reload(); err != nil {
		t.Fatal(err)
	}
	// The open HTTP/2 connection is not dropped: it still answers, with
	// the certificate it began with.
	if cn := served(client); cn != "herald test" {
		t.Errorf("the connection opened before the reload served %q", cn)
	}
	fresh := &http.Client{Transport: tlsTransport(s.cert, next)}
	if cn := served(fresh); cn != "herald test, next" {
		t.Errorf("a new connection after the reload got %q", cn)
	}
	// A key that does not match: refused, naming the file; the pair in
	// use stays.
	if err := os.WriteFile(s.keyFile, certtest.New(t, "other").KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.pair.Reload(); err == nil || !strings.Contains(err.Error(), s.keyFile) {
		t.Errorf("reloading a mismatched pair: %v; want an error naming %s", err, s.keyFile)
	}
	fresh2 := &http.Client{Transport: tlsTransport(s.cert, next)}
	if cn := served(fresh2); cn != "herald test, next" {
		t.Errorf("after a failed reload a new connection got %q", cn)
	}
}
