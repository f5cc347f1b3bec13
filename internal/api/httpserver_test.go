package api

import (
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestNetHTTPAnswer checks which writes to a connection are taken for
// net/http's own refusals: exactly those, never a handler's answer (or a
// piece of one).
func TestNetHTTPAnswer(t *testing.T) {
	const hdr = netHTTPErrorHeader
	cases := []struct {
		write  string
		status int // 0: passed through unchanged
		detail string
	}{
		{"HTTP/1.1 400 Bad Request: missing required Host header" + hdr + "400 Bad Request: missing required Host header", 400, "missing required Host header"},
		{"HTTP/1.1 400 Bad Request" + hdr + "400 Bad Request", 400, "the request is not well-formed HTTP/1.1"},
		{"HTTP/1.1 431 Request Header Fields Too Large" + hdr + "431 Request Header Fields Too Large", 431, "the request's header is larger than 64 KiB"},
		{"HTTP/1.1 501 Not Implemented" + hdr + "Unsupported transfer encoding", 501, "Unsupported transfer encoding"},
		{"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: Mon, 05 Jan 2026 09:00:00 GMT\r\nContent-Length: 0\r\n\r\n", 417, "Expect must be 100-continue or absent"},
		// Handlers' answers: their header is sorted and has a Date.
		{"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: application/problem+json\r\nDate: Mon, 05 Jan 2026 09:00:00 GMT\r\n\r\n{}", 0, ""},
		{"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nDate: Mon, 05 Jan 2026 09:00:00 GMT\r\nContent-Length: 6\r\n\r\nfailed", 0, ""},
		{"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nDate: Mon, 05 Jan 2026 09:00:00 GMT\r\n\r\n", 0, ""},
		{"HTTP/1.1 200 OK" + hdr + "fine", 0, ""},
		{"HTTP/1.1 4", 0, ""},
		{"HTTP/1.1 4\r\n\r\n", 0, ""},
		{"HTTP/1.1 4xx" + hdr, 0, ""},
		{`{"data": [], "next_cursor": ""}`, 0, ""},
		{"", 0, ""},
	}
	for _, c := range cases {
		status, detail, ok := netHTTPAnswer([]byte(c.write))
		if ok != (c.status != 0) || status != c.status || detail != c.detail {
			t.Errorf("%.60q: %v %d %q, want %d %q", c.write, ok, status, detail, c.status, c.detail)
		}
	}
}

// failingListener's Accept fails with err.
type failingListener struct {
	net.Listener
	err error
}

func (l failingListener) Accept() (net.Conn, error) { return nil, l.err }

// TestAcceptErrorPassesUnchanged: an accept that fails because the process
// is out of file descriptors reaches net/http as the listener said it, a
// temporary net.Error (by type assertion, as http.Server.Serve checks it),
// so Serve backs off (5 ms, doubling to 1 s) instead of spinning.
func TestAcceptErrorPassesUnchanged(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	ln := &limitListener{Listener: problemListener{failingListener{err: emfile}, nil}, l: newConnLimiter(ConnLimits{Max: 1}, slog.New(slog.DiscardHandler)), done: make(chan struct{})}
	_, err := ln.Accept()
	if ne, ok := err.(net.Error); !ok || !ne.Temporary() || err != error(emfile) {
		t.Fatalf("Accept: %#v, want the listener's temporary error itself", err)
	}
}
