package amqpout_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/amqpout"
	"github.com/herald-events/herald/internal/broker/brokertest"
)

var connectors = map[string]broker.Connector{broker.TypeAMQP: amqpout.Connect}

// queue binds a new queue to amq.topic (brokertest.AMQPQueue).
func queue(t *testing.T) (string, <-chan amqp.Delivery) {
	return brokertest.AMQPQueue(t, "herald.test")
}

func next(t *testing.T, deliveries <-chan amqp.Delivery) amqp.Delivery {
	t.Helper()
	select {
	case d := <-deliveries:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no message in the queue after 10s")
	}
	return amqp.Delivery{}
}

func publish(p *broker.Pool, d *broker.Destination, m broker.Message, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Publish(ctx, d, m)
}

// TestBinary: a binary-mode event is confirmed and arrives with the
// routing key its template gives, each attribute a cloudEvents:NAME
// application property (the value as the event has it), the
// datacontenttype as content-type, persistent.
func TestBinary(t *testing.T) {
	prefix, deliveries := queue(t)
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: brokertest.AMQPURL}, Exchange: "amq.topic", RoutingKey: prefix + ".{type}"}
	if err := publish(p, d, brokertest.Binary("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m := next(t, deliveries)
	if m.RoutingKey != prefix+".order.created" || m.ContentType != "application/json" || m.DeliveryMode != amqp.Persistent {
		t.Errorf("routing key %q, content type %q, delivery mode %d", m.RoutingKey, m.ContentType, m.DeliveryMode)
	}
	for name, want := range map[string]string{
		"cloudEvents:specversion": "1.0", "cloudEvents:id": "evt-1", "cloudEvents:source": "/herald/test",
		"cloudEvents:type": "order.created", "cloudEvents:subject": "orders/42", "cloudEvents:tenant": "Zoë Ltd",
	} {
		if got := m.Headers[name]; got != want {
			t.Errorf("property %s = %v, want %q", name, got, want)
		}
	}
	if string(m.Body) != `{"order":42}` {
		t.Errorf("body %s", m.Body)
	}
}

// TestStructured: structured mode carries the JSON event format as the
// body, content type application/cloudevents+json.
func TestStructured(t *testing.T) {
	prefix, deliveries := queue(t)
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: brokertest.AMQPURL}, Exchange: "amq.topic", RoutingKey: prefix + ".s", Mode: broker.ModeStructured}
	if err := publish(p, d, brokertest.Structured("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m := next(t, deliveries)
	var ev map[string]any
	if m.ContentType != "application/cloudevents+json" || len(m.Headers) != 0 || json.Unmarshal(m.Body, &ev) != nil || ev["id"] != "evt-1" {
		t.Errorf("content type %q, properties %v, body %s", m.ContentType, m.Headers, m.Body)
	}
}

// TestFailures: an exchange that does not exist (the channel closed with
// 404) and a routing key no queue is bound to (returned: mandatory) are
// refused, and a publish on the same connection after them still
// succeeds; bad credentials are refused; a closed port is unreachable; a
// server that accepts and says nothing times out.
func TestFailures(t *testing.T) {
	prefix, deliveries := queue(t)
	p := brokertest.Pool(t, connectors)
	noExchange := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: brokertest.AMQPURL}, Exchange: "herald-no-such-exchange", RoutingKey: "a"}
	brokertest.WantOutcome(t, publish(p, noExchange, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
	unroutable := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: brokertest.AMQPURL}, Exchange: "amq.topic", RoutingKey: "herald.nobody." + prefix}
	brokertest.WantOutcome(t, publish(p, unroutable, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
	ok := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: brokertest.AMQPURL}, Exchange: "amq.topic", RoutingKey: prefix + ".ok"}
	if err := publish(p, ok, brokertest.Binary("a"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, deliveries)

	badAuth := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: "amqp://guest:wrong@127.0.0.1:5672/"}, Exchange: "amq.topic", RoutingKey: "a"}
	brokertest.WantOutcome(t, publish(p, badAuth, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)
	closed := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: "amqp://guest:guest@" + brokertest.ClosedPort(t) + "/"}, Exchange: "amq.topic", RoutingKey: "a"}
	brokertest.WantOutcome(t, publish(p, closed, brokertest.Binary("a"), 10*time.Second), broker.OutcomeUnreachable)
	silent := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: "amqp://guest:guest@" + brokertest.Silent(t) + "/"}, Exchange: "amq.topic", RoutingKey: "a"}
	brokertest.WantOutcome(t, publish(p, silent, brokertest.Binary("a"), 500*time.Millisecond), broker.OutcomeTimeout)
}

