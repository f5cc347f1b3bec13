package process

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/certfile/certtest"
)

// The floods of docs/security.md's "Connections under a flood", as real
// connections against a real herald serve process, plain and over TLS, on
// loopback addresses only (127.0.0.1, 127.0.0.2, …), each bounded in count
// and time: a client that declares a body and sends none, one that sends
// it too slowly, one address that opens many connections, an account
// that holds many waiting receives, and every connection busy. Through
// each, GET /healthz and /readyz answer within a second.

const (
	// probeWithin is how soon a probe must be answered during a flood.
	probeWithin = time.Second
	// answerWithin bounds how long a flood connection's answer, and then
	// its end, may take: far less than the server's 60 s read timeout,
	// for which each was held before.
	answerWithin = 3 * time.Second
	// probeFrom is the address the probes come from, none of the floods'.
	probeFrom = "127.0.0.200"
)

// floodTarget is a herald serve process and how to reach it from chosen
// loopback addresses.
type floodTarget struct {
	*herald
	addr  string         // 127.0.0.1:PORT
	roots *x509.CertPool // trusting the server's certificate over TLS; nil over plain HTTP
}

// eachScheme runs f against a plain server and against one serving TLS.
func eachScheme(t *testing.T, f func(t *testing.T, tlsOn bool)) {
	if testing.Short() {
		t.Skip("process test: runs the herald binary")
	}
	t.Run("plain", func(t *testing.T) { f(t, false) })
	t.Run("tls", func(t *testing.T) { f(t, true) })
}

// startFlooded runs herald serve with extra flags (and a certificate of
// its own with tlsOn).
func startFlooded(t *testing.T, tlsOn bool, extra ...string) *floodTarget {
	t.Helper()
	var roots *x509.CertPool
	if tlsOn {
		cert := certtest.New(t, "flooded")
		certFile, keyFile := cert.Write(t, t.TempDir())
		extra = append(extra, "--tls-cert", certFile, "--tls-key", keyFile)
		roots = cert.Pool
	}
	h := startHeraldTrusting(t, nil, roots, "flooded", t.TempDir(), extra...)
	u, err := url.Parse(h.base)
	if err != nil {
		t.Fatal(err)
	}
	return &floodTarget{herald: h, addr: u.Host, roots: roots}
}

// dialRaw opens a TCP connection from the loopback address from.
func (f *floodTarget) dialRaw(from string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: answerWithin}
	return d.Dial("tcp", f.addr)
}

