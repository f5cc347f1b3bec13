package api

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"os"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/certfile"
	"github.com/herald-events/herald/internal/certfile/certtest"
)

// deadlineWriter is a ResponseWriter that notes the read deadlines set
// through it, as net/http's own writer takes them.
type deadlineWriter struct {
	header    http.Header
	deadlines []time.Time
}

func (w *deadlineWriter) Header() http.Header         { return w.header }
func (w *deadlineWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *deadlineWriter) WriteHeader(int)             {}
func (w *deadlineWriter) SetReadDeadline(t time.Time) error {
	w.deadlines = append(w.deadlines, t)
	return nil
}

// chunks is a body of n bytes read at most size at a time; reset makes it
// whole again.
type chunks struct{ n, size, left int }

func (c *chunks) reset() { c.left = c.n }
func (c *chunks) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.size, c.left)
	c.left -= n
	return n, nil
}
func (c *chunks) Close() error { return nil }

// TestBodyDeadline: the read deadline is BodyGrace after the handler
// began, moved as the body arrives to no earlier than the rule asks (so a
// body at MinBodyRate is never cut) and no more than bodyDeadlineStep
// later, never past the server's ReadTimeout, and set about once a step's
// worth of body, not once a read.
func TestBodyDeadline(t *testing.T) {
	const size, chunk = 4 << 20, 4 << 10
	w := &deadlineWriter{header: http.Header{}}
	body := &chunks{n: size, size: chunk}
	body.reset()
	r, _ := http.NewRequest(http.MethodPost, "/v1/events", nil)
	r.Body, r.ContentLength = body, size
	var readAt []int64 // bytes read when each deadline after the first was set
	before := time.Now()
	g := newBodyGuard(w, r, 60*time.Second)
	after := time.Now()
	buf := make([]byte, 32<<10)
	for read := int64(0); ; {
		set := len(w.deadlines)
		n, err := g.Read(buf)
		read += int64(n)
		if len(w.deadlines) > set {
			readAt = append(readAt, read)
		}
		if err != nil {
			break
		}
	}
	if len(w.deadlines) == 0 {
		t.Fatal("no read deadline set")
	}
	first := w.deadlines[0]
	if first.Before(before.Add(BodyGrace)) || first.After(after.Add(BodyGrace)) {
		t.Fatalf("the first read deadline is %v after the start; want BodyGrace, %v", first.Sub(before), BodyGrace)
	}
	start := first.Add(-BodyGrace)
	last := start.Add(60 * time.Second)
	for i, d := range w.deadlines[1:] {
		rule := start.Add(BodyGrace + time.Duration(float64(readAt[i])/MinBodyRate*float64(time.Second)))
		switch {
		case d.After(last):
			t.Fatalf("deadline %d: %v after the start, past the read timeout", i+1, d.Sub(start))
		case d.Before(rule) && !d.Equal(last):
			t.Fatalf("deadline %d: %v after the start, %d bytes read; the rule asks %v", i+1, d.Sub(start), readAt[i], rule.Sub(start))
		case d.After(rule.Add(bodyDeadlineStep)):
			t.Fatalf("deadline %d: %v after the start, %d bytes read; more than a step past the rule's %v", i+1, d.Sub(start), readAt[i], rule.Sub(start))
		}
	}
	if got := w.deadlines[len(w.deadlines)-1]; !got.Equal(last) {
		t.Errorf("4 MiB read: the last deadline is %v after the start; want the read timeout, 60s", got.Sub(start))
	}
	if most := 2 + int((60*time.Second-BodyGrace)/bodyDeadlineStep); len(w.deadlines) > most {
		t.Errorf("%d deadlines set for %d reads; want at most %d (one a step)", len(w.deadlines), size/len(buf), most)
	}
}

