package api

import (
	"container/list"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
)

// connLimiter caps the connections an HTTPServer holds open at once. A
// connection counts from the moment it is accepted until it is closed,
// whatever closes it. While it serves no request (accepted and no request
// read yet, or idle between keep-alive requests) it is in the idle list,
// in the order it got there; http.Server.ConnState keeps the list
// (connState). When a new connection arrives at the cap, the oldest idle
// one is closed to make room; when none is idle, the new connection waits,
// unserved, until one closes or goes idle (so at most one connection over
// the cap is open: the one waiting; the others wait in the listen queue,
// unaccepted), or until the listener closes.
type connLimiter struct {
	max int

	mu      sync.Mutex
	open    int
	waiting bool          // an accepted connection waits for room
	idle    list.List     // of *limitedConn, oldest idle first
	changed chan struct{} // closed and replaced when a connection closes or goes idle
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, changed: make(chan struct{})}
}

// signal wakes the Accept waiting for room. Call it with mu held.
func (l *connLimiter) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// admit counts one more open connection, closing the oldest idle ones
// while there is no room, and waiting while none is idle. It returns false
// when done is closed first.
func (l *connLimiter) admit(done <-chan struct{}) bool {
	for {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			l.mu.Unlock()
			return true
		}
		if front := l.idle.Front(); front != nil {
			// Taken off the list with the lock held, so a request that
			// arrives on it now finds it closed rather than served.
			oldest := front.Value.(*limitedConn)
			l.forget(oldest)
			l.mu.Unlock()
			_ = oldest.Conn.Close()
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
			return false
		}
		l.mu.Lock()
		l.waiting = false
		l.mu.Unlock()
	}
}

// state returns how many connections are open, how many of them are idle,
// and whether a new one waits for room.
func (l *connLimiter) state() (open, idle int, waiting bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.idle.Len(), l.waiting
}

// forget gives c's place back, once: the first call for a connection
// takes it off the idle list and uncounts it. Call it with mu held.
func (l *connLimiter) forget(c *limitedConn) {
	if c.closed {
		return
	}
	c.closed = true
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
	l.open--
	l.signal()
}

// connState is the http.Server's ConnState hook: it keeps the idle list.
// Over TLS the connection it is told of is the *tls.Conn around the
// limitedConn (HTTP/2's idle and active states included).
func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.closed {
		return
	}
	if lc.elem != nil {
		l.idle.Remove(lc.elem)
		lc.elem = nil
	}
	if state == http.StateNew || state == http.StateIdle {
		lc.elem = l.idle.PushBack(lc)
		l.signal()
	}
}

// limitListener admits each connection it accepts under its limiter.
type limitListener struct {
	net.Listener
	l         *connLimiter
	done      chan struct{}
	closeOnce sync.Once
}

func (ll *limitListener) Accept() (net.Conn, error) {
	c, err := ll.Listener.Accept()
	if err != nil {
		// As the listener said: net/http backs off on a temporary error
		// (EMFILE included) instead of spinning.
		return nil, err
	}
	if !ll.l.admit(ll.done) {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	return &limitedConn{Conn: c, l: ll.l}, nil
}

func (ll *limitListener) Close() error {
	ll.closeOnce.Do(func() { close(ll.done) })
	return ll.Listener.Close()
}

// limitedConn is a connection counted by a connLimiter.
type limitedConn struct {
	net.Conn
	l *connLimiter
	// Guarded by l.mu.
	elem   *list.Element // in l.idle while it serves no request
	closed bool
}

// Close gives the connection's place back (once) and closes it.
func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close the connection, as problemConn's
// does.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