// dial opens a connection from the loopback address from: over TLS, one
// that has made its handshake and speaks HTTP/1.1 (ALPN), as a client that
// does not offer h2 does.
func (f *floodTarget) dial(from string) (net.Conn, error) {
	c, err := f.dialRaw(from)
	if err != nil || f.roots == nil {
		return c, err
	}
	tc := tls.Client(c, &tls.Config{RootCAs: f.roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	_ = tc.SetDeadline(time.Now().Add(answerWithin))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// mustDial is dial, closed at the test's end, failing the test on an
// error.
func (f *floodTarget) mustDial(t *testing.T, from string) net.Conn {
	t.Helper()
	c, err := f.dial(from)
	if err != nil {
		t.Fatalf("connecting from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// transport reaches the server from the loopback address from (HTTP/2
// over TLS).
func (f *floodTarget) transport(from string) *http.Transport {
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	if f.roots != nil {
		tr.TLSClientConfig, tr.ForceAttemptHTTP2 = &tls.Config{RootCAs: f.roots}, true
	}
	return tr
}

// probesAnswer checks that GET /healthz and GET /readyz, each on a
// connection of its own from probeFrom (as a kubelet sends its probes),
// answer 200 within probeWithin.
func (f *floodTarget) probesAnswer(t *testing.T, when string) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		tr := f.transport(probeFrom)
		ctx, cancel := context.WithTimeout(context.Background(), probeWithin)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.base+path, nil)
		began := time.Now()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
		tr.CloseIdleConnections()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: GET %s: %v, %v after %v; want 200 within %v", when, path, resp, err, time.Since(began).Round(time.Millisecond), probeWithin)
		}
	}
}

// send writes a request's header (lines, each without its CRLF) and body.
func send(c net.Conn, body string, lines ...string) error {
	_ = c.SetWriteDeadline(time.Now().Add(answerWithin))
	_, err := io.WriteString(c, strings.Join(lines, "\r\n")+"\r\n\r\n"+body)
	return err
}

// readAnswer reads one answer on c within answerWithin, its body
// included.
func readAnswer(c net.Conn, br *bufio.Reader) (*http.Response, error) {
	return readAnswerWithin(c, br, answerWithin)
}

// readAnswerWithin is readAnswer within d.
func readAnswerWithin(c net.Conn, br *bufio.Reader, d time.Duration) (*http.Response, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp, err
}

// ended reports whether the server closed c, seen within answerWithin
// (a read that ends rather than one that times out).
func ended(c net.Conn, br *bufio.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(answerWithin))
	_, err := br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// answeredAndClosed checks that c is answered status with Connection:
// close, and then closed by the server, each within answerWithin.
func answeredAndClosed(t *testing.T, what string, c net.Conn, br *bufio.Reader, status int) *http.Response {
	t.Helper()
	return answeredAndClosedWithin(t, what, c, br, status, answerWithin)
}

// answeredAndClosedWithin is answeredAndClosed with the answer within d.
func answeredAndClosedWithin(t *testing.T, what string, c net.Conn, br *bufio.Reader, status int, d time.Duration) *http.Response {
	t.Helper()
	resp, err := readAnswerWithin(c, br, d)
	switch {
	case err != nil:
		t.Fatalf("%s: no answer within %v: %v", what, d, err)
	case resp.StatusCode != status || !resp.Close:
		t.Fatalf("%s: %s, Connection: close %v; want %d with Connection: close", what, resp.Status, resp.Close, status)
	case !ended(c, br):
		t.Fatalf("%s: the connection is still open %v after its answer", what, answerWithin)
	}
	return resp
}

// closedUnanswered checks that a connection from the loopback address
// from is closed as soon as it is accepted: no answer to a request, or
// over TLS no handshake.
func (f *floodTarget) closedUnanswered(t *testing.T, from string) {
	t.Helper()
	c, err := f.dialRaw(from)
	if err != nil {
		t.Fatalf("connecting from %s: %v", from, err)
	}
	defer c.Close()
	if f.roots != nil {
		tc := tls.Client(c, &tls.Config{RootCAs: f.roots, ServerName: "127.0.0.1"})
		_ = tc.SetDeadline(time.Now().Add(answerWithin))
		err := tc.Handshake()
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a connection from %s over its cap: handshake %v; want it closed", from, err)
		}
		return
	}
	_ = send(c, "", "GET /healthz HTTP/1.1", "Host: herald")
	br := bufio.NewReader(c)
	if !ended(c, br) || br.Buffered() > 0 {
		t.Fatalf("a connection from %s over its cap: not closed unanswered within %v", from, answerWithin)
	}
}

// logLines returns the lines of the server's log that hold msg.
func (f *floodTarget) logLines(t *testing.T, msg string) []string {
	t.Helper()
	b, err := os.ReadFile(f.errPath)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, msg) {
			lines = append(lines, line)
		}
	}
	return lines
}

// coalesced checks that the hits of a cap since began wrote one warn line
// holding msg and each of attrs, coalesced: no more than one for each
// api.RefusalLogInterval that passed (one when the flood took less).
func (f *floodTarget) coalesced(t *testing.T, msg string, hits int, began time.Time, attrs ...string) {
	t.Helper()
	lines := f.logLines(t, msg)
	most := 1 + int(time.Since(began)/api.RefusalLogInterval)
	if len(lines) == 0 || len(lines) > most || len(lines) >= hits {
		t.Fatalf("%d hits of the cap wrote %d lines %q; want 1 to %d", hits, len(lines), msg, most)
	}
	for _, a := range append(attrs, "level=WARN") {
		if !strings.Contains(lines[0], a) {
			t.Errorf("the line %q lacks %s", lines[0], a)
		}
	}
}

