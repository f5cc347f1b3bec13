package process

import (
	"crypto/tls"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/certfile/certtest"
)

// TestTLSReloadOnSIGHUP: herald serve --tls-cert --tls-key serves HTTPS
// over HTTP/2; after the files change and a SIGHUP, new connections get
// the new certificate while a connection opened before keeps answering;
// a pair that does not load on SIGHUP is logged and the one in use stays.
func TestTLSReloadOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	first, next := certtest.New(t, "first"), certtest.New(t, "next")
	certFile, keyFile := first.Write(t, t.TempDir())
	roots := first.Pool.Clone()
	roots.AddCert(next.Cert)
	h := startHeraldTrusting(t, nil, roots, "tls", t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile)

	served := func(c *http.Client) (cn, proto string) {
		t.Helper()
		resp, err := c.Get(h.base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName, resp.Proto
	}
	if cn, proto := served(h.client); cn != "first" || proto != "HTTP/2.0" {
		t.Fatalf("served %q over %s; want first over HTTP/2.0", cn, proto)
	}
	if err := os.WriteFile(certFile, next.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, next.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// A new connection each time, until one gets the new certificate.
	newConn := func() string {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		cn, _ := served(&http.Client{Transport: tr, Timeout: 5 * time.Second})
		return cn
	}
	waitFor(t, startTimeout, "a new connection to get the reloaded certificate", func() (bool, string) {
		cn := newConn()
		return cn == "next", "served " + cn
	})
	if cn, _ := served(h.client); cn != "first" {
		t.Errorf("the connection opened before SIGHUP now serves %q; want it kept, with its certificate", cn)
	}

	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, startTimeout, "the failed reload to be logged", func() (bool, string) {
		b, _ := os.ReadFile(h.errPath)
		return strings.Contains(string(b), "TLS certificate not reloaded") && strings.Contains(string(b), keyFile), "not in the log"
	})
	if cn := newConn(); cn != "next" {
		t.Errorf("after a bad pair on SIGHUP a new connection got %q; want next, still", cn)
	}
}
