package certfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/certfile"
	"github.com/herald-events/herald/internal/certfile/certtest"
)

// TestLoadNamesTheFile: a pair that does not load is refused naming the
// file at fault (both when they do not match).
func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := certtest.New(t, "a").Write(t, dir)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := write("garbage.pem", []byte("not PEM"))
	otherKey := write("other.key", certtest.New(t, "b").KeyPEM)
	big := write("big.pem", make([]byte, 2<<20))
	for _, c := range []struct{ cert, key, names string }{
		{filepath.Join(dir, "missing"), keyFile, "missing"},
		{certFile, filepath.Join(dir, "missing"), "missing"},
		{garbage, keyFile, garbage},
		{certFile, garbage, garbage},
		{certFile, otherKey, otherKey},
		{big, keyFile, big},
	} {
		if _, err := certfile.Load(c.cert, c.key); err == nil || !strings.Contains(err.Error(), c.names) {
			t.Errorf("Load(%s, %s): %v; want an error naming %s", c.cert, c.key, err, c.names)
		}
	}
}

// TestReloadKeepsTheOldPairOnError: Reload swaps in a pair that loads and
// keeps the one in use when the files do not load.
func TestReloadKeepsTheOldPairOnError(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := certtest.New(t, "first").Write(t, dir)
	p, err := certfile.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string {
		c, err := p.TLSConfig().GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	certtest.New(t, "next").Write(t, dir)
	if err := p.Reload(); err != nil || cn() != "next" {
		t.Fatalf("reload: %v, serving %q", err, cn())
	}
	if err := os.WriteFile(keyFile, []byte("broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(); err == nil || cn() != "next" {
		t.Fatalf("reload of a broken key: %v, serving %q; want an error and next kept", err, cn())
	}
}
