package api

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve serves hs on 127.0.0.1 until the test ends, and returns its
// address.
func serve(t *testing.T, hs *HTTPServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// eventually checks cond every 2 ms, for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		<-tick.C
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// client is a connection from a loopback address, reused for each request.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dialFrom(t *testing.T, from, addr string) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// get sends GET path and reads the answer, within 5 s.
func (c *client) get(path string) (*http.Response, error) {
	return c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
}

// send writes request and reads the answer, within 5 s.
func (c *client) send(request string) (*http.Response, error) {
	_ = c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.c, request); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp, err
}

// closed reports whether the server closed c (seen within 5 s).
func (c *client) closed() bool {
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// serveBusy serves, under lim, a handler that answers at once but on
// /busy, which waits until the test ends, and makes n connections from the
// loopback address from busy there.
func serveBusy(t *testing.T, log *slog.Logger, lim ConnLimits, from string, n int) (*HTTPServer, string) {
	t.Helper()
	release := make(chan struct{})
	hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			<-release
		}
	}), log, lim)
	addr := serve(t, hs)
	t.Cleanup(func() { close(release) })
	for range n {
		c := dialFrom(t, from, addr)
		if _, err := io.WriteString(c.c, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the connections busy", func() bool { open, idle, _ := hs.Conns(); return open == n && idle == 0 })
	return hs, addr
}

// TestPerClientCap: an address that holds ConnLimits.PerClient busy
// connections has its next one closed unanswered (one warn line), while
// another address is served; once one of its connections is idle, its new
// one closes that one instead, the oldest idle first.
func TestPerClientCap(t *testing.T) {
	var logs lockedBuffer
	hs, addr := serveBusy(t, slog.New(slog.NewJSONHandler(&logs, nil)), ConnLimits{Max: 64, PerClient: 2}, "127.0.0.2", 2)
	for i := range 5 {
		if c := dialFrom(t, "127.0.0.2", addr); !c.closed() || c.r.Buffered() > 0 {
			t.Fatalf("connection %d over the cap of 127.0.0.2: not closed unanswered", i)
		}
	}
	if n := strings.Count(logs.String(), overClientLine); n != 1 {
		t.Errorf("5 connections refused: %d warn lines; want 1\n%s", n, logs.String())
	}
	if resp, err := dialFrom(t, "127.0.0.3", addr).get("/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another address: %v, %v", resp, err)
	}

	// One after the other, each idle (the server's state, which follows
	// its answer) before the next asks: which is the older idle one is
	// then certain.
	idle := []*client{dialFrom(t, "127.0.0.4", addr), dialFrom(t, "127.0.0.4", addr)}
	for i, c := range idle {
		if resp, err := c.get("/"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("keep-alive %d: %v, %v", i, resp, err)
		}
		eventually(t, "idle", func() bool { _, n, _ := hs.Conns(); return n >= i+1 })
	}
	if resp, err := dialFrom(t, "127.0.0.4", addr).get("/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a third connection of 127.0.0.4, two idle: %v, %v", resp, err)
	}
	if !idle[0].closed() {
		t.Errorf("the oldest idle connection of 127.0.0.4 is still open")
	}
	if resp, err := idle[1].get("/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the newer idle connection of 127.0.0.4: %v, %v; want it kept", resp, err)
	}
}

// TestReserveConnections: with every connection busy, ReserveConns more
// are accepted; each answers GET /healthz (or /readyz) and anything else
// 503, with Connection: close; one that sends nothing is closed
// reserveReadTime after its accept, and the oldest such is closed for a
// new one when the reserve is full.
func TestReserveConnections(t *testing.T) {
	hs, addr := serveBusy(t, slog.New(slog.DiscardHandler), ConnLimits{Max: 2}, "127.0.0.1", 2)
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusOK, "/busy": http.StatusServiceUnavailable} {
		c := dialFrom(t, "127.0.0.1", addr)
		resp, err := c.get(path)
		if err != nil || resp.StatusCode != want || !resp.Close || !c.closed() {
			t.Fatalf("GET %s over the cap: %v, %v; want %d with Connection: close, closed after", path, resp, err, want)
		}
	}
	silent := make([]*client, ReserveConns)
	for i := range silent {
		silent[i] = dialFrom(t, "127.0.0.1", addr)
		eventually(t, "the silent connection in the reserve", func() bool { return hs.ReserveConns() == i+1 })
	}
	began := time.Now()
	if resp, err := dialFrom(t, "127.0.0.1", addr).get("/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz, the reserve full of silent connections: %v, %v", resp, err)
	}
	if !silent[0].closed() {
		t.Errorf("the oldest silent reserve connection is still open")
	}
	if !silent[1].closed() || time.Since(began) > reserveReadTime+time.Second {
		t.Errorf("a silent reserve connection was not closed by its read deadline (%v)", reserveReadTime)
	}
}
