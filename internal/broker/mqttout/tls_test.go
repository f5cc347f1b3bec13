package mqttout_test

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
)

// TestTLS: a mosquitto of the test's own with a TLS listener (a
// certificate of a private CA): an mqtts:// destination that trusts the
// CA (tls.ca_pem) is acknowledged and its message arrives (read on the
// broker's plain listener); one that trusts another CA, or the system's
// roots, is broker_refused.
func TestTLS(t *testing.T) {
	ca := brokertest.NewCA(t)
	srv, tlsAddr := brokertest.StartMosquittoTLS(t, ca)
	pre := prefix()
	got := subscribe(t, "mqtt://"+srv.Addr(), pre+"/#")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeMQTT, Topic: pre + "/{type}", QoS: 1,
		Settings: broker.Settings{URL: "mqtts://" + tlsAddr, TLS: &broker.TLS{CAPEM: ca.PEM}}}
	if err := publish(p, d, brokertest.Binary("order.created"), 10*time.Second); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	if m := next(t, got); m.Topic != pre+"/order.created" || string(m.Payload) != `{"order":42}` {
		t.Fatalf("received %s %s", m.Topic, m.Payload)
	}

	for _, s := range []broker.Settings{
		{URL: "mqtts://" + tlsAddr, TLS: &broker.TLS{CAPEM: brokertest.NewCA(t).PEM}},
		{URL: "ssl://" + tlsAddr},
	} {
		d := &broker.Destination{Type: broker.TypeMQTT, Topic: pre + "/x", QoS: 1, Settings: s}
		brokertest.WantOutcome(t, publish(p, d, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
	}
}
