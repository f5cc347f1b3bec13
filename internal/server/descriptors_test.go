package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
)

// TestOutOfDescriptorsIsNotTheEndpointsFailure: while every dial fails
// with EMFILE (the process is out of file descriptors), attempts are
// logged as local_error and retried 10 s later, but the endpoint's circuit
// does not count them (it stays enabled, with no consecutive failure,
// where 3 failures disable it) and neither does the deliveries' retry
// budget (max_attempts 2 would dead-letter them); once descriptors are
// back, the deliveries go. Before, each attempt was a network_error
// against the endpoint: it was disabled and the deliveries dead-lettered.
func TestOutOfDescriptorsIsNotTheEndpointsFailure(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 0
	cfg.DisableConsecutive = 3
	var exhausted atomic.Bool
	exhausted.Store(true)
	var dials atomic.Int64
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		if exhausted.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", syscall.EMFILE)}
		}
		return dialer.DialContext(ctx, network, addr)
	}}}
	b := setup(t, func(c *server.Config) {
		c.Scheduling.Health = cfg
		c.Attempting.Client = client
	})
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "fine", "url": rc.URL, "event_types": []string{"t"},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "max_attempts": 2, "ttl": "24h"}})
	ep := b.endpointOf(sub)
	const events = 3
	for i := range events {
		b.publish("e"+strconv.Itoa(i), "t")
	}
	for round := 1; round <= 3; round++ {
		eventually(t, "every delivery attempted again", func() bool { return dials.Load() >= int64(round*events) })
		b.settle()
		for _, d := range b.deliveries(sub) {
			if d.Status != "pending" || d.LastOutcome == nil || *d.LastOutcome != "local_error" || d.Attempts != round ||
				d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(b.clk.Now().Add(10*time.Second)) {
				t.Fatalf("round %d: delivery %+v; want pending, local_error, %d attempts, next in 10s", round, d, round)
			}
		}
		if e := b.endpoint(ep); e.State != "enabled" || e.ConsecutiveFailures != 0 {
			t.Fatalf("round %d: endpoint %+v; want enabled, no failure counted", round, e)
		}
		if round < 3 {
			b.clk.Advance(10 * time.Second)
		}
	}
	a := b.attempts(b.deliveries(sub)[0].ID)
	if len(a) != 3 || a[0].Outcome != "local_error" || a[0].Error == nil {
		t.Fatalf("attempts %+v; want 3 logged local_error with their error", a)
	}
	exhausted.Store(false)
	b.clk.Advance(10 * time.Second)
	eventually(t, "every delivery delivered", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	if rc.count() != events {
		t.Fatalf("the receiver got %d pushes, want %d", rc.count(), events)
	}
}

// TestConnectionCap floods the HTTP server herald serve runs, capped at 8
// connections, with 40 keep-alive connections that each send GET /healthz
// and then idle: the server never holds more than 8 open, closes the
// oldest idle ones to make room (the first 32 are closed, the last 8 still
// serve a second request), and a new client's /healthz still answers.
// Then 8 long polls take every place: a new connection is not served (it
// waits to be accepted, and no long poll is cut for it) until they answer
// and their connections go idle.
func TestConnectionCap(t *testing.T) {
	b := setup(t)
	c := startCapped(t, b, 8)
	c.flood(40)
	c.longPollsTakeEveryPlace()
}

// capped is an HTTP server of herald serve's handler on 127.0.0.1, with
// its connections capped.
type capped struct {
	t        *testing.T
	b        *bundle
	hs       *api.HTTPServer
	addr     string
	capacity int
}

// startCapped serves b's handler on a new listener, at most capacity
// connections at once, until the test ends.
func startCapped(t *testing.T, b *bundle, capacity int) *capped {
	hs := api.NewHTTPServer(b.srv.Handler(), b.srv.API.Logger, capacity)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return &capped{t: t, b: b, hs: hs, addr: ln.Addr().String(), capacity: capacity}
}

// checkOpen fails the test if more connections than the cap are open.
func (c *capped) checkOpen(when string) {
	c.t.Helper()
	if open, _, _ := c.hs.Conns(); open > c.capacity {
		c.t.Fatalf("%s: %d connections open, over the cap of %d", when, open, c.capacity)
	}
}

