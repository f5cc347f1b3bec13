package server_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-events/herald/internal/broker/brokertest"
	"github.com/herald-events/herald/internal/ids"
)

// brokerCase is a broker of a test's own for the server tests: the
// subscription's destination, a consumer that reads what arrives (each
// message's CloudEvents id and type as the binding carries them), and
// how to take the broker down and bring it back.
type brokerCase struct {
	name        string
	destination map[string]any
	// next returns the id and type of the next message the consumer
	// reads (failing the test after 10 seconds).
	next       func(t *testing.T) (id, typ string)
	stop, back func()
}

// natsCase: a nats-server of the test's own, a JetStream stream and a
// durable consumer.
func natsCase(t *testing.T) brokerCase {
	srv := brokertest.StartNATS(t)
	url := "nats://" + srv.Addr()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "test", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return brokerCase{
		name:        "nats",
		destination: map[string]any{"type": "nats", "url": url, "subject": "orders.{type}"},
		next: func(t *testing.T) (string, string) {
			t.Helper()
			msgs, err := c.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for m := range msgs.Messages() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				m.DoubleAck(ctx)
				return m.Headers().Get("ce-id"), m.Headers().Get("ce-type")
			}
			t.Fatalf("nothing in the stream: %v", msgs.Error())
			return "", ""
		},
		stop: srv.Stop, back: srv.Start,
	}
}

// amqpCase: the shared RabbitMQ behind a proxy of the test's own (its
// stop is the broker going away), a queue bound to amq.topic.
func amqpCase(t *testing.T) brokerCase {
	proxy := brokertest.StartProxy(t, "127.0.0.1:5672")
	prefix, deliveries := amqpQueue(t)
	return brokerCase{
		name: "amqp",
		destination: map[string]any{"type": "amqp", "url": "amqp://guest:guest@" + proxy.Addr() + "/",
			"exchange": "amq.topic", "routing_key": prefix + ".{type}"},
		next: func(t *testing.T) (string, string) {
			t.Helper()
			select {
			case d := <-deliveries:
				id, _ := d.Headers["cloudEvents:id"].(string)
				typ, _ := d.Headers["cloudEvents:type"].(string)
				return id, typ
			case <-time.After(10 * time.Second):
				t.Fatal("nothing in the queue after 10s")
			}
			return "", ""
		},
		stop: proxy.Stop, back: proxy.Start,
	}
}

