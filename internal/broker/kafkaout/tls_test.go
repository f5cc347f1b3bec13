package kafkaout_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
	"github.com/herald-events/herald/internal/broker/kafkaout"
)

// secureKafka starts a kfake cluster with TLS (a certificate of a private
// CA) and SASL users herald-plain (PLAIN) and herald-scram
// (SCRAM-SHA-256), both with password s3cret, holding topic.
func secureKafka(t *testing.T, topic string) (*brokertest.Kafka, *brokertest.CA) {
	ca := brokertest.NewCA(t)
	k := brokertest.StartKafkaWith(t, []kfake.Opt{kfake.TLS(ca.ServerConfig()), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "herald-plain", "s3cret"), kfake.Superuser("SCRAM-SHA-256", "herald-scram", "s3cret")}, topic)
	return k, ca
}

// TestTLSSASL: a Kafka destination with TLS trusting the private CA
// (tls.ca_pem) and SASL PLAIN, then SCRAM-SHA-256, is acknowledged and
// its record is read back (over TLS and SASL); a wrong password, or a CA
// not the cluster's, is broker_refused.
func TestTLSSASL(t *testing.T) {
	k, ca := secureKafka(t, "orders")
	p := brokertest.Pool(t, connectors)
	for i, sasl := range []*broker.SASL{
		{Mechanism: "PLAIN", Username: "herald-plain", Password: "s3cret"},
		{Mechanism: "SCRAM-SHA-256", Username: "herald-scram", Password: "s3cret"},
	} {
		s := broker.Settings{Brokers: k.Addrs(), TLS: &broker.TLS{CAPEM: ca.PEM}, SASL: sasl}
		d := &broker.Destination{Type: broker.TypeKafka, Topic: "orders", Settings: s}
		if err := publish(p, d, brokertest.Binary("order.created"), 20*time.Second); err != nil {
			t.Fatalf("%s: publish: %v", sasl.Mechanism, err)
		}
		recs := consumeSecure(t, s, "orders", i+1)
		if got := header(recs[i], "ce_id"); got != "evt-1" {
			t.Fatalf("%s: record %d has ce_id %q", sasl.Mechanism, i, got)
		}
	}

	good := &broker.SASL{Mechanism: "SCRAM-SHA-256", Username: "herald-scram", Password: "s3cret"}
	for name, s := range map[string]broker.Settings{
		"wrong password": {Brokers: k.Addrs(), TLS: &broker.TLS{CAPEM: ca.PEM},
			SASL: &broker.SASL{Mechanism: "PLAIN", Username: "herald-plain", Password: "wrong"}},
		"wrong SCRAM password": {Brokers: k.Addrs(), TLS: &broker.TLS{CAPEM: ca.PEM},
			SASL: &broker.SASL{Mechanism: "SCRAM-SHA-256", Username: "herald-scram", Password: "wrong"}},
		"another CA": {Brokers: k.Addrs(), TLS: &broker.TLS{CAPEM: brokertest.NewCA(t).PEM}, SASL: good},
	} {
		d := &broker.Destination{Type: broker.TypeKafka, Topic: "orders", Settings: s}
		err := publish(p, d, brokertest.Binary("a"), 20*time.Second)
		if got := broker.OutcomeOf(err); err == nil || got != broker.OutcomeRefused {
			t.Errorf("%s: outcome %s (%v), want %s", name, got, err, broker.OutcomeRefused)
		}
	}
}

// consumeSecure reads n records of topic with s's TLS and SASL, within 20
// seconds.
func consumeSecure(t *testing.T, s broker.Settings, topic string, n int) []*kgo.Record {
	t.Helper()
	m, err := kafkaout.Mechanism(s.SASL)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := s.TLSConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Brokers...), kgo.ConsumeTopics(topic), kgo.DialTLSConfig(tc), kgo.SASL(m))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d records of %s, want %d: %v", len(recs), topic, n, err)
		}
		recs = append(recs, fs.Records()...)
	}
	return recs
}
