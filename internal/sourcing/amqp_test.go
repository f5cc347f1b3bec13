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

// TestAMQPReaderBrokerReadsNothing: once its broker stops reading the
// connection (its heartbeats still coming), an AMQP source's lag query
// and its close end within their bounds (amqp091-go waits for the
// broker's answers without a timeout): the consumer is never stuck.
func TestAMQPReaderBrokerReadsNothing(t *testing.T) {
	ch := brokertest.AMQPChannel(t)
	q, err := ch.QueueDeclare("", false, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, deafen := brokertest.DeafAMQPProxy(t)
	c := &consumer{svc: &Service{cfg: Config{MaxInFlight: 10, Destinations: destination.Guard{Policy: destination.Policy{AllowPrivate: true}}}},
		src: source.Source{ID: "src_amqp", Type: source.TypeAMQP, Config: source.Config{
			Conn: broker.Settings{URL: "amqp://guest:guest@" + addr + "/"}, Queue: q.Name}}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r, err := openAMQP(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.lag(); n != 0 {
		t.Fatalf("lag %d, want 0", n)
	}
	deafen()
	done := make(chan struct{})
	go func() { r.lag(); r.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2*broker.WriteTimeout + 10*time.Second):
		t.Fatal("the lag query and close still wait")
	}
}