// mqttCase: a mosquitto of the test's own and a subscriber, subscribed
// again after the broker comes back.
func mqttCase(t *testing.T) brokerCase {
	srv := brokertest.StartMosquitto(t, "")
	got := make(chan *paho.Publish, 16)
	subscribe := func() {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c := paho.NewClient(paho.ClientConfig{Conn: nc, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(r paho.PublishReceived) (bool, error) { got <- r.Packet; return true, nil },
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Connect(ctx, &paho.Connect{ClientID: strings.ToLower(ids.New("sub_", time.Now())), CleanStart: true, KeepAlive: 30}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
		if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "orders/#", QoS: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	subscribe()
	return brokerCase{
		name:        "mqtt",
		destination: map[string]any{"type": "mqtt", "url": "mqtt://" + srv.Addr(), "topic": "orders/{type}"},
		next: func(t *testing.T) (string, string) {
			t.Helper()
			select {
			case p := <-got:
				return p.Properties.User.Get("id"), p.Properties.User.Get("type")
			case <-time.After(10 * time.Second):
				t.Fatal("nothing arrived after 10s")
			}
			return "", ""
		},
		stop: srv.Stop, back: func() { srv.Start(); subscribe() },
	}
}

// kafkaCase: a kfake cluster (no Kafka broker runs here), closed and made
// again on its port; a consumer from the start of the topic each time.
func kafkaCase(t *testing.T) brokerCase {
	k := brokertest.StartKafka(t, "orders.created")
	read := 0 // records already returned from the cluster as it is now
	return brokerCase{
		name:        "kafka",
		destination: map[string]any{"type": "kafka", "brokers": k.Addrs(), "topic": "orders.{type}"},
		next: func(t *testing.T) (string, string) {
			t.Helper()
			cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.ConsumeTopics("orders.created"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var recs []*kgo.Record
			for len(recs) <= read {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatal("no record after 10s")
				}
				recs = append(recs, fs.Records()...)
			}
			r := recs[read]
			read++
			h := map[string]string{}
			for _, x := range r.Headers {
				h[x.Key] = string(x.Value)
			}
			return h["ce_id"], h["ce_type"]
		},
		stop: k.Stop, back: func() { k.Start(); read = 0 },
	}
}

// TestBrokerDestinations runs through each broker: an event published to
// Herald arrives at the broker's consumer with the binding's attributes;
// with the broker down, a delivery is retried on the subscription's
// policy and dead-lettered after its last attempt, each attempt
// broker_unreachable; with the broker back, the next event is delivered.
func TestBrokerDestinations(t *testing.T) {
	for _, mk := range []func(*testing.T) brokerCase{natsCase, amqpCase, mqttCase, kafkaCase} {
		bc := mk(t)
		t.Run(bc.name, func(t *testing.T) { brokerRoundTrip(t, bc) })
	}
}

func brokerRoundTrip(t *testing.T, bc brokerCase) {
	b := setup(t)
	sub := b.subscribe(map[string]any{"name": bc.name, "destination": bc.destination,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"5s"}, "max_attempts": 3}})

	b.publish("e1", "created")
	waitEvent(b, sub, "e1", "delivered")
	if id, typ := bc.next(t); id != "e1" || typ != "created" {
		t.Fatalf("the consumer read id %q type %q, want e1 created", id, typ)
	}
	if as := b.attempts(eventDelivery(b, sub, "e1").ID); len(as) != 1 || as[0].Outcome != "broker_acked" || as[0].StatusCode != nil {
		t.Fatalf("attempts %+v, want one broker_acked without a status code", as)
	}

	bc.stop()
	b.publish("e2", "created")
	for n := 1; n <= 3; n++ {
		eventually(t, "attempt "+string(rune('0'+n))+" of e2", func() bool {
			d := eventDelivery(b, sub, "e2")
			return d.ID != "" && d.Attempts == n
		})
		b.settle()
		b.clk.Advance(5 * time.Second)
	}
	d := waitEvent(b, sub, "e2", "dead_lettered")
	if d.LastOutcome == nil || *d.LastOutcome != "broker_unreachable" || d.DeadLetterReason == nil || *d.DeadLetterReason != "MaxDeliveryAttemptsExceeded" {
		t.Fatalf("dead letter %+v, want MaxDeliveryAttemptsExceeded after broker_unreachable", d)
	}

	bc.back()
	b.publish("e3", "created")
	// The endpoint's circuit may hold it until a probe: the clock moves on
	// until it is delivered.
	eventually(t, "e3 delivered after the broker came back", func() bool {
		if eventDelivery(b, sub, "e3").Status == "delivered" {
			return true
		}
		b.settle()
		b.clk.Advance(30 * time.Second)
		return false
	})
	if id, _ := bc.next(t); id != "e3" {
		t.Fatalf("after the broker came back the consumer read %q, want e3", id)
	}
}

// eventDelivery is the subscription's delivery of an event (zero: none
// yet).
func eventDelivery(b *bundle, sub, eventID string) delivery {
	b.t.Helper()
	for _, d := range b.deliveries(sub) {
		if d.EventID == eventID {
			return d
		}
	}
	return delivery{}
}

// waitEvent waits until the subscription's delivery of an event has
// status, and returns it.
func waitEvent(b *bundle, sub, eventID, status string) delivery {
	b.t.Helper()
	var d delivery
	eventually(b.t, eventID+" "+status, func() bool {
		d = eventDelivery(b, sub, eventID)
		return d.Status == status
	})
	return d
}

// TestBrokerDestinationResource: the API shows a broker subscription's
// destination with its URL's password masked, its url and its endpoint's
// url the endpoint key (no credentials); a PATCH that sends the
// destination back as shown keeps the password (the next event is
// confirmed by RabbitMQ, which needs it); a bad destination is a 400
// naming its field and changes nothing; a JetStream subject with no
// stream is broker_refused.
func TestBrokerDestinationResource(t *testing.T) {
	b := setup(t)
	prefix, _ := amqpQueue(t)
	sub := b.subscribe(map[string]any{"name": "r", "destination": map[string]any{"type": "amqp",
		"url": brokertest.AMQPURL, "exchange": "amq.topic", "routing_key": prefix + ".{type}"}})
	var got struct {
		URL         string         `json:"url"`
		EndpointID  string         `json:"endpoint_id"`
		Destination map[string]any `json:"destination"`
	}
	b.do("GET", "/v1/subscriptions/"+sub, nil, &got)
	if got.URL != "amqp://127.0.0.1:5672//amq.topic/"+prefix+".{type}" || got.Destination["url"] != "amqp://guest:xxxxx@127.0.0.1:5672/" ||
		got.Destination["mode"] != "binary" || got.Destination["routing_key"] != prefix+".{type}" {
		t.Fatalf("subscription url %q, destination %v", got.URL, got.Destination)
	}
	if ep := b.endpoint(got.EndpointID); ep.URL != got.URL {
		t.Fatalf("endpoint url %q, want %q", ep.URL, got.URL)
	}
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, map[string]any{"destination": got.Destination}, nil); code != 200 {
		t.Fatalf("PATCH with the destination as shown: %d %s", code, raw)
	}
	b.publish("e1", "created")
	waitEvent(b, sub, "e1", "delivered")

	before := b.state()
	code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, map[string]any{"destination": map[string]any{"type": "nats", "url": brokertest.NATSURL, "subject": "a.>"}}, nil)
	if code != 400 || !strings.Contains(string(raw), `"destination.subject"`) {
		t.Fatalf("a wildcard subject: %d %s", code, raw)
	}
	if b.state() != before {
		t.Fatal("a refused PATCH changed something")
	}

	refused := b.subscribe(map[string]any{"name": "nostream", "destination": map[string]any{"type": "nats", "url": brokertest.NATSURL,
		"subject": "herald.nostream." + strings.ToLower(ids.New("t_", time.Now()))}, "retry_policy": map[string]any{"preset": "custom", "delays": []string{"5s"}, "max_attempts": 1}})
	b.publish("e2", "created")
	d := waitEvent(b, refused, "e2", "dead_lettered")
	if d.LastOutcome == nil || *d.LastOutcome != "broker_refused" {
		t.Fatalf("no stream: %+v, want broker_refused", d)
	}
}

