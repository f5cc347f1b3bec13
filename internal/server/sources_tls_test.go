package server_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/herald-events/herald/internal/broker/brokertest"
	"github.com/herald-events/herald/internal/ids"
)

// tlsEvent is the structured CloudEvent a TLS test sends, of id id.
func tlsEvent(id string) []byte {
	return []byte(`{"specversion": "1.0", "id": "` + id + `", "source": "/tls", "type": "order.placed", "data": {"n": 1}}`)
}

// createSource creates a source from body, failing the test unless it is
// created.
func createSource(b *bundle, body map[string]any) sourceRes {
	b.t.Helper()
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", body, &src); code != 201 {
		b.t.Fatalf("create source: %d %s", code, raw)
	}
	return src
}

// TestSourcesOverTLS: a source of each broker type trusting a private CA
// (tls.ca_pem) reads over TLS — NATS from a nats-server of the test's own
// with TLS, a user and JetStream; AMQP from RabbitMQ behind a proxy that
// ends TLS; MQTT from a mosquitto's TLS listener; Kafka from kfake with
// TLS and SASL PLAIN, then SCRAM-SHA-256 — and its event reaches a webhook
// subscription.
func TestSourcesOverTLS(t *testing.T) {
	b, sig := sourceSetup(t)
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	ca := brokertest.NewCA(t)
	tlsOf := map[string]any{"ca_pem": ca.PEM}

	// MQTT first: its message is kept for the source's session once the
	// source subscribed (connected).
	mq, tlsAddr := brokertest.StartMosquittoTLS(t, ca)
	mqttSrc := createSource(b, map[string]any{"type": "mqtt", "url": "mqtts://" + tlsAddr, "tls": tlsOf, "topic": "tls/#"})
	for sig.Connected.WaitOrTimeout() != mqttSrc.ID {
	}
	mqttPublishTo(t, mq.Addr(), &paho.Publish{Topic: "tls/a", Payload: tlsEvent("mqtt-1"),
		Properties: &paho.PublishProperties{ContentType: "application/cloudevents+json"}})

	srv := brokertest.StartNATS(t, brokertest.NATSTLSArgs(ca, "herald", "s3cret")...)
	natsURL := "tls://herald:s3cret@" + srv.Addr()
	js := tlsStream(t, natsURL, nats.Secure(ca.ClientConfig()))
	createSource(b, map[string]any{"type": "nats", "url": natsURL, "tls": tlsOf, "subject": "tls.>"})
	if _, err := js.PublishMsg(context.Background(), &nats.Msg{Subject: "tls.a", Data: tlsEvent("nats-1"),
		Header: nats.Header{"content-type": {"application/cloudevents+json"}}}); err != nil {
		t.Fatal(err)
	}

	proxy := brokertest.StartTLSProxy(t, "127.0.0.1:5672", ca.ServerConfig())
	ch, q := amqpSourceQueue(t)
	createSource(b, map[string]any{"type": "amqp", "url": "amqps://guest:guest@" + proxy.Addr() + "/", "tls": tlsOf, "queue": q})
	amqpPublish(t, ch, q, amqp.Publishing{ContentType: "application/cloudevents+json", Body: tlsEvent("amqp-1")})

	k := brokertest.StartKafkaWith(t, []kfake.Opt{kfake.TLS(ca.ServerConfig()), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "herald-plain", "s3cret"), kfake.Superuser("SCRAM-SHA-256", "herald-scram", "s3cret")}, "plain", "scram")
	producer, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.DialTLSConfig(ca.ClientConfig()),
		kgo.SASL(scram.Auth{User: "herald-scram", Pass: "s3cret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(producer.Close)
	for topic, user := range map[string][2]string{"plain": {"PLAIN", "herald-plain"}, "scram": {"SCRAM-SHA-256", "herald-scram"}} {
		createSource(b, map[string]any{"type": "kafka", "brokers": k.Addrs(), "tls": tlsOf, "topic": topic,
			"sasl": map[string]any{"mechanism": user[0], "username": user[1], "password": "s3cret"}})
		kafkaProduce(t, producer, &kgo.Record{Topic: topic, Value: tlsEvent("kafka-" + topic),
			Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}})
	}

	eventually(t, "an event from each source delivered", func() bool { return rc.count() >= 5 })
	got := eventIDs(t, rc)
	for _, id := range []string{"nats-1", "amqp-1", "mqtt-1", "kafka-plain", "kafka-scram"} {
		if got[id] != 1 {
			t.Fatalf("delivered %v; want %s once", got, id)
		}
	}
}

// TestSourceRefusedOverTLS: a Kafka source with a wrong SASL password,
// and a NATS source trusting another CA than its server's, read nothing
// and show why in last_error (failing).
func TestSourceRefusedOverTLS(t *testing.T) {
	b, _ := sourceSetup(t)
	ca := brokertest.NewCA(t)
	k := brokertest.StartKafkaWith(t, []kfake.Opt{kfake.TLS(ca.ServerConfig()), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "herald-scram", "s3cret")}, "orders")
	kafka := createSource(b, map[string]any{"type": "kafka", "brokers": k.Addrs(), "tls": map[string]any{"ca_pem": ca.PEM}, "topic": "orders",
		"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": "herald-scram", "password": "wrong"}})
	srv := brokertest.StartNATS(t, brokertest.NATSTLSArgs(ca, "herald", "s3cret")...)
	nats := createSource(b, map[string]any{"type": "nats", "url": "tls://herald:s3cret@" + srv.Addr(),
		"tls": map[string]any{"ca_pem": brokertest.NewCA(t).PEM}, "subject": "orders.>"})
	for _, id := range []string{kafka.ID, nats.ID} {
		eventually(t, "the source failing with its last error", func() bool {
			s := b.getSource(id)
			return s.State == "failing" && s.LastError != nil && *s.LastError != ""
		})
	}
	if s := b.getSource(nats.ID); !strings.Contains(*s.LastError, "certificate") {
		t.Fatalf("NATS last error %q; want the certificate named", *s.LastError)
	}
}

// tlsStream makes a stream TLS of subjects tls.> on url (connected with
// opts) and returns its JetStream.
func tlsStream(t *testing.T, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TLS", Subjects: []string{"tls.>"}}); err != nil {
		t.Fatal(err)
	}
	return js
}

// mqttPublishTo publishes p at QoS 1 to the MQTT broker at addr.
func mqttPublishTo(t *testing.T, addr string, p *paho.Publish) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "herald-test-" + ids.New("", time.Now()), KeepAlive: 30, CleanStart: true}); err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(&paho.Disconnect{})
	p.QoS = 1
	if _, err := c.Publish(ctx, p); err != nil {
		t.Fatal(err)
	}
}
