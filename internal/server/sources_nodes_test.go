package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/sourcing"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// TestSourceLeaseTakenOver: two nodes on one PostgreSQL database, a 2 s
// source lease renewed every 200 ms: one node runs the NATS source's
// consumer, the other does not; once the first stops (its lease is not
// released: as a node that died), the other takes the source over after
// the lease ran out, and every message arrives once.
func TestSourceLeaseTakenOver(t *testing.T) {
	dbURL := pgtest.SchemaURL(t)
	node := func(name string) (*bundle, *sourcing.TestSignals) {
		sig := &sourcing.TestSignals{}
		sig.Started.Init(t)
		sig.Connected.Init(t)
		sig.Stopped.Init(t)
		return setup(t, func(c *server.Config) {
			c.Clock, c.Store, c.SourceTestSignals = clock.Real{}, dbURL, sig
			c.Scheduling.Owner = name
			c.SourcePeriod, c.SourceTerm = 200*time.Millisecond, 2*time.Second
		}), sig
	}
	a, sigA := node("node-a")
	st := newJSStream(t)
	rc := newReceiver(t, status(200))
	a.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	var src sourceRes
	if code, raw := a.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": natsURL, "stream": st.name,
		"subject": st.subject + ".>", "format": "raw", "wrap": map[string]any{"type": "t", "source": "/s"}}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	sigA.Started.WaitOrTimeout()
	_, sigB := node("node-b")
	for i := range 5 {
		st.publish(t, "o", &nats.Msg{Data: fmt.Appendf(nil, `{"n": %d}`, i)})
	}
	eventually(t, "the first five delivered", func() bool { return rc.count() >= 5 })
	select {
	case id := <-sigB.Started.C():
		t.Fatalf("node b started source %s's consumer while node a held its lease", id)
	default:
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.srv.StopWaiting()
	if err := a.srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 10; i++ {
		st.publish(t, "o", &nats.Msg{Data: fmt.Appendf(nil, `{"n": %d}`, i)})
	}
	if got := sigB.Started.WaitOrTimeout(); got != src.ID {
		t.Fatalf("node b started %s; want %s", got, src.ID)
	}
	eventually(t, "the next five delivered by node b", func() bool { return rc.count() >= 10 })
	if got := eventIDs(t, rc); len(got) != 10 || rc.count() != 10 {
		t.Fatalf("delivered %d requests of %d events; want 10 once each", rc.count(), len(got))
	}
}