// flood opens n keep-alive connections that each send GET /healthz and
// then idle: the server never holds more than the cap open, the oldest
// idle ones are closed (the last capacity still serve a second request),
// and a new client's /healthz still answers.
func (c *capped) flood(n int) {
	t, hs := c.t, c.hs
	conns := make([]*keepAlive, n)
	for i := range conns {
		conns[i] = dialKeepAlive(t, c.addr)
		if code, err := conns[i].get("/healthz"); err != nil || code != http.StatusOK {
			t.Fatalf("flood connection %d: %d, %v", i, code, err)
		}
		c.checkOpen(fmt.Sprintf("after flood connection %d", i))
		// The server knows it idle a moment after the client read the
		// answer: only then may it be closed for a newer one.
		eventually(t, "the flood connection idle", func() bool { _, idle, _ := hs.Conns(); return idle == min(i+1, c.capacity) })
	}
	for i, conn := range conns {
		code, err := conn.get("/healthz")
		switch closed := i < n-c.capacity; {
		case closed && err == nil:
			t.Errorf("flood connection %d (of the oldest idle) still serves: %d", i, code)
		case !closed && (err != nil || code != http.StatusOK):
			t.Errorf("flood connection %d (of the newest) no longer serves: %d, %v", i, code, err)
		}
	}
	fresh := dialKeepAlive(t, c.addr)
	if code, err := fresh.get("/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("a new client's /healthz under the flood: %d, %v", code, err)
	}
	c.checkOpen("after the new client")
}

// longPollsTakeEveryPlace fills every place with a long poll: a new
// connection is not served (it waits to be accepted, and no long poll is
// cut for it) until they answer and their connections go idle.
func (c *capped) longPollsTakeEveryPlace() {
	t, b, hs := c.t, c.b, c.hs
	var sub struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "p", "delivery_mode": "pull"}, &sub); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	polls := make(chan error, c.capacity)
	for range c.capacity {
		conn := dialKeepAlive(t, c.addr)
		go func() {
			code, err := conn.post("/v1/subscriptions/"+sub.ID+"/receive", `{"max_wait": "60s"}`)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("status %d", code)
			}
			polls <- err
		}()
	}
	eventually(t, "every place taken by a waiting receive", func() bool {
		select {
		case err := <-polls:
			t.Fatalf("a long poll ended before the clock moved: %v", err)
		default:
		}
		return b.srv.API.Queue.(interface{ Waiting() int }).Waiting() == c.capacity
	})
	late := make(chan error, 1)
	go func() {
		conn := dialKeepAlive(t, c.addr)
		code, err := conn.get("/healthz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d", code)
		}
		late <- err
	}()
	eventually(t, "the new connection waiting for room", func() bool { _, _, waiting := hs.Conns(); return waiting })
	select {
	case err := <-late:
		t.Fatalf("a connection over the cap was served while every place was busy: %v", err)
	default:
	}
	b.clk.Advance(60 * time.Second)
	for range c.capacity {
		if err := <-polls; err != nil {
			t.Errorf("a long poll at the cap: %v", err)
		}
	}
	if err := <-late; err != nil {
		t.Errorf("the connection that waited: %v", err)
	}
	c.checkOpen("at the end")
}

// keepAlive is one client connection, reused for each request.
type keepAlive struct {
	c net.Conn
	r *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAlive{c: c, r: bufio.NewReader(c)}
}

func (k *keepAlive) get(path string) (int, error) {
	return k.send("GET " + path + " HTTP/1.1\r\nHost: herald\r\n\r\n")
}

func (k *keepAlive) post(path, body string) (int, error) {
	return k.send(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, adminKey, len(body), body))
}

// send writes a request and reads its answer, within 30 s.
func (k *keepAlive) send(request string) (int, error) {
	_ = k.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(k.c, request); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// TestConnectionCapUnderDescriptorLimit: --max-connections stands when the
// descriptor limit leaves room for it after ReservedDescriptors, is lowered
// to what it leaves otherwise, and a limit that leaves fewer than
// MinConnections is an error naming the flags.
func TestConnectionCapUnderDescriptorLimit(t *testing.T) {
	cfg := server.DefaultConfig()
	reserved := uint64(cfg.ReservedDescriptors())
	if min := uint64(3*cfg.Scheduling.MaxInFlight + 64); reserved < min {
		t.Fatalf("ReservedDescriptors = %d, less than three per attempt in flight and 64 (%d)", reserved, min)
	}
	for _, c := range []struct {
		limit   uint64
		want    int
		lowered bool
	}{
		{0, 4096, false},
		{1 << 20, 4096, false},
		{reserved + 4096, 4096, false},
		{reserved + 4095, 4095, true},
		{reserved + server.MinConnections, server.MinConnections, true},
	} {
		n, lowered, err := cfg.ConnectionCap(c.limit)
		if err != nil || n != c.want || lowered != c.lowered {
			t.Errorf("limit %d: %d, %v, %v; want %d, %v", c.limit, n, lowered, err, c.want, c.lowered)
		}
	}
	_, _, err := cfg.ConnectionCap(reserved + server.MinConnections - 1)
	if err == nil || !strings.Contains(err.Error(), "--max-connections") || !strings.Contains(err.Error(), "--max-in-flight") {
		t.Errorf("a limit too low: %v; want an error naming --max-connections and --max-in-flight", err)
	}
	pg := cfg
	pg.Store, pg.DBMaxConns = "postgres://h/db", 500
	if got, min := pg.ReservedDescriptors(), 3*cfg.Scheduling.MaxInFlight+500; got < min {
		t.Errorf("with a PostgreSQL pool of 500, %d reserved; want at least %d (pushes and the pool)", got, min)
	}
}
