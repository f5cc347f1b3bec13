package sourcing

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/source"
)

// resumingBroker is an MQTT 5 server of one connection on loopback: it
// answers the CONNECT with a resumed session and at once sends n QoS 1
// messages — more than the client's receive maximum, as Mosquitto 2.0 does
// when a session resumes after its consumer died holding messages — then
// answers the SUBSCRIBE and passes on the id of each PUBACK.
func resumingBroker(t *testing.T, n int) (addr string, acks <-chan uint16) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan uint16, n)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		go func() { <-t.Context().Done(); conn.Close() }()
		if _, err := packets.ReadPacket(conn); err != nil { // CONNECT
			return
		}
		if _, err := (&packets.Connack{SessionPresent: true, Properties: &packets.Properties{}}).WriteTo(conn); err != nil {
			return
		}
		for i := 1; i <= n; i++ {
			p := &packets.Publish{QoS: 1, PacketID: uint16(i), Topic: "orders/a", Payload: fmt.Appendf(nil, `{"n": %d}`, i), Properties: &packets.Properties{}}
			if _, err := p.WriteTo(conn); err != nil {
				return
			}
		}
		for {
			cp, err := packets.ReadPacket(conn)
			if err != nil {
				return
			}
			switch p := cp.Content.(type) {
			case *packets.Subscribe:
				if _, err := (&packets.Suback{PacketID: p.PacketID, Reasons: []byte{1}, Properties: &packets.Properties{}}).WriteTo(conn); err != nil {
					return
				}
			case *packets.Puback:
				ch <- p.PacketID
			}
		}
	}()
	return ln.Addr().String(), ch
}

// TestMQTTResumedSessionBeyondReceiveMaximum: when a resumed session's
// broker sends more messages than the receive maximum before it answers
// the SUBSCRIBE, the connection still opens (the SUBACK is not waited for
// behind messages only next can take), and every message comes out of
// next and is acknowledged.
func TestMQTTResumedSessionBeyondReceiveMaximum(t *testing.T) {
	const max, n = 4, 20
	addr, acks := resumingBroker(t, n)
	c := &consumer{svc: &Service{cfg: Config{MaxInFlight: max, Destinations: destination.Guard{Policy: destination.Policy{AllowPrivate: true}}}},
		src: source.Source{ID: "src_resumed", Type: source.TypeMQTT, Config: source.Config{Conn: broker.Settings{URL: "mqtt://" + addr}, Topic: "orders/#"}}}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r, err := openMQTT(ctx, c)
	if err != nil {
		t.Fatalf("opening a resumed session with %d messages sent at once (receive maximum %d): %v", n, max, err)
	}
	defer r.close()
	for got := 0; got < n; {
		batch, err := r.next(ctx, max)
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", got, n, err)
		}
		if len(batch) > max {
			t.Fatalf("a batch of %d messages; at most %d", len(batch), max)
		}
		if err := r.ack(ctx, batch); err != nil {
			t.Fatal(err)
		}
		got += len(batch)
	}
	seen := map[uint16]bool{}
	for len(seen) < n {
		select {
		case id := <-acks:
			seen[id] = true
		case <-ctx.Done():
			t.Fatalf("the broker got %d of %d PUBACKs", len(seen), n)
		}
	}
}