// TestKafkaOrderingKey: a subscription that orders by key publishes each
// event's partitionkey as its Kafka record's key, and each key's records
// arrive in the order their events were published (30 events over three
// keys, on a topic of three partitions).
func TestKafkaOrderingKey(t *testing.T) {
	b := setup(t)
	k := brokertest.StartKafka(t, "orders")
	sub := b.subscribe(map[string]any{"name": "k", "ordering": "key", "destination": map[string]any{"type": "kafka", "brokers": k.Addrs(), "topic": "orders"}})
	const events = 30
	keys := []string{"customer-7", "customer-8", "customer-9"}
	for i := range events {
		ev := map[string]any{"specversion": "1.0", "id": fmt.Sprintf("e%02d", i), "source": "/test", "type": "created",
			"partitionkey": keys[i%len(keys)], "data": map[string]any{}}
		if code, raw := b.do("POST", "/v1/events", ev, nil); code != 202 {
			t.Fatalf("publish: %d %s", code, raw)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := map[string][]string{}
	for n := 0; n < events; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d records after 20s, want %d", n, events)
		}
		for _, r := range fs.Records() {
			got[string(r.Key)] = append(got[string(r.Key)], recordID(r))
			n++
		}
	}
	for i, key := range keys {
		var want []string
		for j := i; j < events; j += len(keys) {
			want = append(want, fmt.Sprintf("e%02d", j))
		}
		if !slices.Equal(got[key], want) {
			t.Fatalf("key %s: records %v, want %v", key, got[key], want)
		}
	}
	waitEvent(b, sub, fmt.Sprintf("e%02d", events-1), "delivered")
}

