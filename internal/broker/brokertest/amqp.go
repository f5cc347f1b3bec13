package brokertest

import (
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/herald-events/herald/internal/ids"
)

// AMQPQueue binds a new exclusive queue on the shared RabbitMQ to
// amq.topic for the routing keys under a new prefix (namespace, then a
// new id); it returns the prefix and what arrives in the queue. The queue
// goes with its connection when the test ends.
func AMQPQueue(t testing.TB, namespace string) (string, <-chan amqp.Delivery) {
	t.Helper()
	ch := AMQPChannel(t)
	prefix := namespace + "." + strings.ToLower(ids.New("t_", time.Now()))
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, prefix+".#", "amq.topic", false, nil); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return prefix, deliveries
}

// AMQPChannel is a channel on a new connection to the shared RabbitMQ,
// closed when the test ends (with the exclusive queues it declared).
func AMQPChannel(t testing.TB) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
