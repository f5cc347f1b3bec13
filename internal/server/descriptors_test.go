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
// Then 8 long polls take every place: a new connection is a reserve one
// (no long poll is cut for it), which answers /healthz and /readyz, and
// anything else 503, with Connection: close; reserve connections that
// send nothing are closed for newer ones. Once the polls answer, a new
// connection is served again.
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
	hs := api.NewHTTPServer(b.srv.Handler(), b.srv.API.Logger, api.ConnLimits{Max: capacity})
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
	if n := c.hs.ReserveConns(); n > api.ReserveConns {
		c.t.Fatalf("%s: %d reserve connections open, over %d", when, n, api.ReserveConns)
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
// connection is a reserve one, which answers the probes alone and closes,
// and no long poll is cut for it, until they answer and their connections
// go idle.
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
	waiting := func() int { return b.srv.API.Queue.(interface{ Waiting() int }).Waiting() }
	eventually(t, "every place taken by a waiting receive", func() bool {
		select {
		case err := <-polls:
			t.Fatalf("a long poll ended before the clock moved: %v", err)
		default:
		}
		return waiting() == c.capacity
	})
	for _, path := range []string{"/healthz", "/readyz", "/v1/subscriptions"} {
		late := dialKeepAlive(t, c.addr)
		resp, err := late.do("GET " + path + " HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer " + adminKey + "\r\n\r\n")
		want := http.StatusOK
		if path == "/v1/subscriptions" {
			want = http.StatusServiceUnavailable
		}
		if err != nil || resp.StatusCode != want || !resp.Close {
			t.Fatalf("GET %s on a new connection while every place is busy: %v, %v; want %d with Connection: close", path, resp, err, want)
		}
		if want == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s over the cap: 503 without Retry-After", path)
		}
		if _, err := late.r.ReadByte(); err == nil {
			t.Errorf("GET %s on a reserve connection: it still serves after its answer", path)
		}
		c.checkOpen("a reserve connection served")
	}
	// Reserve connections that send nothing are closed, the oldest first,
	// for newer ones.
	silent := make([]*keepAlive, api.ReserveConns)
	for i := range silent {
		silent[i] = dialKeepAlive(t, c.addr)
		eventually(t, "the silent connection taken into the reserve", func() bool { return hs.ReserveConns() == i+1 })
	}
	if code, err := dialKeepAlive(t, c.addr).get("/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz with the reserve full of silent connections: %d, %v", code, err)
	}
	if _, err := silent[0].r.ReadByte(); err == nil {
		t.Errorf("the oldest silent reserve connection is still open")
	}
	if n := waiting(); n != c.capacity {
		t.Fatalf("%d receives waiting after the reserve served; want %d (none cut)", n, c.capacity)
	}
	b.clk.Advance(60 * time.Second)
	for range c.capacity {
		if err := <-polls; err != nil {
			t.Errorf("a long poll at the cap: %v", err)
		}
	}
	eventually(t, "the long polls' connections idle", func() bool { _, idle, _ := hs.Conns(); return idle == c.capacity })
	resp, err := dialKeepAlive(t, c.addr).do("GET /v1/subscriptions HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer " + adminKey + "\r\n\r\n")
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Errorf("a new connection once the polls answered: %v, %v; want 200, kept alive", resp, err)
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
	resp, err := k.do(request)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// do writes a request and reads its answer, body included, within 30 s.
func (k *keepAlive) do(request string) (*http.Response, error) {
	_ = k.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(k.c, request); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp, err
}