// recordID is the CloudEvents id a Kafka record carries in binary mode
// (its ce_id header).
func recordID(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == "ce_id" {
			return string(h.Value)
		}
	}
	return ""
}

// amqpQueue binds a new queue to amq.topic on the shared RabbitMQ
// (brokertest.AMQPQueue).
func amqpQueue(t *testing.T) (string, <-chan amqp.Delivery) {
	return brokertest.AMQPQueue(t, "herald.server")
}

// TestBrokerDestinationTransformed: a subscription's transform applies to
// a broker destination as to a webhook: the NATS message (binary mode)
// carries the transform's output as its data, datacontenttype
// application/json, the event's own id; a null skips the event (filtered,
// nothing published).
func TestBrokerDestinationTransformed(t *testing.T) {
	url, got := coreSubscriber(t, "chat.>")
	b := setup(t)
	sub := b.subscribe(map[string]any{"name": "chat",
		"destination": map[string]any{"type": "nats", "url": url, "subject": "chat.{type}", "jetstream": false},
		"transform":   map[string]any{"cel": `data.amount > 100.0 ? dyn({"text": "paid " + string(data.amount)}) : null`}})
	publishOrder(b, "big", map[string]any{"amount": 150})
	m, err := got.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != `{"text":"paid 150"}` || m.Header.Get("ce-id") != "big" || m.Header.Get("content-type") != "application/json" {
		t.Fatalf("message %q, headers %v", m.Data, m.Header)
	}
	publishOrder(b, "small", map[string]any{"amount": 5})
	eventually(t, "the small order filtered", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.EventID == "small" {
				return d.Status == "filtered"
			}
		}
		return false
	})
	if m, err := got.NextMsg(50 * time.Millisecond); err == nil {
		t.Fatalf("a filtered event was published: %q", m.Data)
	}
}

// TestBrokerTargetInvalidForEvent: a subject template that one event's
// attributes make invalid ("orders.{subject}" for an event with no
// subject gives an empty segment) ends that delivery at once after one
// attempt (broker_refused, dead-lettered InvalidTarget, never retried
// although the policy allows five), says nothing of the broker's health
// (the endpoint stays enabled, no failure counted), and does not stop the
// next event, whose subject gives a valid target, from being published.
func TestBrokerTargetInvalidForEvent(t *testing.T) {
	url, got := coreSubscriber(t, "orders.>")
	b := setup(t)
	sub := b.subscribe(map[string]any{"name": "by-subject",
		"destination":  map[string]any{"type": "nats", "url": url, "subject": "orders.{subject}", "jetstream": false},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"5s"}, "max_attempts": 5}})

	b.publish("no-subject", "created")
	d := waitEvent(b, sub, "no-subject", "dead_lettered")
	if d.Attempts != 1 || d.LastOutcome == nil || *d.LastOutcome != "broker_refused" ||
		d.DeadLetterReason == nil || *d.DeadLetterReason != "InvalidTarget" {
		t.Fatalf("delivery %+v, want one broker_refused attempt dead-lettered InvalidTarget", d)
	}
	if as := b.attempts(d.ID); len(as) != 1 || as[0].Error == nil || !strings.Contains(*as[0].Error, `resolves to "orders." for this event`) {
		t.Fatalf("attempts %+v, want one naming the resolved subject", as)
	}
	if ep := b.endpoint(b.endpointOf(sub)); ep.State != "enabled" || ep.ConsecutiveFailures != 0 {
		t.Fatalf("endpoint %+v after an invalid target", ep)
	}

	publishEvent(b, map[string]any{"id": "paid", "type": "created", "subject": "paid", "data": map[string]any{}})
	waitEvent(b, sub, "paid", "delivered")
	m, err := got.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "orders.paid" || m.Header.Get("ce-id") != "paid" {
		t.Fatalf("message on %q with id %q, want orders.paid and paid", m.Subject, m.Header.Get("ce-id"))
	}
}

// coreSubscriber starts a nats-server of the test's own and subscribes to
// subject on it (core NATS); it returns the server's URL.
func coreSubscriber(t *testing.T, subject string) (string, *nats.Subscription) {
	srv := brokertest.StartNATS(t)
	url := "nats://" + srv.Addr()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	return url, sub
}
