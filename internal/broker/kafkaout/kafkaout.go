// Package kafkaout publishes CloudEvents to Kafka (a Connector of
// internal/broker, on franz-go), following the CloudEvents "Kafka Protocol
// Binding" (cloudevents/spec, cloudevents/bindings/kafka-protocol-binding.md):
//   - binary mode: each attribute a record header named ce_NAME, its
//     value the attribute's UTF-8 text; the datacontenttype the
//     content-type header; the data the record's value;
//   - structured mode: the JSON event format as the value, content-type
//     application/cloudevents+json;
//   - the record key is the delivery's ordering key (the event's
//     partitionkey when the subscription orders by key, the binding's
//     "Key Mapping"); without one the record has no key.
//
// Success is a produce acknowledged with acks=all (every in-sync replica;
// franz-go's idempotent producer). A Kafka error code (unknown topic,
// authorization, a record too large, SASL credentials refused: sasl.go)
// or a certificate Herald does not trust is broker_refused; a cluster that
// cannot be reached broker_unreachable; no answer by the attempt's
// deadline broker_timeout.
package kafkaout

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
)

// Retry bounds of a produce within one attempt: a record is tried at most
// recordRetries more times after a retriable failure (a connection error,
// a leader moving) and an unknown topic fails after unknownTopicRetries
// metadata refreshes, so that a cluster that is down or a topic that does
// not exist fails the attempt (whose own retry policy follows) rather
// than wait out its deadline.
const (
	recordRetries       = 2
	unknownTopicRetries = 2
)

// SASL mechanisms a Kafka destination may name.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// conn is a franz-go client of one cluster.
type conn struct {
	cl      *kgo.Client
	sasl    *saslWatch // nil without SASL
	blocked *blockWatch
	broken  atomic.Bool
}

// blockWatch keeps the last dial of a client that the destination guard
// refused: a broker the cluster's metadata advertises (the partition
// leader a produce goes to) is dialled through the guard like the seeds,
// and franz-go, which retries the dial until the attempt's deadline, would
// otherwise say only that the deadline passed.
type blockWatch struct {
	last atomic.Pointer[error]
}

// dial is dial with its refusals kept.
func (w *blockWatch) dial(dial broker.DialFunc) broker.DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := dial(ctx, network, address)
		if destination.IsBlocked(err) {
			w.last.Store(&err)
		}
		return nc, err
	}
}

// explain is err, a failed request of the client, as the guard's refusal
// when a dial was refused and err is not the cluster's own answer (a Kafka
// error code): the outcome is then destination_blocked
// (destination.IsBlocked), with the refused address.
func (w *blockWatch) explain(err error) error {
	last := w.last.Load()
	if err == nil || last == nil || broker.OutcomeOf(err) == broker.OutcomeRefused {
		return err
	}
	return fmt.Errorf("a broker of the cluster (as its metadata advertises it) is at an address the destination guard refuses: %w (%v)", *last, err)
}

// Connect is the Kafka broker.Connector: a client of d.Brokers (seeds;
// the others it learns of from the cluster's metadata are dialled through
// dial too, so each passes the destination guard, and a publish that
// failed after a refused dial is destination_blocked: blockWatch), with
// TLS and SASL as d asks, that must reach a broker by ctx's deadline (a
// metadata request).
func Connect(ctx context.Context, d *broker.Destination, dial broker.DialFunc) (broker.Conn, error) {
	blocked := &blockWatch{}
	opts := []kgo.Opt{
		kgo.SeedBrokers(d.Brokers...),
		kgo.Dialer(Dialer(d.Settings, blocked.dial(dial))),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(recordRetries),
		kgo.UnknownTopicRetries(unknownTopicRetries),
		kgo.ProducerLinger(0),
		kgo.ClientID("herald"),
	}
	var watch *saslWatch
	if d.SASL != nil {
		m, err := Mechanism(d.SASL)
		if err != nil {
			return nil, broker.Refused(err)
		}
		watch = &saslWatch{}
		opts = append(opts, kgo.SASL(watch.wrap(m)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, broker.Refused(err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, blocked.explain(watch.classify(err))
	}
	return &conn{cl: cl, sasl: watch, blocked: blocked}, nil
}

// Mechanism is the franz-go SASL mechanism of s: PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512 (the names broker.Settings.Check takes).
func Mechanism(s *broker.SASL) (sasl.Mechanism, error) {
	switch strings.ToUpper(s.Mechanism) {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("unknown SASL mechanism %q", s.Mechanism)
}

// Dialer is franz-go's dial function for s's brokers: dial, then TLS
// when s asks for it (broker.DialTLS: s.TLS's roots and server name).
func Dialer(s broker.Settings, dial broker.DialFunc) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		return broker.DialTLS(ctx, dial, s, network, host)
	}
}

// Publish produces m to topic and waits for its acks=all acknowledgement.
func (c *conn) Publish(ctx context.Context, d *broker.Destination, topic string, m broker.Message) error {
	rec := &kgo.Record{Topic: topic, Value: m.Body, Headers: headers(m)}
	if m.Key != "" {
		rec.Key = []byte(m.Key)
	}
	err := c.blocked.explain(c.sasl.classify(c.cl.ProduceSync(ctx, rec).FirstErr()))
	if broker.OutcomeOf(err) == broker.OutcomeUnreachable {
		c.broken.Store(true)
	}
	return err
}

// headers are the record's headers (see the package comment).
func headers(m broker.Message) []kgo.RecordHeader {
	h := make([]kgo.RecordHeader, 0, len(m.Attributes)+1)
	for _, a := range m.Attributes {
		h = append(h, kgo.RecordHeader{Key: "ce_" + a[0], Value: []byte(a[1])})
	}
	if m.ContentType != "" {
		h = append(h, kgo.RecordHeader{Key: "content-type", Value: []byte(m.ContentType)})
	}
	return h
}

// classify names a franz-go error's outcome: a Kafka error code is
// broker_refused.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return broker.Refused(ke)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrRecordTimeout) {
		return broker.TimedOut(err)
	}
	return broker.Unreachable(err)
}

// Broken reports whether a produce found the cluster unreachable: the
// pool then makes a new client, which must reach it first.
func (c *conn) Broken() bool { return c.broken.Load() }

// Close closes the client.
func (c *conn) Close() { c.cl.Close() }