// TestRefusedBeforeTheBodyClosesAtOnce: waves of connections that fill
// --max-connections, each sending POST /v1/events headers with
// Content-Length: 100000, no key, then nothing, are each answered 401
// with Connection: close and closed at once, wave after wave (four waves
// hold three and a half times the cap), and the probes answer between
// the waves. Before, net/http read (to discard) the declared body before
// it answered, for as long as the read timeout (60 s), so that each wave
// held every connection for a minute. Over TLS the same, for a client
// speaking HTTP/1.1; HTTP/2 resets the refused stream and keeps the
// connection, which serves the next request.
//
// A wave leaves room for the test's own two probes of the wave before
// (before the first, the start-up's readiness check): the server may
// still count a probe's connection, answered but not yet idle, when the
// next wave arrives, and a wave of the whole cap would
// then have the limiter close the oldest connection whose request it has
// not read yet (as it should: api/conns.go), a wave's own.
func TestRefusedBeforeTheBodyClosesAtOnce(t *testing.T) {
	eachScheme(t, func(t *testing.T, tlsOn bool) {
		const cap, probes, waves = 16, 2, 4
		f := startFlooded(t, tlsOn, "--max-connections", fmt.Sprint(cap))
		for w := range waves {
			conns := make([]net.Conn, cap-probes)
			for i := range conns {
				conns[i] = f.mustDial(t, "127.0.0.1")
				if err := send(conns[i], "", "POST /v1/events HTTP/1.1", "Host: herald",
					"Content-Type: application/cloudevents-batch+json", "Content-Length: 100000"); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range conns {
				answeredAndClosed(t, fmt.Sprintf("wave %d, connection %d", w, i), c, bufio.NewReader(c), http.StatusUnauthorized)
			}
			f.probesAnswer(t, fmt.Sprintf("after wave %d", w))
		}
		if tlsOn {
			f.refusedStreamKeepsTheConnection(t)
		}
	})
}

// refusedStreamKeepsTheConnection: over HTTP/2 a publish without a key
// whose body never comes is answered 401, and its connection, not closed
// (no GOAWAY), serves the next request.
func (f *floodTarget) refusedStreamKeepsTheConnection(t *testing.T) {
	tr := f.transport("127.0.0.3")
	defer tr.CloseIdleConnections()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, f.base+"/v1/events", pr)
	req.ContentLength = 100000
	req.Header.Set("Content-Type", "application/cloudevents-batch+json")
	resp, err := (&http.Client{Transport: tr, Timeout: answerWithin}).Do(req)
	if err != nil {
		t.Fatalf("HTTP/2 publish without a key: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.ProtoMajor != 2 {
		t.Fatalf("HTTP/2 publish without a key: %s over %s; want 401 over HTTP/2", resp.Status, resp.Proto)
	}
	reused := false
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, _ = http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, f.base+"/healthz", nil)
	resp, err = (&http.Client{Transport: tr, Timeout: answerWithin}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !reused {
		t.Fatalf("GET /healthz after the refused stream: %s, on the same connection %v; want 200 on it", resp.Status, reused)
	}
}

// slowBody starts a publish from the loopback address from whose body
// arrives a byte every half second, until stop closes or the connection
// fails. It returns once the server has begun to read the body (its 100
// Continue), its handler running.
func (f *floodTarget) slowBody(t *testing.T, from string, stop <-chan struct{}) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := f.mustDial(t, from)
	if err := send(c, "", "POST /v1/events HTTP/1.1", "Host: herald", "Authorization: Bearer "+adminKey,
		"Content-Type: application/cloudevents-batch+json", "Content-Length: 100000", "Expect: 100-continue"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if resp, err := readAnswer(c, br); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("slow body from %s: %v, %v; want 100 Continue", from, resp, err)
	}
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = c.SetWriteDeadline(time.Now().Add(answerWithin))
				if _, err := c.Write([]byte("[")); err != nil {
					return
				}
			}
		}
	}()
	return c, br
}

// overCapRefused checks that a publish on a new connection from the
// loopback address from, while every connection is busy, is answered 503
// with Retry-After and Connection: close.
func (f *floodTarget) overCapRefused(t *testing.T, from string) {
	t.Helper()
	c := f.mustDial(t, from)
	if err := send(c, "{}", "POST /v1/events HTTP/1.1", "Host: herald", "Authorization: Bearer "+adminKey,
		"Content-Type: application/cloudevents+json", "Content-Length: 2"); err != nil {
		t.Fatal(err)
	}
	resp := answeredAndClosed(t, "a publish while every connection is busy", c, bufio.NewReader(c), http.StatusServiceUnavailable)
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("the 503 over --max-connections has no Retry-After")
	}
}

