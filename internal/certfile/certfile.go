// Package certfile is the API's TLS certificate: a certificate and key
// pair read from two PEM files, re-read on demand (herald serve does on
// SIGHUP) and swapped atomically, so that connections already open keep
// theirs and new ones get the new pair. A pair that does not load leaves
// the one in use in place.
package certfile

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
)

// maxFileBytes bounds each file read: a chain of certificates or a key is
// a few KiB.
const maxFileBytes = 1 << 20

// Pair is the certificate served, from its two files.
type Pair struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// Load reads the pair from certFile (PEM certificates, the leaf first) and
// keyFile (its PEM private key). Its error names the file at fault, or
// both when they do not match.
func Load(certFile, keyFile string) (*Pair, error) {
	p := &Pair{certFile: certFile, keyFile: keyFile}
	if err := p.Reload(); err != nil {
		return nil, err
	}
	return p, nil
}

// Reload reads the files again and, if they load, serves them from now
// on; if not, the pair in use stays and the error says why.
func (p *Pair) Reload() error {
	c, err := read(p.certFile, p.keyFile)
	if err != nil {
		return err
	}
	p.cur.Store(c)
	return nil
}

// Certificate returns the pair in use.
func (p *Pair) Certificate() *tls.Certificate { return p.cur.Load() }

// TLSConfig returns a server configuration serving the pair in use at each
// handshake, offering HTTP/2 and HTTP/1.1, TLS 1.2 at least.
func (p *Pair) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.cur.Load(), nil
		},
	}
}

func read(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := readFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile(keyFile)
	if err != nil {
		return nil, err
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls says which input it could not read: name its file.
		switch msg := err.Error(); {
		case strings.Contains(msg, "certificate input"):
			return nil, fmt.Errorf("%s: %v", certFile, err)
		case strings.Contains(msg, "key input"), strings.Contains(msg, "private key"):
			return nil, fmt.Errorf("%s (with %s): %v", keyFile, certFile, err)
		}
		return nil, fmt.Errorf("%s and %s: %v", certFile, keyFile, err)
	}
	return &c, nil
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err // an *os.PathError names the file
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a PEM certificate or key", name, maxFileBytes)
	}
	return b, nil
}

// LoadPool returns the system's trusted certificate authorities (none
// when the system's cannot be read) and the PEM certificates in file
// (--outbound-ca-file). A file that cannot be read, holds no certificate,
// or holds anything else, is an error naming it.
func LoadPool(file string) (*x509.CertPool, error) {
	b, err := readFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := ParseCertificates(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// ParseCertificates parses b, PEM certificates and nothing else (white
// space between them): at least one, each a CERTIFICATE block that
// parses.
func ParseCertificates(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			if len(bytes.TrimSpace(b)) != 0 || len(out) == 0 {
				return nil, errors.New("not PEM certificates")
			}
			return out, nil
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if blk.Type != "CERTIFICATE" || err != nil {
			return nil, fmt.Errorf("PEM block %d is not a certificate", len(out)+1)
		}
		out = append(out, c)
	}
}
