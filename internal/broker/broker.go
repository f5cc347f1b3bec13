// Package broker publishes one encoded CloudEvent to a message broker —
// NATS, RabbitMQ (AMQP 0-9-1), an MQTT v5 broker or Kafka — and says how
// it went: nil only on the broker's acknowledgement, otherwise an *Error
// whose Outcome is broker_unreachable, broker_refused or broker_timeout
// (errors.go). Each broker's client is a package of its own
// (internal/broker/natsout, amqpout, mqttout, kafkaout) that maps the
// Message onto its CloudEvents protocol binding; this package holds what
// they share: the Destination a subscription names, the Message, the
// outcomes, the connection settings destinations and sources share
// (settings.go), the subject templates (template.go), the guarded dialer and
// TLS (dial.go) and the bounded pool of connections (pool.go).
package broker

import (
	"context"
	"net"
)

// Destination types: where a subscription's deliveries go.
const (
	TypeWebhook = "webhook"
	TypeNATS    = "nats"
	TypeAMQP    = "amqp"
	TypeMQTT    = "mqtt"
	TypeKafka   = "kafka"
)

// Content modes of the CloudEvents protocol bindings.
const (
	// ModeBinary (the default, also ""): the attributes travel as the
	// binding's headers or properties, the data as the message body.
	ModeBinary = "binary"
	// ModeStructured: the whole event is the body, in the JSON event
	// format (application/cloudevents+json).
	ModeStructured = "structured"
)

// Destination is a broker a subscription publishes to, as it is stored
// (the subscription's delivery options) and as the clients read it. Its
// connection settings (Settings, whose members sit beside the others in
// its JSON) have secrets: whoever shows a Destination shows its
// Settings.Shown.
type Destination struct {
	// Type is TypeNATS, TypeAMQP, TypeMQTT or TypeKafka.
	Type string `json:"type"`
	// Settings are the broker's address, credentials and TLS.
	Settings
	// Subject (NATS) is a subject template (template.go).
	Subject string `json:"subject,omitempty"`
	// JetStream (NATS): publish to a stream and wait for its PubAck;
	// false: a core publish, flushed to the server.
	JetStream bool `json:"jetstream,omitempty"`
	// Exchange (AMQP) is the exchange published to ("" is the default
	// exchange); RoutingKey a routing key template.
	Exchange   string `json:"exchange,omitempty"`
	RoutingKey string `json:"routing_key,omitempty"`
	// Topic (MQTT, Kafka) is a topic template.
	Topic string `json:"topic,omitempty"`
	// QoS (MQTT) is 0 or 1.
	QoS int `json:"qos,omitempty"`
	// Mode is ModeBinary ("" too) or ModeStructured.
	Mode string `json:"mode,omitempty"`
}

// Structured reports whether d asks for structured mode.
func (d *Destination) Structured() bool { return d.Mode == ModeStructured }

// Message is one event to publish, already encoded.
type Message struct {
	// Attributes are the event's context attributes (specversion, id,
	// source, type, subject, time, dataschema, extensions; not
	// datacontenttype), name and value as the event has them, in binary
	// mode; nil in structured mode or for a body in another schema.
	Attributes [][2]string
	// ContentType is the body's media type: the datacontenttype in binary
	// mode, application/cloudevents+json in structured mode; "" for none.
	ContentType string
	// Body is the message body.
	Body []byte
	// Key is the delivery's ordering key ("" for none): a Kafka record's
	// key.
	Key string
	// Fields are what templates take from the event.
	Fields Fields
}

// Fields are the event attributes a subject, routing key or topic template
// may take (template.go).
type Fields struct {
	Type, Subject, Source string
}

// Conn is a connection to one broker (for Kafka, a client of one cluster),
// safe for concurrent publishes.
type Conn interface {
	// Publish sends m to where d names (the subject, exchange and routing
	// key, or topic target resolved already from d's templates) and waits
	// for the broker's acknowledgement until ctx ends. Its error is an
	// *Error (errors.go).
	Publish(ctx context.Context, d *Destination, target string, m Message) error
	// Broken reports whether the connection can no longer publish (the
	// broker closed it, or it failed): the pool then drops it.
	Broken() bool
	// Close closes the connection.
	Close()
}

// Connector opens a Conn to d's broker, dialling every TCP connection
// with dial (Dialer.DialContext: the destination guard and a timeout) and
// giving up when ctx ends. Its error is an *Error.
type Connector func(ctx context.Context, d *Destination, dial DialFunc) (Conn, error)

// DialFunc makes a TCP connection to address (host:port).
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)
