package broker

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/destination"
)

// lineServer is a broker of a line protocol: it answers each line with
// "ok", counts the connections it accepted, and can drop them all.
type lineServer struct {
	l        net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func startLineServer(t *testing.T) *lineServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{l: l}
	t.Cleanup(func() { l.Close(); s.drop() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				r := bufio.NewScanner(c)
				for r.Scan() {
					c.Write([]byte("ok\n"))
				}
			}()
		}
	}()
	return s
}

func (s *lineServer) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// lineConn is a Conn of the line protocol.
type lineConn struct {
	mu     sync.Mutex
	c      net.Conn
	r      *bufio.Reader
	broken atomic.Bool
	closed atomic.Bool
}

func lineConnect(addr string) Connector {
	return func(ctx context.Context, d *Destination, dial DialFunc) (Conn, error) {
		c, err := dial(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &lineConn{c: c, r: bufio.NewReader(c)}, nil
	}
}

func (l *lineConn) Publish(ctx context.Context, d *Destination, target string, m Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		l.c.SetDeadline(dl)
	}
	if _, err := l.c.Write(append([]byte(target), '\n')); err != nil {
		l.broken.Store(true)
		return AfterConnect(err)
	}
	if _, err := l.r.ReadString('\n'); err != nil {
		l.broken.Store(true)
		return AfterConnect(err)
	}
	return nil
}

func (l *lineConn) Broken() bool { return l.broken.Load() }
func (l *lineConn) Close()       { l.closed.Store(true); l.c.Close() }

func poolOf(t *testing.T, s *lineServer) *Pool {
	p := NewPool(map[string]Connector{TypeNATS: lineConnect(s.l.Addr().String())}, NewDialFunc(destination.Policy{AllowPrivate: true}, nil))
	t.Cleanup(p.Close)
	return p
}

func dest(n int) *Destination {
	return &Destination{Type: TypeNATS, Settings: Settings{URL: "nats://h" + strconv.Itoa(n)}, Subject: "a"}
}

func pub(p *Pool, d *Destination) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Publish(ctx, d, Message{})
}

// TestPoolShares: concurrent publishes to one broker share one
// connection; another URL (credentials) has its own.
func TestPoolShares(t *testing.T) {
	s := startLineServer(t)
	p := poolOf(t, s)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := pub(p, dest(1)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := pub(p, dest(2)); err != nil {
		t.Fatal(err)
	}
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestPoolRedials: a connection the broker closed fails one publish
// (unreachable) and is dropped; the next publish dials again.
func TestPoolRedials(t *testing.T) {
	s := startLineServer(t)
	p := poolOf(t, s)
	if err := pub(p, dest(1)); err != nil {
		t.Fatal(err)
	}
	s.drop()
	err := pub(p, dest(1))
	if OutcomeOf(err) != OutcomeUnreachable {
		t.Fatalf("publish on a dropped connection: %v", err)
	}
	if err := pub(p, dest(1)); err != nil {
		t.Fatalf("after the drop: %v", err)
	}
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestPoolBounds: the pool keeps at most MaxConns connections, closing the
// least recently used to open another, and closes those idle for
// IdleTimeout.
func TestPoolBounds(t *testing.T) {
	s := startLineServer(t)
	p := poolOf(t, s)
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	p.mu.Lock()
	p.now = func() time.Time { return *now.Load() }
	p.mu.Unlock()
	for i := range MaxConns + 1 {
		later := start.Add(time.Duration(i) * time.Second)
		now.Store(&later)
		if err := pub(p, dest(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Len(); n != MaxConns {
		t.Fatalf("%d connections kept, want %d", n, MaxConns)
	}
	p.mu.Lock()
	_, first := p.conns[Key(dest(0))]
	p.mu.Unlock()
	if first {
		t.Fatal("the least recently used connection was kept")
	}
	idle := start.Add(time.Duration(MaxConns)*time.Second + IdleTimeout)
	now.Store(&idle)
	p.sweep()
	if n := p.Len(); n != 0 {
		t.Fatalf("%d idle connections kept", n)
	}
}

// TestPoolUnknownType: a destination type without a connector is refused.
func TestPoolUnknownType(t *testing.T) {
	p := poolOf(t, startLineServer(t))
	err := pub(p, &Destination{Type: TypeMQTT, Topic: "a"})
	if OutcomeOf(err) != OutcomeRefused {
		t.Fatal(err)
	}
	if !errors.As(err, new(*Error)) {
		t.Fatal("not an *Error")
	}
}
