package kafkaout_test

import (
	"net"
	"net/netip"
	"strings"

	"context"
	"encoding/json"
	"github.com/herald-events/herald/internal/destination"
	"github.com/twmb/franz-go/pkg/kfake"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
	"github.com/herald-events/herald/internal/broker/kafkaout"
)

var connectors = map[string]broker.Connector{broker.TypeKafka: kafkaout.Connect}

func publish(p *broker.Pool, d *broker.Destination, m broker.Message, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Publish(ctx, d, m)
}

// consume returns the first record of topic on brokers, read with a
// franz-go consumer, within 10 seconds.
func consume(t *testing.T, brokers []string, topic string) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record in %s: %v", topic, err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			return recs[0]
		}
	}
}

func header(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}

// TestBinary: a binary-mode event is produced with acks=all to the topic
// its template gives, each attribute a ce_NAME header, the
// datacontenttype the content-type header, the ordering key the record
// key.
func TestBinary(t *testing.T) {
	k := brokertest.StartKafka(t, "orders.order-created")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: k.Addrs()}, Topic: "orders.{type}"}
	m := brokertest.Binary("order-created")
	m.Key = "customer-7"
	if err := publish(p, d, m, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r := consume(t, k.Addrs(), "orders.order-created")
	for name, want := range map[string]string{
		"ce_specversion": "1.0", "ce_id": "evt-1", "ce_source": "/herald/test", "ce_type": "order-created",
		"ce_subject": "orders/42", "ce_tenant": "Zoë Ltd", "content-type": "application/json",
	} {
		if got := header(r, name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if string(r.Key) != "customer-7" || string(r.Value) != `{"order":42}` {
		t.Errorf("key %q, value %s", r.Key, r.Value)
	}
}

// TestStructured: structured mode carries the JSON event format as the
// value, content-type application/cloudevents+json; no key without an
// ordering key.
func TestStructured(t *testing.T) {
	k := brokertest.StartKafka(t, "events")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: k.Addrs()}, Topic: "events", Mode: broker.ModeStructured}
	if err := publish(p, d, brokertest.Structured("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r := consume(t, k.Addrs(), "events")
	var ev map[string]any
	if header(r, "content-type") != "application/cloudevents+json" || header(r, "ce_id") != "" || r.Key != nil ||
		json.Unmarshal(r.Value, &ev) != nil || ev["id"] != "evt-1" {
		t.Errorf("headers %v, key %q, value %s", r.Headers, r.Key, r.Value)
	}
}

// TestFailures: a topic the cluster does not have (and does not create)
// is refused, so is a template that resolves to a topic with a character
// Kafka refuses; a closed port is unreachable; a server that accepts and
// says nothing times out.
func TestFailures(t *testing.T) {
	k := brokertest.StartKafka(t, "events")
	p := brokertest.Pool(t, connectors)
	brokertest.WantOutcome(t, publish(p, &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: k.Addrs()}, Topic: "nope"}, brokertest.Binary("a"), 20*time.Second), broker.OutcomeRefused)
	m := brokertest.Binary("a")
	m.Fields.Source = "/x"
	brokertest.WantOutcome(t, publish(p, &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: k.Addrs()}, Topic: "t{source}"}, m, 10*time.Second), broker.OutcomeRefused)
	brokertest.WantOutcome(t, publish(p, &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: []string{brokertest.ClosedPort(t)}}, Topic: "events"}, brokertest.Binary("a"), 10*time.Second), broker.OutcomeUnreachable)
	brokertest.WantOutcome(t, publish(p, &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: []string{brokertest.Silent(t)}}, Topic: "events"}, brokertest.Binary("a"), 500*time.Millisecond), broker.OutcomeTimeout)
}

// TestRestartedCluster: the cluster is closed — the produce is
// unreachable — and made again on the same port: the next produce
// reaches it.
func TestRestartedCluster(t *testing.T) {
	k := brokertest.StartKafka(t, "events")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: k.Addrs()}, Topic: "events"}
	if err := publish(p, d, brokertest.Binary("one"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	k.Stop()
	brokertest.WantOutcome(t, publish(p, d, brokertest.Binary("two"), 10*time.Second), broker.OutcomeUnreachable)
	k.Start()
	if err := publish(p, d, brokertest.Binary("three"), 10*time.Second); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if r := consume(t, k.Addrs(), "events"); header(r, "ce_type") != "three" {
		t.Errorf("after the restart: %v", r.Headers)
	}
}

// TestInternalTopics: a topic of {type} would let an event of type
// __name produce to one of the cluster's internal topics (__ is Kafka's
// prefix for them: consumer offsets, transactions, connectors' state); it
// is refused at once as InvalidTarget and nothing is produced there.
func TestInternalTopics(t *testing.T) {
	k := brokertest.StartKafka(t, "__herald_internal", "orders")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: k.Addrs()}, Topic: "{type}"}
	if err := publish(p, d, brokertest.Binary("__herald_internal"), 10*time.Second); !broker.InvalidTarget(err) {
		t.Errorf("type __herald_internal: %v, want an invalid target", err)
	}
	if err := publish(p, d, brokertest.Binary("orders"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	consume(t, k.Addrs(), "orders")
}

// TestAdvertisedAddressesGuarded: the seed broker passes the destination
// guard (a proxy on 127.0.0.1, the one range --allow-destinations
// allows), but the cluster's metadata advertises its brokers on
// 127.0.0.2, which the guard refuses: the produce, which goes to the
// advertised leader, never reaches it and fails, nothing published, with
// the guard's refusal (destination_blocked), not a bare timeout.
func TestAdvertisedAddressesGuarded(t *testing.T) {
	k := brokertest.StartKafkaWith(t, []kfake.Opt{kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, "127.0.0.2:0")
	})}, "orders")
	seed := brokertest.StartProxy(t, k.Addrs()[0])
	p := brokertest.PoolWith(t, connectors, destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	d := &broker.Destination{Type: broker.TypeKafka, Settings: broker.Settings{Brokers: []string{seed.Addr()}}, Topic: "orders"}
	err := publish(p, d, brokertest.Binary("a"), 2*time.Second)
	if err == nil {
		t.Fatal("published through an advertised address the guard refuses")
	}
	if !destination.IsBlocked(err) || !strings.Contains(err.Error(), "127.0.0.2") {
		t.Errorf("error %v, want the guard's refusal of 127.0.0.2 (destination_blocked)", err)
	}
	// The same cluster with 127.0.0.2 allowed takes it.
	p = brokertest.PoolWith(t, connectors, destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err := publish(p, d, brokertest.Binary("a"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
