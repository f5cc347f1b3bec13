package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/queue"
	"github.com/herald-events/herald/internal/server"
)

// TestLongestReceiveWaitAnswers: a receive with max_wait "60s", the
// longest the API takes, answers 200 with its (empty) list through the
// HTTP server herald serve runs, with its real timeouts, although its
// client sent the body a second after the header (net/http starts the
// request's read and write timeouts when it has read the header). It runs
// the whole server in a testing/synctest bubble, where time.Now and the
// timers, those of net/http's deadlines on the in-memory connections
// included, are the bubble's: the minute passes at once, and the order of
// what happens in it is exactly as on a real clock. Before the receive
// moved its write deadline, the server's 60 s WriteTimeout cut the answer:
// the client read nothing (unexpected EOF).
//
// SQLite only: PostgreSQL's connections are real sockets, on which a
// bubble's goroutines never count as idle, so its time would not move.
func TestLongestReceiveWaitAnswers(t *testing.T) {
	if os.Getenv("HERALD_TEST_STORE") == "postgres" {
		t.Skip("the bubble's time cannot move while a goroutine reads a real socket (PostgreSQL's LISTEN)")
	}
	synctest.Test(t, func(t *testing.T) {
		logs := &logBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the server's log:\n%s", logs)
			}
		})
		srv, err := server.New(context.Background(), server.Config{
			DataDir: t.TempDir(), Clock: clock.Real{}, Version: "test", Auth: server.AuthOff,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		hs := api.NewHTTPServer(srv.Handler(), srv.API.Logger, api.ConnLimits{Max: server.DefaultConfig().MaxConnections})
		ln := newPipeListener()
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()
		defer func() {
			srv.StopWaiting()
			if err := hs.Shutdown(context.Background()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			<-served
			if err := srv.Close(context.Background()); err != nil {
				t.Errorf("close: %v", err)
			}
		}()

		sub := exchange(t, ln, "POST", "/v1/subscriptions", `{"name": "p", "delivery_mode": "pull"}`, 0)
		if sub.status != http.StatusCreated {
			t.Fatalf("create: %d %s", sub.status, sub.body)
		}
		var created struct{ ID string }
		if err := json.Unmarshal([]byte(sub.body), &created); err != nil {
			t.Fatal(err)
		}

		begin := time.Now()
		wait := fmt.Sprintf(`{"max_wait": "%ds"}`, int(queue.MaxWait/time.Second))
		got := exchange(t, ln, "POST", "/v1/subscriptions/"+created.ID+"/receive", wait, time.Second)
		if got.err != nil {
			t.Fatalf("receive with max_wait %s: no answer after %v: %v", queue.MaxWait, time.Since(begin), got.err)
		}
		if got.status != http.StatusOK || strings.TrimSpace(got.body) != `{"data":[]}` {
			t.Fatalf("receive with max_wait %s: %d %s, want 200 {\"data\":[]}", queue.MaxWait, got.status, got.body)
		}
		if d := time.Since(begin); d != queue.MaxWait+time.Second {
			t.Errorf("the receive answered after %v, want the second its body took and max_wait, %v", d, queue.MaxWait+time.Second)
		}
	})
}

// answer is what exchange read.
type answer struct {
	status int
	body   string
	err    error // the connection failed before a whole answer
}

// exchange sends one request with a JSON body on a new connection to ln,
// the body bodyAfter after the header, and reads the answer.
func exchange(t *testing.T, ln *pipeListener, method, path, body string, bodyAfter time.Duration) answer {
	t.Helper()
	c, err := ln.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: herald\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, len(body))
		time.Sleep(bodyAfter)
		io.WriteString(c, body)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(raw), err: err}
}

// pipeListener is a net.Listener of in-memory connections (net.Pipe),
// whose deadlines run on the timers of the goroutine's bubble.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client's end of a new connection.
func (l *pipeListener) dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