// TestFitDescriptors: under a descriptor limit that holds three
// descriptors per attempt in flight, one per connection and what the store
// and the process keep, --max-in-flight and --max-connections stand; under
// a lower one both are lowered in proportion to what they ask, to fill
// what the limit leaves, no fewer than MinInFlight and MinConnections (nor
// more than asked, when fewer); a limit that does not hold those fewest is
// an error naming both flags and the limit.
func TestFitDescriptors(t *testing.T) {
	cfg := server.DefaultConfig()
	in, conns := cfg.Scheduling.MaxInFlight, cfg.MaxConnections
	reserved := cfg.ReservedDescriptors()
	fixed := reserved - 3*in
	if fixed < 64+api.ReserveConns {
		t.Fatalf("ReservedDescriptors = %d: %d besides three per attempt, fewer than 64 and the API's reserve connections", reserved, fixed)
	}
	for _, limit := range []uint64{0, 1 << 20, uint64(reserved + conns)} {
		fit, err := cfg.FitDescriptors(limit)
		if err != nil || fit != (server.DescriptorFit{MaxInFlight: in, MaxConnections: conns}) {
			t.Errorf("limit %d: %+v, %v; want both as asked, not lowered", limit, fit, err)
		}
	}
	least := fixed + 3*server.MinInFlight + server.MinConnections
	prev := server.DescriptorFit{}
	for limit := least; limit < reserved+conns; limit += 97 {
		fit, err := cfg.FitDescriptors(uint64(limit))
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		used := fixed + 3*fit.MaxInFlight + fit.MaxConnections
		switch {
		case !fit.Lowered:
			t.Fatalf("limit %d: %+v, not said to be lowered", limit, fit)
		case used > limit:
			t.Fatalf("limit %d: %+v needs %d descriptors", limit, fit, used)
		case limit-used > 3 && fit.MaxConnections < conns:
			t.Fatalf("limit %d: %+v leaves %d descriptors unused", limit, fit, limit-used)
		case fit.MaxInFlight < server.MinInFlight || fit.MaxConnections < server.MinConnections || fit.MaxInFlight > in || fit.MaxConnections > conns:
			t.Fatalf("limit %d: %+v, out of [%d, %d] attempts or [%d, %d] connections", limit, fit, server.MinInFlight, in, server.MinConnections, conns)
		case fit.MaxInFlight < prev.MaxInFlight || fit.MaxConnections < prev.MaxConnections:
			t.Fatalf("limit %d: %+v, fewer than under a lower limit (%+v)", limit, fit, prev)
		}
		// In proportion: each has the same share of what it asks, but for
		// rounding (attempts rounded down, the connections taking the
		// descriptors left) and the floors.
		if fit.MaxInFlight > server.MinInFlight && fit.MaxConnections > server.MinConnections {
			inShare, connShare := float64(fit.MaxInFlight)/float64(in), float64(fit.MaxConnections)/float64(conns)
			if d := inShare - connShare; d > 1e-9 || d < -(1.0/float64(in)+3.0/float64(conns))-1e-9 {
				t.Fatalf("limit %d: %+v: %.4f of the attempts asked, %.4f of the connections", limit, fit, inShare, connShare)
			}
		}
		prev = fit
	}
	// Herald's default under ulimit -n 1024, as small containers set it.
	if fit, err := cfg.FitDescriptors(1024); err != nil || !fit.Lowered || fit.MaxInFlight <= server.MinInFlight || fit.MaxConnections <= server.MinConnections {
		t.Errorf("the defaults under 1,024 descriptors: %+v, %v; want both lowered, above their fewest", fit, err)
	}
	if fit, err := cfg.FitDescriptors(uint64(least)); err != nil || fit.MaxInFlight != server.MinInFlight || fit.MaxConnections != server.MinConnections {
		t.Errorf("limit %d: %+v, %v; want the fewest of both", least, fit, err)
	}
	_, err := cfg.FitDescriptors(uint64(least - 1))
	for _, want := range []string{"--max-connections", "--max-in-flight", strconv.Itoa(least - 1)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a limit too low: %v; want an error naming %s", err, want)
		}
	}
	// What asks fewer than the fewest keeps what it asks.
	small := cfg
	small.Scheduling.MaxInFlight, small.MaxConnections = 4, 2
	if fit, err := small.FitDescriptors(uint64(fixed + 3*4 + 2)); err != nil || fit.Lowered || fit.MaxInFlight != 4 || fit.MaxConnections != 2 {
		t.Errorf("4 attempts and 2 connections under a limit that holds them: %+v, %v", fit, err)
	}
	pg := cfg
	pg.Store, pg.DBMaxConns = "postgres://h/db", 500
	if got, min := pg.ReservedDescriptors(), 3*cfg.Scheduling.MaxInFlight+500; got < min {
		t.Errorf("with a PostgreSQL pool of 500, %d reserved; want at least %d (pushes and the pool)", got, min)
	}
}