// TestSlowBodiesAreCut: as many publishes as --max-connections, each
// sending its body a byte every half second, take every connection; the
// probes answer meanwhile, a publish on a new connection is answered 503
// (one warn line says the cap is reached), and each slow publish is
// answered 408 with Connection: close and closed BodyGrace after its
// header, its body far below MinBodyRate. Before, each held its
// connection until the read timeout (60 s), and the probes waited for one.
func TestSlowBodiesAreCut(t *testing.T) {
	eachScheme(t, func(t *testing.T, tlsOn bool) {
		const cap = 8
		f := startFlooded(t, tlsOn, "--max-connections", fmt.Sprint(cap))
		stop := make(chan struct{})
		defer close(stop)
		began := time.Now()
		conns := make([]net.Conn, cap)
		readers := make([]*bufio.Reader, cap)
		for i := range conns {
			conns[i], readers[i] = f.slowBody(t, "127.0.0.1", stop)
		}
		f.probesAnswer(t, "every connection a slow body")
		f.overCapRefused(t, "127.0.0.2")
		for i, c := range conns {
			answeredAndClosedWithin(t, fmt.Sprintf("slow body %d", i), c, readers[i], http.StatusRequestTimeout, api.BodyGrace+answerWithin)
		}
		if took := time.Since(began); took > api.BodyGrace+answerWithin {
			t.Errorf("the slow bodies were cut %v after they began; want within %v", took, api.BodyGrace+answerWithin)
		}
		f.coalesced(t, "only /healthz and /readyz are answered", 3, began, fmt.Sprintf("max_connections=%d", cap))
		f.probesAnswer(t, "after the slow bodies")
	})
}

// waitingReceive starts a receive of sub from the loopback address from
// that waits up to 30 s, and returns once the server reads its body (its
// 100 Continue): its connection is busy.
func (f *floodTarget) waitingReceive(t *testing.T, from, sub string) {
	t.Helper()
	c := f.mustDial(t, from)
	body := `{"max_wait": "30s"}`
	if err := send(c, "", "POST /v1/subscriptions/"+sub+"/receive HTTP/1.1", "Host: herald", "Authorization: Bearer "+adminKey,
		"Content-Type: application/json", fmt.Sprintf("Content-Length: %d", len(body)), "Expect: 100-continue"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if resp, err := readAnswer(c, br); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("receive from %s: %v, %v; want 100 Continue", from, resp, err)
	}
	if _, err := io.WriteString(c, body); err != nil {
		t.Fatal(err)
	}
}

// TestOneClientCannotHoldEveryConnection: with
// --max-connections-per-client 4, an address whose 4 connections wait in
// receives has each further connection closed as soon as it is accepted
// (one warn line naming it), while another address is served and the
// probes answer; an address whose 4 connections are idle keep-alives has
// its oldest closed for a new one. Before, one address could take every
// connection.
func TestOneClientCannotHoldEveryConnection(t *testing.T) {
	eachScheme(t, func(t *testing.T, tlsOn bool) {
		const perClient = 4
		f := startFlooded(t, tlsOn, "--max-connections", "64", "--max-connections-per-client", fmt.Sprint(perClient))
		sub := f.pullSubscription(t, "polled")
		for range perClient {
			f.waitingReceive(t, "127.0.0.1", sub)
		}
		began := time.Now()
		const over = 10
		for range over {
			f.closedUnanswered(t, "127.0.0.1")
		}
		c := f.mustDial(t, "127.0.0.2")
		if err := send(c, "", "GET /v1/subscriptions HTTP/1.1", "Host: herald", "Authorization: Bearer "+adminKey); err != nil {
			t.Fatal(err)
		}
		if resp, err := readAnswer(c, bufio.NewReader(c)); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("another address while 127.0.0.1 holds its cap: %v, %v; want 200", resp, err)
		}
		f.probesAnswer(t, "127.0.0.1 at its cap")
		f.coalesced(t, "--max-connections-per-client", over, began, "client=127.0.0.1", fmt.Sprintf("max_connections_per_client=%d", perClient))

		// Idle keep-alives of an address at its cap make room for its new
		// connection: one of them is closed (the oldest the server knows
		// idle), the others serve on.
		conns := make([]net.Conn, perClient+1)
		readers := make([]*bufio.Reader, perClient+1)
		get := func(i int) (*http.Response, error) {
			if err := send(conns[i], "", "GET /healthz HTTP/1.1", "Host: herald"); err != nil {
				return nil, err
			}
			return readAnswer(conns[i], readers[i])
		}
		for i := range conns {
			conns[i] = f.mustDial(t, "127.0.0.3")
			readers[i] = bufio.NewReader(conns[i])
			if resp, err := get(i); err != nil || resp.StatusCode != http.StatusOK || resp.Close {
				t.Fatalf("keep-alive %d of 127.0.0.3: %v, %v; want 200, kept alive", i, resp, err)
			}
		}
		closed := 0
		for i := range perClient {
			if _, err := get(i); err != nil {
				closed++
			}
		}
		if closed != 1 {
			t.Errorf("%d of the %d idle keep-alives of 127.0.0.3 closed for its next connection; want 1", closed, perClient)
		}
	})
}

