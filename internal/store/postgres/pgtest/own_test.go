package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A server of the test's own answers, refuses connections once stopped,
// and answers again once started, on the same port and data.
func TestOwnServerStopStart(t *testing.T) {
	s := OwnServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec(s.URL(), "CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	s.Stop("immediate")
	if conn, err := pgx.Connect(ctx, s.URL()); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	s.Start()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT n FROM kept").Scan(&n); err != nil || n != 7 {
		t.Fatalf("after a restart: %d, %v", n, err)
	}
}
