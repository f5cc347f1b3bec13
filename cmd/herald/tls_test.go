package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/certfile/certtest"
)

// TestTLSPairRefusedNamingTheFile: a --tls-cert/--tls-key pair that does
// not load stops herald serve before it starts (exit 2), naming the file
// at fault; a good pair makes --public-url default to https://.
func TestTLSPairRefusedNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := certtest.New(t, "good").Write(t, dir)
	otherKey := filepath.Join(dir, "other.key")
	if err := os.WriteFile(otherKey, certtest.New(t, "other").KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	serve := []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data")}
	for _, c := range []struct{ cert, key, names string }{
		{missing, keyFile, missing},
		{certFile, missing, missing},
		{garbage, keyFile, garbage},
		{certFile, garbage, garbage},
		{certFile, otherKey, otherKey},
	} {
		checkRefused(t, "bad pair", append(serve, "--tls-cert", c.cert, "--tls-key", c.key), c.names)
	}
	for _, bad := range []string{missing, garbage, keyFile} {
		checkRefused(t, "bad CA file", append(serve, "--outbound-ca-file", bad), "--outbound-ca-file")
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("herald serve made its data directory (%v): it started", err)
	}

	fs, o := newServeFlags(os.Stderr)
	if err := fs.Parse([]string{"--addr", ":8443", "--tls-cert", certFile, "--tls-key", keyFile}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.PublicURL, "https://localhost:8443") || o.tls == nil {
		t.Errorf("public URL %q with TLS; want https://localhost:8443", cfg.PublicURL)
	}
}
