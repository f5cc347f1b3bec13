package subscription_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

func privateOK() destination.Guard {
	return destination.Guard{Policy: destination.Policy{AllowPrivate: true}}
}

func createWith(t *testing.T, body string, g destination.Guard) (subscription.Subscription, error) {
	t.Helper()
	return input(t, body).New(context.Background(), subscription.Creation{ID: "sub_1", AccountID: "acc_1", Now: t0, Destinations: g})
}

// TestBrokerDestinations: each broker type is stored whole in the
// delivery options with its defaults (jetstream true, qos 1, mode
// binary), the subscription's URL its endpoint key without credentials.
func TestBrokerDestinations(t *testing.T) {
	for _, c := range []struct {
		body, key string
		want      broker.Destination
	}{
		{`{"type":"nats","url":"nats://u:pw@127.0.0.1:4222","subject":"orders.{type}"}`, "nats://127.0.0.1:4222/orders.{type}",
			broker.Destination{Type: "nats", Settings: broker.Settings{URL: "nats://u:pw@127.0.0.1:4222"}, Subject: "orders.{type}", JetStream: true, QoS: 1}},
		{`{"type":"amqp","url":"amqp://guest:guest@127.0.0.1:5672/","exchange":"amq.topic","routing_key":"o.{type}","mode":"structured"}`, "amqp://127.0.0.1:5672//amq.topic/o.{type}",
			broker.Destination{Type: "amqp", Settings: broker.Settings{URL: "amqp://guest:guest@127.0.0.1:5672/"}, Exchange: "amq.topic", RoutingKey: "o.{type}", JetStream: true, QoS: 1, Mode: "structured"}},
		{`{"type":"mqtt","url":"mqtt://127.0.0.1:1883","topic":"o/{type}","qos":0}`, "mqtt://127.0.0.1:1883/o/{type}",
			broker.Destination{Type: "mqtt", Settings: broker.Settings{URL: "mqtt://127.0.0.1:1883"}, Topic: "o/{type}", JetStream: true}},
		{`{"type":"kafka","brokers":["127.0.0.1:9092"],"topic":"orders","tls":true,"sasl":{"mechanism":"PLAIN","username":"u","password":"p"}}`, "kafkas://127.0.0.1:9092/orders",
			broker.Destination{Type: "kafka", Settings: broker.Settings{Brokers: []string{"127.0.0.1:9092"}, TLS: &broker.TLS{},
				SASL: &broker.SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}}, Topic: "orders", JetStream: true, QoS: 1}},
	} {
		sub, err := createWith(t, `{"name":"n","destination":`+c.body+`}`, privateOK())
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		d := sub.Delivery.Destination
		if sub.URL != c.key || d == nil || d.URL != c.want.URL || d.Template() != c.want.Template() || d.JetStream != c.want.JetStream ||
			d.QoS != c.want.QoS || d.Mode != c.want.Mode || (d.TLS != nil) != (c.want.TLS != nil) || d.Exchange != c.want.Exchange ||
			(c.want.SASL != nil && (d.SASL == nil || *d.SASL != *c.want.SASL)) {
			t.Errorf("%s: url %q, destination %+v", c.body, sub.URL, d)
		}
	}
}

// TestBrokerDestinationProblems: each problem is a 400 naming the field
// under destination; a loopback broker under the default policy is
// refused naming destination.url (or the Kafka broker); HTTP-only fields
// do not go with a broker.
func TestBrokerDestinationProblems(t *testing.T) {
	for body, field := range map[string]string{
		`{"type":"sqs"}`: "destination.type",
		`{"type":"nats","url":"nats://h:4222","subject":"a","topic":"b"}`:                                            "destination.topic",
		`{"type":"nats","url":"nats://h:4222","subject":"a","color":"b"}`:                                            "destination.color",
		`{"type":"nats","url":"http://h:4222","subject":"a"}`:                                                        "destination.url",
		`{"type":"nats","url":"nats://h:4222"}`:                                                                      "destination.subject",
		`{"type":"nats","url":"nats://h:4222","subject":"a.*"}`:                                                      "destination.subject",
		`{"type":"nats","url":"nats://h:4222","subject":"a.{tenant}"}`:                                               "destination.subject",
		`{"type":"nats","subject":"a"}`:                                                                              "destination.url",
		`{"type":"nats","url":"nats://h:4222","subject":"a","mode":"both"}`:                                          "destination.mode",
		`{"type":"mqtt","url":"mqtt://h","topic":"a/#"}`:                                                             "destination.topic",
		`{"type":"mqtt","url":"mqtt://h","topic":"a","qos":2}`:                                                       "destination.qos",
		`{"type":"kafka","brokers":[],"topic":"a"}`:                                                                  "destination.brokers",
		`{"type":"kafka","brokers":["h"],"topic":"a"}`:                                                               "destination.brokers[0]",
		`{"type":"kafka","brokers":["h:1"],"topic":"a/b"}`:                                                           "destination.topic",
		`{"type":"kafka","brokers":["h:1"],"topic":"a","sasl":{"mechanism":"GSSAPI","username":"u","password":"p"}}`: "destination.sasl.mechanism",
		`{"type":"webhook"}`: "destination.url",
		`{"type":"webhook","url":"https://example.com","mode":"binary"}`: "destination.mode",
	} {
		_, err := createWith(t, `{"name":"n","destination":`+body+`}`, privateOK())
		var se *strictjson.Error
		if !errors.As(err, &se) || se.Field != field {
			t.Errorf("%s: %v, want a problem naming %s", body, err, field)
		}
	}
	_, err := createWith(t, `{"name":"n","url":"https://example.com","destination":{"type":"webhook","url":"https://example.com"}}`, privateOK())
	if se, ok := errors.AsType[*strictjson.Error](err); !ok || se.Field != "url" {
		t.Errorf("url and destination: %v", err)
	}
	_, err = createWith(t, `{"name":"n","delivery_mode":"pull","destination":{"type":"nats","url":"nats://h:4222","subject":"a"}}`, privateOK())
	if se, ok := errors.AsType[*strictjson.Error](err); !ok || se.Field != "destination" {
		t.Errorf("pull with a destination: %v", err)
	}
	_, err = createWith(t, `{"name":"n","destination":{"type":"nats","url":"nats://127.0.0.1:4222","subject":"a"}}`, destination.Guard{})
	if de, ok := errors.AsType[*subscription.DestinationError](err); !ok || de.Field != "destination.url" {
		t.Errorf("loopback broker: %v", err)
	}
	_, err = createWith(t, `{"name":"n","destination":{"type":"kafka","brokers":["example.com:9092","127.0.0.1:9092"],"topic":"a"}}`, publicOnly(t))
	if de, ok := errors.AsType[*subscription.DestinationError](err); !ok || de.Field != "destination.brokers[1]" {
		t.Errorf("loopback Kafka broker: %v", err)
	}
	_, err = createWith(t, `{"name":"n","max_events_per_batch":10,"destination":{"type":"nats","url":"nats://h:4222","subject":"a"}}`, privateOK())
	if ce, ok := errors.AsType[*subscription.CombinationError](err); !ok || ce.Field != "max_events_per_batch" {
		t.Errorf("batches with a broker: %v", err)
	}
}

