package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// TestUnavailableWhileStopped stops a PostgreSQL of the test's own under a
// store, fast (sessions ended with 57P01) and immediately (connections
// cut): every kind of call, a group-committed Publish, a read, a snapshot
// list, a count and Ping, answers store.ErrUnavailable; once the server is
// back the same store (no reopening) writes and reads again, and what was
// committed before the stop is there.
func TestUnavailableWhileStopped(t *testing.T) {
	srv := pgtest.OwnServer(t)
	s := openAt(t, srv.URL(), Options{})
	ctx := context.Background()
	for round, mode := range []string{"fast", "immediate"} {
		before := fmt.Sprintf("before-%d", round)
		if _, err := s.Publish(ctx, []store.NewEvent{newEvent(before)}, store.PublishOptions{}); err != nil {
			t.Fatal(err)
		}
		srv.Stop(mode)
		calls := map[string]func() error{
			"Publish": func() error {
				_, err := s.Publish(ctx, []store.NewEvent{newEvent("while-away")}, store.PublishOptions{})
				return err
			},
			"GetAccount":        func() error { _, err := s.GetAccount(ctx, "acc_default"); return err },
			"ListSubscriptions": func() error { _, _, err := s.ListSubscriptions(ctx, "", store.Page{Limit: 10}); return err },
			"CountQueued":       func() error { _, err := s.CountQueued(ctx); return err },
			"Ping":              func() error { return s.Ping(ctx) },
		}
		for name, call := range calls {
			// Twice: the first call may meet a pooled connection the
			// server ended, the second must dial.
			for try := range 2 {
				if err := call(); !errors.Is(err, store.ErrUnavailable) {
					t.Errorf("%s stop, %s (call %d): %v, want store.ErrUnavailable", mode, name, try+1, err)
				}
			}
		}
		srv.Start()
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("after the %s stop, Ping: %v", mode, err)
		}
		res, err := s.Publish(ctx, []store.NewEvent{newEvent(before), newEvent(fmt.Sprintf("after-%d", round))}, store.PublishOptions{})
		if err != nil {
			t.Fatalf("after the %s stop, Publish: %v", mode, err)
		}
		if !res[0].Duplicate || res[1].Duplicate {
			t.Fatalf("after the %s stop: the event published before is not kept, or the new one is a duplicate: %+v", mode, res)
		}
	}
}

// newEvent is an event of the default account with no deliveries.
func newEvent(id string) store.NewEvent {
	return store.NewEvent{ID: id, Source: "/unavailable-test", Type: "t", Payload: []byte(`{}`), PublishedAt: time.UnixMilli(1_700_000_000_000)}
}

// The errors of a server away are classified, and others are not.
func TestIsUnavailable(t *testing.T) {
	away := []error{
		&pgconn.PgError{Code: "57P01"}, &pgconn.PgError{Code: "57P03"}, &pgconn.PgError{Code: "53300"},
		&pgconn.PgError{Code: "53100"}, &pgconn.PgError{Code: "08006"}, &pgconn.PgError{Code: "25006"},
		fmt.Errorf("begin: %w", io.EOF), io.ErrUnexpectedEOF, pgconn.ErrConnClosed,
		&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, fmt.Errorf("x: %w", syscall.ECONNRESET),
	}
	for _, err := range away {
		if !errors.Is(unavailable(err), store.ErrUnavailable) {
			t.Errorf("%#v: not classified unavailable", err)
		}
	}
	others := []error{nil, &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "40001"}, &pgconn.PgError{Code: "57014"},
		context.Canceled, store.ErrNotFound, errors.New("x")}
	for _, err := range others {
		if errors.Is(unavailable(err), store.ErrUnavailable) {
			t.Errorf("%#v: classified unavailable", err)
		}
	}
}

// A URL without connect_timeout gets DefaultConnectTimeout (an
// unreachable server then fails a call within seconds); one with it keeps
// its own.
func TestPoolConfigConnectTimeout(t *testing.T) {
	for url, want := range map[string]time.Duration{
		"postgres://h@127.0.0.1/h":                   DefaultConnectTimeout,
		"postgres://h@127.0.0.1/h?connect_timeout=2": 2 * time.Second,
		"host=127.0.0.1 user=h connect_timeout=30":   30 * time.Second,
	} {
		cfg, err := poolConfig(url, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.ConnConfig.ConnectTimeout; got != want {
			t.Errorf("%s: connect timeout %v, want %v", url, got, want)
		}
	}
}
