// Package client_test holds the Go client's tests that need a real Herald:
// round trips of every service against internal/server (servertest.Start:
// the embedded store, or PostgreSQL with HERALD_TEST_STORE=postgres) and
// the package's walk-through example. They are in the main module because
// the client is a module of its own (client/go.mod) that must not require
// the server; the client's own tests (client/) need no server.
package client_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/client"
	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/server/servertest"
)

// adminKey is the admin key of the server startServer starts.
const adminKey = "client-test-admin-key-0123456789"

// startServer starts a Herald server (servertest.Start), its API on
// 127.0.0.1, with adminKey and pushes allowed to loopback receivers, and
// returns its base URL.
func startServer(t *testing.T) string {
	t.Helper()
	return servertest.Start(t, server.Config{AdminKey: adminKey,
		Attempting: attempting.Config{Destinations: destination.Policy{AllowPrivate: true}}})
}

// newClient returns a client of base with key and opts, failing the test
// on an error.
func newClient(t *testing.T, base, key string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(base, append([]client.Option{client.WithKey(key)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// receiver is a loopback endpoint answering /ok with 204 and anything else
// with 500, counting the requests.
type receiver struct {
	*httptest.Server
	hits atomic.Int64
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		if req.URL.Path == "/ok" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(r.Close)
	return r
}

// stallBound is how long eventually waits for its condition.
const stallBound = 60 * time.Second

// eventually checks cond every few milliseconds until it holds, failing
// the test after stallBound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for start := time.Now(); !cond(); <-tick.C {
		if time.Since(start) > stallBound {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// check fails the test when err is not nil.
func check(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
