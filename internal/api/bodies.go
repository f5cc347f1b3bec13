package api

import (
	"io"
	"net/http"
	"time"
)

// A request's body must keep arriving: BodyGrace after the handler began
// (just after the header was read), and from then on at MinBodyRate on
// average, or reading it fails (os.ErrDeadlineExceeded: the handler
// answers 408, see bodyReadFailed) and the connection is closed. Whatever
// the rate, the whole request must have been read within the server's
// ReadTimeout (60 s).
const (
	BodyGrace   = 5 * time.Second
	MinBodyRate = 16 << 10 // bytes a second
	// bodyDeadlineStep is how much later than the rule asks the read
	// deadline is set each time it moves, so that it moves at most once a
	// step while the body arrives at the rate.
	bodyDeadlineStep = time.Second
)

// aLongTimeAgo is a read deadline that has passed: a read fails at once.
var aLongTimeAgo = time.Unix(1, 0)

// serveHTTP serves r with the API's handler, or with overCap on a reserve
// connection for anything but a probe (see ReserveConns), guarding a body
// when r has one (bodyGuard).
func (s *HTTPServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.h
	if onReserve(r) {
		// One request a reserve connection: a GOAWAY over HTTP/2, where
		// the header itself is not sent.
		w.Header().Set("Connection", "close")
		if !isProbe(r) {
			h = http.HandlerFunc(overCap)
		}
	}
	if r.Body == http.NoBody || r.ContentLength == 0 {
		h.ServeHTTP(w, r)
		return
	}
	g := newBodyGuard(w, r, s.ReadTimeout)
	r.Body = g
	h.ServeHTTP(g, r)
	g.finish()
}

// isProbe reports whether r is a liveness or readiness probe, which a
// reserve connection serves.
func isProbe(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}

// overCap answers a request that came on a reserve connection and is not a
// probe: 503 with Retry-After.
func overCap(w http.ResponseWriter, _ *http.Request) {
	unavailable(w, "every connection this server holds (its --max-connections) is busy, and over them it answers only GET /healthz and /readyz; retry after Retry-After seconds")
}

// readDeadliner is net/http's ResponseWriter (HTTP/1.x and HTTP/2 alike),
// whose read deadline is the request's.
type readDeadliner interface {
	SetReadDeadline(time.Time) error
}

// bodyGuard is a request's body and the writer of its answer, for the two
// rules a body keeps (one allocation a request with a body; none without):
//
//   - It must keep arriving: the read deadline is BodyGrace after the
//     handler began, and moves later as the body arrives, by a second for
//     each MinBodyRate bytes (no timer or goroutine of its own: the
//     connection's read deadline, or the HTTP/2 stream's).
//   - An answer written before the body was read to its end closes an
//     HTTP/1.x connection at once: Connection: close, and the rest of the
//     body is not read. Without it net/http reads up to 256 KiB of the
//     unread body before it writes the answer, so that the connection may
//     serve another request, and a client that declares a body and sends
//     none holds the connection for the whole ReadTimeout. HTTP/2 needs
//     neither (a Connection: close there would close the connection with
//     every other stream on it): the stream is reset once answered
//     (RST_STREAM NO_ERROR), and the connection serves on.
type bodyGuard struct {
	http.ResponseWriter
	body io.ReadCloser
	dl   readDeadliner // nil when the writer has none (tests' recorders)

	start    time.Time // the handler began
	deadline time.Time // the read deadline set
	last     time.Time // the latest it may be: start + ReadTimeout (zero: none)
	read     int64

	eof      bool // the body was read to its end
	answered bool // the answer's header is written, or about to be
	closing  bool // answered before eof
	http1    bool
}

func newBodyGuard(w http.ResponseWriter, r *http.Request, readTimeout time.Duration) *bodyGuard {
	g := &bodyGuard{ResponseWriter: w, body: r.Body, http1: r.ProtoMajor == 1}
	g.dl, _ = w.(readDeadliner)
	if g.dl == nil {
		return g
	}
	g.start = time.Now()
	g.deadline = g.start.Add(BodyGrace)
	if readTimeout > 0 {
		g.last = g.start.Add(readTimeout)
		if g.deadline.After(g.last) {
			g.deadline = g.last
		}
	}
	_ = g.dl.SetReadDeadline(g.deadline)
	return g
}

func (g *bodyGuard) Read(p []byte) (int, error) {
	n, err := g.body.Read(p)
	g.read += int64(n)
	switch {
	case err == io.EOF:
		// net/http clears an HTTP/1.x connection's read deadline at the
		// end of the body; an HTTP/2 stream's ending later changes nothing.
		g.eof = true
	case err == nil && n > 0 && g.dl != nil:
		g.extend()
	}
	return n, err
}

// extend moves the read deadline later when what has arrived earns it:
// to BodyGrace and a second per MinBodyRate bytes after the start, and a
// step more, no later than last.
func (g *bodyGuard) extend() {
	earned := g.start.Add(BodyGrace + time.Duration(float64(g.read)/MinBodyRate*float64(time.Second)))
	if !earned.After(g.deadline) {
		return
	}
	next := earned.Add(bodyDeadlineStep)
	if !g.last.IsZero() && next.After(g.last) {
		next = g.last
	}
	if !next.After(g.deadline) {
		return
	}
	g.deadline = next
	_ = g.dl.SetReadDeadline(next)
}

// Close closes a body read to its end; one that is not is left to
// net/http, which finish makes close it without reading it.
func (g *bodyGuard) Close() error {
	if g.eof {
		return g.body.Close()
	}
	return nil
}

func (g *bodyGuard) WriteHeader(code int) {
	if code >= 200 {
		g.answer()
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *bodyGuard) Write(p []byte) (int, error) {
	g.answer()
	return g.ResponseWriter.Write(p)
}

// FlushError writes the header as WriteHeader does (http.ResponseController
// calls it).
func (g *bodyGuard) FlushError() error {
	g.answer()
	return http.NewResponseController(g.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (g *bodyGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// answer notes the answer begun: before the end of the body, an HTTP/1.x
// answer says Connection: close.
func (g *bodyGuard) answer() {
	if g.answered {
		return
	}
	g.answered = true
	if !g.eof {
		g.closing = true
		if g.http1 {
			g.ResponseWriter.Header().Set("Connection", "close")
		}
	}
}

// finish ends the request after its handler: an answer net/http writes
// for a handler that wrote none follows the same rule, and an HTTP/1.x
// connection answered before the end of its body is closed at once: net/
// http reads what is left of the body up to 256 KiB before it closes it,
// and a read deadline that has passed makes it give up without waiting.
func (g *bodyGuard) finish() {
	g.answer()
	if g.closing && g.http1 && g.dl != nil {
		_ = g.dl.SetReadDeadline(aLongTimeAgo)
	}
}
