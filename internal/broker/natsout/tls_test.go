package natsout_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
)

// TestTLS: a nats-server of the test's own with TLS (a certificate of a
// private CA) and a user: a tls:// destination that trusts the CA
// (tls.ca_pem) and gives the user's password delivers to JetStream; one
// that trusts another CA is broker_refused (a certificate Herald does not
// trust), as is one with a wrong password.
func TestTLS(t *testing.T) {
	ca := brokertest.NewCA(t)
	srv := brokertest.StartNATS(t, brokertest.NATSTLSArgs(ca, "herald", "s3cret")...)
	url := "tls://herald:s3cret@" + srv.Addr()
	prefix, cons := stream(t, url, nats.Secure(ca.ClientConfig()))
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeNATS, Subject: prefix + ".{type}", JetStream: true,
		Settings: broker.Settings{URL: url, TLS: &broker.TLS{CAPEM: ca.PEM}}}
	if err := publish(p, d, brokertest.Binary("order.created"), 10*time.Second); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	if m := next(t, cons); m.Subject() != prefix+".order.created" || m.Headers().Get("ce-id") != "evt-1" {
		t.Fatalf("received %s %v", m.Subject(), m.Headers())
	}

	other := brokertest.NewCA(t)
	wrongCA := &broker.Destination{Type: broker.TypeNATS, Subject: prefix + ".x", JetStream: true,
		Settings: broker.Settings{URL: url, TLS: &broker.TLS{CAPEM: other.PEM}}}
	brokertest.WantOutcome(t, publish(p, wrongCA, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
	systemRoots := &broker.Destination{Type: broker.TypeNATS, Subject: prefix + ".x", JetStream: true, Settings: broker.Settings{URL: url}}
	brokertest.WantOutcome(t, publish(p, systemRoots, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
	wrongPassword := &broker.Destination{Type: broker.TypeNATS, Subject: prefix + ".x", JetStream: true,
		Settings: broker.Settings{URL: "tls://herald:wrong@" + srv.Addr(), TLS: &broker.TLS{CAPEM: ca.PEM}}}
	brokertest.WantOutcome(t, publish(p, wrongPassword, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
}