// TestBrokerDestinationSecrets: the URL's password and the SASL password
// are masked when shown; sent back masked they keep the stored ones, and
// the subscription's url sent back keeps its destination; a webhook
// destination or url makes it a webhook's again.
func TestBrokerDestinationSecrets(t *testing.T) {
	sub, err := createWith(t, `{"name":"n","destination":{"type":"amqp","url":"amqp://guest:s3cret@127.0.0.1:5672/","routing_key":"a"}}`, privateOK())
	if err != nil {
		t.Fatal(err)
	}
	shown := subscription.MaskedDestination(sub.Delivery.Destination)
	if strings.Contains(shown.URL, "s3cret") || shown.URL != "amqp://guest:xxxxx@127.0.0.1:5672/" {
		t.Fatalf("shown URL %q", shown.URL)
	}
	upd := input(t, `{"url":"`+sub.URL+`","destination":{"type":"amqp","url":"`+shown.URL+`","routing_key":"b"}}`)
	if err := upd.Update(context.Background(), &sub, privateOK()); err == nil {
		t.Fatal("url and destination together were accepted")
	}
	upd = input(t, `{"destination":{"type":"amqp","url":"`+shown.URL+`","routing_key":"b"}}`)
	if err := upd.Update(context.Background(), &sub, privateOK()); err != nil {
		t.Fatal(err)
	}
	if d := sub.Delivery.Destination; d.URL != "amqp://guest:s3cret@127.0.0.1:5672/" || d.RoutingKey != "b" {
		t.Fatalf("after an update with the masked URL: %+v", d)
	}
	if err := input(t, `{"url":"`+sub.URL+`","name":"m"}`).Update(context.Background(), &sub, privateOK()); err != nil || sub.Delivery.Destination == nil {
		t.Fatalf("the url sent back as shown: %v, %+v", err, sub.Delivery.Destination)
	}
	if err := input(t, `{"destination":{"type":"amqp","url":"amqp://guest:xxxxx@127.0.0.2:5672/"}}`).Update(context.Background(), &sub, privateOK()); err == nil {
		t.Fatal("a masked URL of another broker was accepted")
	}

	k, err := createWith(t, `{"name":"k","destination":{"type":"kafka","brokers":["127.0.0.1:9092"],"topic":"t","sasl":{"mechanism":"PLAIN","username":"u","password":"pw"}}}`, privateOK())
	if err != nil {
		t.Fatal(err)
	}
	if m := subscription.MaskedDestination(k.Delivery.Destination); m.SASL.Password != "****" || k.Delivery.Destination.SASL.Password != "pw" {
		t.Fatalf("masking changed the stored password, or did not mask: %+v", m.SASL)
	}
	if err := input(t, `{"destination":{"type":"kafka","brokers":["127.0.0.1:9092"],"topic":"u","sasl":{"mechanism":"PLAIN","username":"u","password":"****"}}}`).Update(context.Background(), &k, privateOK()); err != nil || k.Delivery.Destination.SASL.Password != "pw" {
		t.Fatalf("SASL password sent back masked: %v, %+v", err, k.Delivery.Destination.SASL)
	}
	if err := input(t, `{"url":"https://example.com/hook"}`).Update(context.Background(), &k, privateOK()); err != nil || k.Delivery.Destination != nil || k.URL != "https://example.com/hook" {
		t.Fatalf("back to a webhook: %v, %q %+v", err, k.URL, k.Delivery.Destination)
	}
}
