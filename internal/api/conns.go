package api

import (
	"container/list"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// ConnLimits bound the connections an HTTPServer holds open.
type ConnLimits struct {
	// Max is the most connections open at once that serve any request
	// (--max-connections; at least 1). ReserveConns more serve the probes
	// alone.
	Max int
	// PerClient is the most connections one client address holds open at
	// once, of Max and the reserve together (--max-connections-per-client;
	// 0: no bound). At it a new connection of the address closes the
	// address's oldest idle one, or, with none idle, is closed as soon as
	// it is accepted, unanswered.
	PerClient int
}

// ReserveConns is how many connections an HTTPServer accepts over
// ConnLimits.Max while every one of those serves a request (none idle to
// close): a reserve connection serves one request, GET or HEAD /healthz or
// /readyz, and answers anything else 503 with Retry-After; either way
// with Connection: close (a GOAWAY over HTTP/2). Its request must have
// been read within reserveReadTime of its accept. When every reserve
// connection is taken, a new one closes the oldest that has not begun a
// request yet, or waits, unaccepted, while each serves one. So a probe is
// answered while a flood holds every connection: it is a connection of its
// own, served at once.
const ReserveConns = 8

// reserveReadTime bounds how long a reserve connection may take to send
// its request (its TLS handshake included), from its accept.
const reserveReadTime = 2 * time.Second

// connLimiter caps the connections an HTTPServer holds open (ConnLimits).
// A connection counts from the moment it is accepted until it is closed,
// whatever closes it. While it serves no request (accepted and no request
// read yet, or idle between keep-alive requests) it is in the idle list,
// in the order it got there; http.Server.ConnState keeps the list
// (connState). When a new connection arrives at the cap, the oldest idle
// one is closed to make room; when none is idle, the new connection is a
// reserve one (ReserveConns), closing the oldest reserve connection that
// has no request yet when the reserve is full, and waiting, unserved,
// while none can be closed (so at most one connection over the cap and
// the reserve is open: the one waiting; the others wait in the listen
// queue, unaccepted), or until the listener closes. With PerClient, a
// client address that holds that many closes its own oldest idle one for
// a new one, or has the new one closed unanswered.
type connLimiter struct {
	ConnLimits
	// overCap and overClient write the coalesced warn lines of the caps
	// reached (a connection taken into the reserve, one refused for its
	// client's address).
	overCap, overClient *capLog

	mu       sync.Mutex
	open     int // serving any request
	reserved int // reserve connections open
	waiting  bool
	idle     list.List                   // of *limitedConn, oldest idle first
	fresh    list.List                   // of reserve *limitedConn with no request yet, oldest first
	clients  map[netip.Addr]*clientConns // by client address, when PerClient > 0
	changed  chan struct{}               // closed and replaced when a connection closes or goes idle
}

// clientConns are one client address's connections.
type clientConns struct {
	open int
	idle list.List // of *limitedConn in idle or fresh, oldest first
}

// The messages of connLimiter's warn lines (docs/monitoring.md).
const (
	overCapLine    = "connections at --max-connections, every one busy: only /healthz and /readyz are answered over it"
	overClientLine = "connections refused: a client address holds --max-connections-per-client"
)

func newConnLimiter(lim ConnLimits, log *slog.Logger) *connLimiter {
	l := &connLimiter{ConnLimits: lim, changed: make(chan struct{}),
		overCap: newCapLog(log, overCapLine), overClient: newCapLog(log, overClientLine)}
	if lim.PerClient > 0 {
		l.clients = map[netip.Addr]*clientConns{}
	}
	return l
}

// signal wakes the Accept waiting for room. Call it with mu held.
func (l *connLimiter) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// verdict is what admit makes of an accepted connection.
type verdict int

const (
	admitted verdict = iota // counted: serve it
	refused                 // its client holds PerClient: close it
	stopped                 // the listener closed while it waited
)

// admit counts one more open connection from client, closing the oldest
// idle ones while there is no room (the client's own first when it holds
// PerClient), taking it into the reserve when none is idle, and waiting
// while neither has room. It returns the connection counted, or why not.
func (l *connLimiter) admit(c net.Conn, client netip.Addr, done <-chan struct{}) (*limitedConn, verdict) {
	for {
		l.mu.Lock()
		if cc := l.clients[client]; cc != nil && cc.open >= l.PerClient {
			if oldest := cc.idle.Front(); oldest != nil {
				l.evict(oldest)
				continue
			}
			l.mu.Unlock()
			l.overClient.hit(slog.String("client", client.String()), slog.Int("max_connections_per_client", l.PerClient))
			return nil, refused
		}
		if l.open < l.Max {
			l.open++
			return l.counted(c, client, false), admitted
		}
		if oldest := l.idle.Front(); oldest != nil {
			l.evict(oldest)
			continue
		}
		if l.reserved < ReserveConns {
			l.reserved++
			lc := l.counted(c, client, true)
			l.overCap.hit(slog.Int("max_connections", l.Max))
			return lc, admitted
		}
		if oldest := l.fresh.Front(); oldest != nil {
			l.evict(oldest)
			continue
		}
		changed := l.changed
		l.waiting = true
		l.mu.Unlock()
		select {
		case <-changed:
		case <-done:
			l.mu.Lock()
			l.waiting = false
			l.mu.Unlock()
			return nil, stopped
		}
		l.mu.Lock()
		l.waiting = false
		l.mu.Unlock()
	}
}

// counted returns c counted (its place already taken) and unlocks mu.
func (l *connLimiter) counted(c net.Conn, client netip.Addr, reserve bool) *limitedConn {
	if l.clients != nil {
		cc := l.clients[client]
		if cc == nil {
			cc = &clientConns{}
			l.clients[client] = cc
		}
		cc.open++
	}
	l.mu.Unlock()
	lc := &limitedConn{Conn: c, l: l, client: client, reserve: reserve}
	if reserve {
		lc.readBy = time.Now().Add(reserveReadTime)
		_ = c.SetReadDeadline(lc.readBy)
	}
	return lc
}

// evict closes the connection of e (in a list of idle ones), taken off its lists
// with the lock held, so that a request that arrives on it now finds it
// closed rather than served. Call it with mu held; it unlocks mu.
func (l *connLimiter) evict(e *list.Element) {
	c := e.Value.(*limitedConn)
	l.forget(c)
	l.mu.Unlock()
	_ = c.Conn.Close()
}

// state returns how many connections are open (the reserve's not
// counted), how many of them are idle, and whether a new one waits for
// room.
func (l *connLimiter) state() (open, idle int, waiting bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.idle.Len(), l.waiting
}

// reserve returns how many reserve connections are open.
func (l *connLimiter) reserve() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved
}

