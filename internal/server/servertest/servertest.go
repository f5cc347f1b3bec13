// Package servertest starts a real Herald server for the tests of the
// packages that call its API from outside (the Go client, the CLI): the
// server on its store, its API on an httptest server on 127.0.0.1, both
// stopped when the test ends.
package servertest

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// closeTimeout bounds the server's Close when the test ends.
const closeTimeout = 10 * time.Second

// Start starts a server with cfg and returns its API's base URL. An empty
// cfg.DataDir is a temporary directory; an empty cfg.Store is the embedded
// store there, or a fresh PostgreSQL schema (pgtest.SchemaURL) when
// HERALD_TEST_STORE=postgres. cfg.Version defaults to "test".
func Start(t testing.TB, cfg server.Config) string {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Store == "" && os.Getenv("HERALD_TEST_STORE") == "postgres" {
		cfg.Store = pgtest.SchemaURL(t)
	}
	if cfg.Version == "" {
		cfg.Version = "test"
	}
	srv, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Serve(t, srv).URL
}

// Serve starts srv and serves its API on 127.0.0.1 until the test ends;
// then it stops the API and closes srv (within closeTimeout), failing the
// test if the close fails.
func Serve(t testing.TB, srv *server.Server) *httptest.Server {
	t.Helper()
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.StopWaiting() // a waiting receive would hold api.Close
		api.Close()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return api
}
