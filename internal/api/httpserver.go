package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxHeaderBytes bounds a request's header (net/http allows 4 KiB more for
// the request line and its own slack); above it the answer is 431.
const maxHeaderBytes = 64 << 10

// HTTPServer is the HTTP server the API runs on, with its timeouts and
// limits: herald serve runs it, and the tests of the real server build it
// the same way. Use its Serve: it caps the connections it holds open, and
// makes the answers net/http writes itself, before any handler runs,
// problem documents too.
type HTTPServer struct {
	*http.Server
	log   *slog.Logger
	conns *connLimiter
	h     http.Handler
}

// IdleTimeout is how long a keep-alive connection may stay open between
// requests: an idle connection holds a file descriptor and a place under
// the connection cap.
const IdleTimeout = 30 * time.Second

// WriteTimeout is how long the server has to write an answer, from the
// end of the request's header: past it, the answer cannot reach the client
// (a publish stops before it: PublishTimeout).
const WriteTimeout = 60 * time.Second

// NewHTTPServer returns the server for h (the API's Handler), logging to
// log (the API's logger: net/http's own error log, one line per request
// net/http refused, and the coalesced warn lines of the connection caps),
// holding at most lim.Max (at least 1) connections open at once that serve
// any request, and at most lim.PerClient of one client address: at the
// cap, a new connection closes the oldest idle one (accepted with no
// request yet, or between keep-alive requests), or is a reserve
// connection, which answers the probes alone (ReserveConns; see
// connLimiter). Its timeouts: 10 s to read a request's header, 60 s to
// read the whole request and 60 s to write the answer (both from the end
// of the header; a receive's long poll moves its write deadline by its
// wait: see extendWriteDeadline), IdleTimeout between requests. A body
// must keep arriving (BodyGrace, MinBodyRate), and an answer written
// before the body was read closes the connection (see bodyGuard).
func NewHTTPServer(h http.Handler, log *slog.Logger, lim ConnLimits) *HTTPServer {
	if lim.Max < 1 {
		panic("api.NewHTTPServer: lim.Max must be at least 1")
	}
	conns := newConnLimiter(lim, log)
	s := &HTTPServer{
		Server: &http.Server{
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			WriteTimeout:      WriteTimeout,
			IdleTimeout:       IdleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ConnState:         conns.connState,
			ConnContext:       connContext,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		log:   log,
		conns: conns,
		h:     h,
	}
	s.Handler = http.HandlerFunc(s.serveHTTP)
	return s
}

// Conns returns how many connections the server holds open (the reserve's
// not counted), how many of them serve no request (idle), and whether a
// new one waits for room under its cap (for tests).
func (s *HTTPServer) Conns() (open, idle int, waiting bool) { return s.conns.state() }

// ReserveConns returns how many reserve connections are open (for tests).
func (s *HTTPServer) ReserveConns() int { return s.conns.reserve() }

// Serve serves HTTP on ln until Shutdown or Close; HTTPS (HTTP/2 and
// HTTP/1.1) when TLSConfig is set, with its certificates (GetCertificate:
// see internal/certfile). Over TLS the answers net/http writes itself
// before any handler runs stay its text/plain ones: problemListener reads
// the connection's bytes, which TLS encrypts.
func (s *HTTPServer) Serve(ln net.Listener) error {
	if s.TLSConfig != nil {
		return s.Server.ServeTLS(&limitListener{Listener: ln, l: s.conns, done: make(chan struct{})}, "", "")
	}
	return s.Server.Serve(&limitListener{Listener: problemListener{ln, s.log}, l: s.conns, done: make(chan struct{})})
}

// problemListener's connections turn the answers net/http writes on its own
// into problem documents. It refuses some requests before any handler runs
// (a malformed request line or header, a missing Host, an unknown
// Transfer-Encoding or HTTP version, a header over MaxHeaderBytes, an
// Expect other than 100-continue) and writes a text/plain answer straight
// to the connection. Those writes have shapes no handler's answer has,
// which is how they are recognized (see netHTTPAnswer).
type problemListener struct {
	net.Listener
	log *slog.Logger
}

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &problemConn{Conn: c, log: l.log}, nil
}

type problemConn struct {
	net.Conn
	log *slog.Logger
}

func (c *problemConn) Write(p []byte) (int, error) {
	status, detail, ok := netHTTPAnswer(p)
	if !ok {
		return c.Conn.Write(p)
	}
	body, _ := json.Marshal(netHTTPProblem(status, detail))
	body = append(body, '\n')
	out := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	// At debug whatever the status (a 501 or 505 too): the client sent
	// what HTTP refuses; Herald did not fail.
	c.log.Debug("request", "status", status, "bytes", len(body), "remote", c.RemoteAddr().String(), "refused", detail)
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close the connection after a 431, as it
// does on a bare TCP connection, so the client reads the answer.
func (c *problemConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// netHTTPErrorHeader follows the status line of every answer net/http
// writes itself with fmt.Fprintf, in one Write. No handler's answer has it:
// net/http writes a handler's header sorted, with Connection before
// Content-Type, and always a Date.
const netHTTPErrorHeader = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// netHTTPAnswer reports whether p is an answer net/http wrote on its own
// (no handler answers 417), with its status and what it says.
func netHTTPAnswer(p []byte) (status int, detail string, ok bool) {
	const proto = "HTTP/1.1 "
	if len(p) < len(proto)+4 || !bytes.HasPrefix(p, []byte(proto)) || p[len(proto)] < '4' {
		return 0, "", false
	}
	line, rest, _ := bytes.Cut(p[len(proto):], []byte("\r\n"))
	if len(line) < 3 {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(line[:3]))
	if err != nil || status < 400 {
		return 0, "", false
	}
	if status == http.StatusExpectationFailed && bytes.HasSuffix(rest, []byte("\r\n\r\n")) {
		return status, "Expect must be 100-continue or absent", true
	}
	text, found := bytes.CutPrefix(p[len(proto)+len(line):], []byte(netHTTPErrorHeader))
	if !found {
		return 0, "", false
	}
	// text is "400 Bad Request", "400 Bad Request: missing required Host
	// header", or a sentence ("Unsupported transfer encoding").
	detail = strings.TrimPrefix(string(text), strconv.Itoa(status)+" "+http.StatusText(status))
	detail = strings.TrimPrefix(detail, ": ")
	switch {
	case detail != "":
	case status == http.StatusRequestHeaderFieldsTooLarge:
		detail = fmt.Sprintf("the request's header is larger than %d KiB", maxHeaderBytes>>10)
	default:
		detail = "the request is not well-formed HTTP/1.1"
	}
	return status, detail, true
}

// netHTTPProblem is the problem document for an answer net/http wrote.
func netHTTPProblem(status int, detail string) Problem {
	title := strings.Replace(strings.ToLower(http.StatusText(status)), "http", "HTTP", 1)
	p := Problem{Type: probMalformed, Title: strings.ToUpper(title[:1]) + title[1:], Status: status, Detail: detail}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		p.Type = probHeaderTooLarge
	}
	return p
}