// TestBrokerBack: the broker goes away (a proxy in front of it closes
// every connection and stops listening: the shared RabbitMQ is never
// stopped) — the publish is unreachable — and comes back: the next
// publish reconnects and is confirmed.
func TestBrokerBack(t *testing.T) {
	prefix, deliveries := queue(t)
	proxy := brokertest.StartProxy(t, "127.0.0.1:5672")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: "amqp://guest:guest@" + proxy.Addr() + "/"}, Exchange: "amq.topic", RoutingKey: prefix + ".{type}"}
	if err := publish(p, d, brokertest.Binary("one"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, deliveries)
	proxy.Stop()
	brokertest.WantOutcome(t, publish(p, d, brokertest.Binary("two"), 5*time.Second), broker.OutcomeUnreachable)
	proxy.Start()
	if err := publish(p, d, brokertest.Binary("three"), 10*time.Second); err != nil {
		t.Fatalf("after the broker came back: %v", err)
	}
	if got := next(t, deliveries).Headers["cloudEvents:type"]; got != "three" {
		t.Errorf("type %v", got)
	}
}

// TestReservedRoutingKeys: on the default exchange a routing key names a
// queue; a routing key of {type} would let an event of type amq.gen-…
// (a server-named queue: another client's private or reply queue) put a
// message in that queue. Such a type is refused at once as InvalidTarget
// and the queue stays empty; so is a routing key the event leaves empty.
func TestReservedRoutingKeys(t *testing.T) {
	ch := brokertest.AMQPChannel(t)
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: brokertest.AMQPURL}, RoutingKey: "{type}"}
	if err := publish(p, d, brokertest.Binary(q.Name), 10*time.Second); !broker.InvalidTarget(err) {
		t.Errorf("type %q: %v, want an invalid target", q.Name, err)
	}
	if q, err = ch.QueueDeclarePassive(q.Name, false, true, true, false, nil); err != nil || q.Messages != 0 {
		t.Errorf("the queue holds %d messages (%v), want none", q.Messages, err)
	}
	m := brokertest.Binary("a")
	m.Fields.Subject = ""
	empty := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: brokertest.AMQPURL}, Exchange: "amq.direct", RoutingKey: "{subject}"}
	if err := publish(p, empty, m, 10*time.Second); !broker.InvalidTarget(err) {
		t.Errorf("an empty subject: %v, want an invalid target", err)
	}
}

// TestBrokerReadsNothing: a broker that stops reading the connection —
// as RabbitMQ does to a publishing connection while a memory or disk alarm
// lasts, its heartbeats still coming — cannot hold a publish for ever: a
// small message's publish ends when no confirm comes by the attempt's
// deadline and the channel's close is not answered (amqp091-go waits for
// the answer without a timeout), a large one when its write cannot end
// (amqp091-go's writes have no deadline); each within broker.WriteTimeout
// of its deadline, the connection then dropped.
func TestBrokerReadsNothing(t *testing.T) {
	for _, size := range []int{16, 32 << 20} {
		prefix, deliveries := queue(t)
		addr, deafen := brokertest.DeafAMQPProxy(t)
		p := brokertest.Pool(t, connectors)
		d := &broker.Destination{Type: broker.TypeAMQP, Settings: broker.Settings{URL: "amqp://guest:guest@" + addr + "/"}, Exchange: "amq.topic", RoutingKey: prefix + ".x"}
		if err := publish(p, d, brokertest.Binary("a"), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		next(t, deliveries)
		deafen()
		m := brokertest.Binary("b")
		m.Body = make([]byte, size)
		done := make(chan error, 1)
		go func() { done <- publish(p, d, m, time.Second) }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%d bytes: published to a broker that reads nothing", size)
			}
		case <-time.After(broker.WriteTimeout + 10*time.Second):
			t.Fatalf("%d bytes: the publish still waits %s after its 1s deadline", size, broker.WriteTimeout+10*time.Second)
		}
	}
}
