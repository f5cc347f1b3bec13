package brokertest

import (
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a port of its own to a broker, and
// can be stopped (its listener and every connection closed: what a
// client sees of a broker that went down) and started again on the same
// port (the broker back). It stands for a restart of a broker a test
// cannot run its own instance of (RabbitMQ, whose restart takes long and
// whose shared instance is never stopped).
type Proxy struct {
	t      testing.TB
	Port   int
	target string
	tls    *tls.Config // nil: plain TCP

	mu    sync.Mutex
	l     net.Listener
	conns []net.Conn
}

// StartProxy starts a proxy to target (host:port); it stops when the test
// ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{t: t, Port: FreePort(t), target: target}
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// StartTLSProxy starts a proxy that ends TLS (cfg, the server's side)
// and forwards what it reads to target in the clear: a TLS broker in
// front of a plain one. It stops when the test ends.
func StartTLSProxy(t testing.TB, target string, cfg *tls.Config) *Proxy {
	t.Helper()
	p := &Proxy{t: t, Port: FreePort(t), target: target, tls: cfg}
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// Start listens again and forwards.
func (p *Proxy) Start() {
	p.t.Helper()
	l, err := net.Listen("tcp", p.Addr())
	if err != nil {
		p.t.Fatal(err)
	}
	if p.tls != nil {
		l = tls.NewListener(l, p.tls)
	}
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go p.accept(l)
}

func (p *Proxy) accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// Stop closes the listener and every connection.
func (p *Proxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