// TestBodyGuardCost: a request with a body costs the guard one allocation
// (none without a body), and no goroutine or timer of its own.
func TestBodyGuardCost(t *testing.T) {
	hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}), slog.New(slog.DiscardHandler), ConnLimits{Max: 1})
	w := &deadlineWriter{header: http.Header{}, deadlines: make([]time.Time, 0, 1024)}
	body := &chunks{n: 64 << 10, size: 8 << 10}
	r, _ := http.NewRequest(http.MethodPost, "/v1/events", nil)
	r.ContentLength = int64(body.n)
	with := testing.AllocsPerRun(100, func() {
		body.reset()
		r.Body = body
		w.deadlines = w.deadlines[:0]
		hs.serveHTTP(w, r)
	})
	r.Body, r.ContentLength = http.NoBody, 0
	without := testing.AllocsPerRun(100, func() { hs.serveHTTP(w, r) })
	if with != 1 || without != 0 {
		t.Errorf("allocations a request: %v with a body, %v without; want 1 and 0", with, without)
	}
}

// TestAnswerBeforeTheBodyClosesAtOnce: over HTTP/1.1, an answer written
// before the request's body was read to its end (a Content-Length body or
// a chunked one, that never comes) says Connection: close and the
// connection is closed at once; an answer after the whole body keeps the
// connection.
func TestAnswerBeforeTheBodyClosesAtOnce(t *testing.T) {
	hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		w.WriteHeader(http.StatusUnauthorized)
	}), slog.New(slog.DiscardHandler), ConnLimits{Max: 4})
	addr := serve(t, hs)
	for _, head := range []string{
		"POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
		"POST /refuse HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n",
		"GET /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n",
	} {
		c := dialFrom(t, "127.0.0.1", addr)
		began := time.Now()
		resp, err := c.send(head)
		if err != nil || resp.StatusCode != http.StatusUnauthorized || !resp.Close || !c.closed() || time.Since(began) > 2*time.Second {
			t.Fatalf("%.40q: %v, %v after %v; want 401 with Connection: close, closed at once", head, resp, err, time.Since(began))
		}
	}
	c := dialFrom(t, "127.0.0.1", addr)
	for range 2 {
		resp, err := c.send("POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
		if err != nil || resp.StatusCode != http.StatusUnauthorized || resp.Close {
			t.Fatalf("an answer after the whole body: %v, %v; want the connection kept", resp, err)
		}
	}
}

// TestSlowBodyOverHTTP2: over HTTP/2 the rule holds for the stream: a body
// that does not come fails to read BodyGrace after the handler began (the
// stream's read deadline), the answer reaches the client, and the
// connection, not closed, serves the next request.
func TestSlowBodyOverHTTP2(t *testing.T) {
	cert := certtest.New(t, "h2")
	certFile, keyFile := cert.Write(t, t.TempDir())
	pair, err := certfile.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			_, err := io.Copy(io.Discard, r.Body)
			failed <- err
			bodyReadFailed(w, err, "could not read the body")
		}
	}), slog.New(slog.DiscardHandler), ConnLimits{Max: 4})
	hs.TLSConfig = pair.TLSConfig()
	addr := serve(t, hs)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, "https://"+addr+"/v1/events", pr)
	req.ContentLength = 100000
	began := time.Now()
	resp, err := (&http.Client{Transport: tr, Timeout: BodyGrace + 5*time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	took := time.Since(began)
	if err := <-failed; !errors.Is(err, os.ErrDeadlineExceeded) || resp.StatusCode != http.StatusRequestTimeout || resp.ProtoMajor != 2 ||
		took < BodyGrace || took > BodyGrace+3*time.Second {
		t.Fatalf("a body that does not come over HTTP/2: read %v, answer %s over %s after %v; want the deadline, 408, after %v", err, resp.Status, resp.Proto, took, BodyGrace)
	}
	reused := false
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, _ = http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, "https://"+addr+"/healthz", nil)
	if resp, err = (&http.Client{Transport: tr}).Do(req); err != nil || resp.StatusCode != http.StatusOK || !reused {
		t.Fatalf("the next request: %v, %v, on the same connection %v", resp, err, reused)
	}
	resp.Body.Close()
}
