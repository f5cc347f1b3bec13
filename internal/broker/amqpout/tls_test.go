package amqpout_test

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
)

// TestTLS: an amqps:// destination reaches RabbitMQ through a proxy that
// ends TLS with a certificate of a private CA (amqps is TLS from the first
// byte): trusting the CA (tls.ca_pem) it is confirmed and the message
// arrives in the queue; trusting another CA, or the system's roots, it is
// broker_refused.
func TestTLS(t *testing.T) {
	ca := brokertest.NewCA(t)
	proxy := brokertest.StartTLSProxy(t, "127.0.0.1:5672", ca.ServerConfig())
	prefix, deliveries := queue(t)
	p := brokertest.Pool(t, connectors)
	url := "amqps://guest:guest@" + proxy.Addr() + "/"
	d := &broker.Destination{Type: broker.TypeAMQP, Exchange: "amq.topic", RoutingKey: prefix + ".{type}",
		Settings: broker.Settings{URL: url, TLS: &broker.TLS{CAPEM: ca.PEM}}}
	if err := publish(p, d, brokertest.Binary("order.created"), 10*time.Second); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	if m := next(t, deliveries); m.RoutingKey != prefix+".order.created" || m.Headers["cloudEvents:id"] != "evt-1" {
		t.Fatalf("received %s %v", m.RoutingKey, m.Headers)
	}

	for _, s := range []broker.Settings{{URL: url, TLS: &broker.TLS{CAPEM: brokertest.NewCA(t).PEM}}, {URL: url}} {
		d := &broker.Destination{Type: broker.TypeAMQP, Exchange: "amq.topic", RoutingKey: prefix + ".x", Settings: s}
		brokertest.WantOutcome(t, publish(p, d, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
	}
}