// forget gives c's place back, once: the first call for a connection
// takes it off its list and uncounts it. Call it with mu held.
func (l *connLimiter) forget(c *limitedConn) {
	if c.closed {
		return
	}
	c.closed = true
	l.unlist(c)
	if c.reserve {
		l.reserved--
	} else {
		l.open--
	}
	if cc := l.clients[c.client]; cc != nil {
		if cc.open--; cc.open == 0 {
			delete(l.clients, c.client)
		}
	}
	l.signal()
}

// list puts c, which serves no request, last in the idle list (fresh for
// a reserve one) and its client's. Call it with mu held.
func (l *connLimiter) list(c *limitedConn) {
	if c.reserve {
		c.elem = l.fresh.PushBack(c)
	} else {
		c.elem = l.idle.PushBack(c)
	}
	if cc := l.clients[c.client]; cc != nil {
		c.clientElem = cc.idle.PushBack(c)
	}
}

// unlist takes c off the lists of idle ones. Call it with mu held.
func (l *connLimiter) unlist(c *limitedConn) {
	if c.elem == nil {
		return
	}
	if c.reserve {
		l.fresh.Remove(c.elem)
	} else {
		l.idle.Remove(c.elem)
	}
	if cc := l.clients[c.client]; cc != nil && c.clientElem != nil {
		cc.idle.Remove(c.clientElem)
	}
	c.elem, c.clientElem = nil, nil
}

// connState is the http.Server's ConnState hook: it keeps the idle and
// fresh lists. Over TLS the connection it is told of is the *tls.Conn
// around the limitedConn (HTTP/2's idle and active states included).
func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	lc := asLimited(c)
	if lc == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.closed {
		return
	}
	l.unlist(lc)
	if state == http.StateNew || state == http.StateIdle {
		l.list(lc)
		l.signal()
	}
}

// asLimited returns the limitedConn c is, or is the TLS connection of;
// nil for any other.
func asLimited(c net.Conn) *limitedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

// reserveKey marks the context of a reserve connection's requests.
type reserveKey struct{}

// connContext is the http.Server's ConnContext hook: a reserve
// connection's requests carry reserveKey.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc := asLimited(c); lc != nil && lc.reserve {
		return context.WithValue(ctx, reserveKey{}, true)
	}
	return ctx
}

// onReserve reports whether r came on a reserve connection.
func onReserve(r *http.Request) bool { return r.Context().Value(reserveKey{}) != nil }

// limitListener admits each connection it accepts under its limiter.
type limitListener struct {
	net.Listener
	l         *connLimiter
	done      chan struct{}
	closeOnce sync.Once
}

// Accept returns the next connection its limiter admits; those it refuses
// (their client's address holds PerClient, none idle) are closed
// unanswered.
func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			// As the listener said: net/http backs off on a temporary
			// error (EMFILE included) instead of spinning.
			return nil, err
		}
		lc, how := ll.l.admit(c, clientAddr(c), ll.done)
		switch how {
		case admitted:
			return lc, nil
		case refused:
			_ = c.Close()
		case stopped:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

func (ll *limitListener) Close() error {
	ll.closeOnce.Do(func() { close(ll.done) })
	return ll.Listener.Close()
}

// clientAddr is c's client address (an IPv4-mapped IPv6 address as its
// IPv4 address); the zero Addr when it has none.
func clientAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// limitedConn is a connection counted by a connLimiter.
type limitedConn struct {
	net.Conn
	l       *connLimiter
	client  netip.Addr
	reserve bool
	// readBy, on a reserve connection, is when reading it ends whatever
	// deadline net/http sets (reserveReadTime after its accept).
	readBy time.Time
	// Guarded by l.mu. While it serves no request it is in l.idle
	// (l.fresh for a reserve one) and in its client's idle list.
	elem, clientElem *list.Element
	closed           bool
}

// Close gives the connection's place back (once) and closes it.
func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// SetReadDeadline sets the read deadline, no later than readBy on a
// reserve connection.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if !c.readBy.IsZero() && (t.IsZero() || t.After(c.readBy)) {
		t = c.readBy
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets both deadlines, the read one as SetReadDeadline does.
func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// CloseWrite lets net/http half-close the connection, as problemConn's
// does.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
