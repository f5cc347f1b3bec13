package sourcing

import (
	"context"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/source"
)

// TestAMQPOpenBoundedBySilentBroker: an AMQP source whose broker accepts
// the connection and never answers the protocol header (or stalls in the
// handshake) fails its connection when the open's deadline passes, so the
// consumer reports the error and tries again, instead of waiting forever
// with nothing reported.
func TestAMQPOpenBoundedBySilentBroker(t *testing.T) {
	c := &consumer{svc: &Service{cfg: Config{MaxInFlight: 10, Destinations: destination.Guard{Policy: destination.Policy{AllowPrivate: true}}}},
		src: source.Source{ID: "src_amqp", Type: source.TypeAMQP, Config: source.Config{
			Conn: broker.Settings{URL: "amqp://guest:guest@" + brokertest.Silent(t) + "/"}, Queue: "orders"}}}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		r, err := openAMQP(ctx, c)
		if err == nil {
			r.close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a silent broker: opened")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a silent broker: the open still waits 10s after its 200ms deadline")
	}
}