// TestWaitingReceivesPerAccount: with --max-receives-per-account 4, of 5
// receives of one account waiting at once one is answered 429 with
// Retry-After, and so is an Event Grid receive (in Event Grid's error
// form), while a receive that does not wait is served, the probes answer,
// and one warn line names the account. Before, one account's waiting
// receives could take every connection.
func TestWaitingReceivesPerAccount(t *testing.T) {
	eachScheme(t, func(t *testing.T, tlsOn bool) {
		const perAccount = 4
		f := startFlooded(t, tlsOn, "--max-receives-per-account", fmt.Sprint(perAccount))
		sub := f.pullSubscription(t, "polled")
		began := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type answer struct {
			status     int
			retryAfter string
			body       []byte
			err        error
		}
		answers := make(chan answer, perAccount+1)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		for range perAccount + 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.base+"/v1/subscriptions/"+sub+"/receive", strings.NewReader(`{"max_wait": "30s"}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := f.client.Do(req)
				if err != nil {
					answers <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After"), body, err}
			}()
		}
		var refused answer
		select {
		case refused = <-answers:
		case <-time.After(answerWithin):
			t.Fatalf("none of %d waiting receives of one account was refused within %v", perAccount+1, answerWithin)
		}
		var p struct{ Type, Detail string }
		if refused.err != nil || refused.status != http.StatusTooManyRequests || refused.retryAfter == "" ||
			json.Unmarshal(refused.body, &p) != nil || p.Type != "urn:herald:problem:limit-reached" || !strings.Contains(p.Detail, "--max-receives-per-account") {
			t.Fatalf("the receive over the cap: %d, Retry-After %q, %s, %v; want 429 with Retry-After naming --max-receives-per-account",
				refused.status, refused.retryAfter, refused.body, refused.err)
		}

		eg := mustPost(t, f.client, f.base+"/topics/acc_default/eventsubscriptions/polled:receive?maxWaitTime=30", "")
		var egErr struct {
			Error struct{ Code, Message string }
		}
		if eg.status != http.StatusTooManyRequests || eg.retryAfter == "" || json.Unmarshal(eg.body, &egErr) != nil || egErr.Error.Code != "TooManyRequests" {
			t.Fatalf("an Event Grid receive over the cap: %d, Retry-After %q, %s; want 429 in Event Grid's form", eg.status, eg.retryAfter, eg.body)
		}
		if now := mustPost(t, f.client, f.base+"/v1/subscriptions/"+sub+"/receive", `{"max_wait": "0s"}`); now.status != http.StatusOK {
			t.Fatalf("a receive that does not wait, at the cap: %d %s; want 200", now.status, now.body)
		}
		f.probesAnswer(t, "the account at its cap")
		select {
		case a := <-answers:
			t.Fatalf("a waiting receive ended early: %d %s %v", a.status, a.body, a.err)
		default:
		}
		f.coalesced(t, "--max-receives-per-account", 2, began, "account=acc_default", fmt.Sprintf("max_receives_per_account=%d", perAccount))
	})
}

// posted is an answer mustPost read.
type posted struct {
	status     int
	retryAfter string
	body       []byte
}

// mustPost posts body (JSON; none when empty) to u with c, within
// answerWithin.
func mustPost(t *testing.T, c *http.Client, u, body string) posted {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerWithin)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return posted{resp.StatusCode, resp.Header.Get("Retry-After"), b}
}

// TestEveryConnectionBusyProbesAnswer: --max-connections 8 taken by
// waiting receives from four addresses, two each
// (--max-connections-per-client 2): the probes answer within a second,
// again and again, a publish on a new connection is answered 503 with
// Connection: close, an address at its cap is refused, and one warn line
// says --max-connections is reached. Before, the probes waited until a
// receive ended.
func TestEveryConnectionBusyProbesAnswer(t *testing.T) {
	eachScheme(t, func(t *testing.T, tlsOn bool) {
		const cap = 8
		f := startFlooded(t, tlsOn, "--max-connections", fmt.Sprint(cap), "--max-connections-per-client", "2")
		sub := f.pullSubscription(t, "polled")
		for i := range cap {
			f.waitingReceive(t, fmt.Sprintf("127.0.0.%d", 2+i/2), sub)
		}
		began := time.Now()
		const rounds = 3
		for i := range rounds {
			f.probesAnswer(t, fmt.Sprintf("every connection busy, round %d", i))
		}
		f.overCapRefused(t, "127.0.0.10")
		f.closedUnanswered(t, "127.0.0.2")
		f.coalesced(t, "only /healthz and /readyz are answered", 2*rounds+1, began, fmt.Sprintf("max_connections=%d", cap))
	})
}
