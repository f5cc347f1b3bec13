package process

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
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

// The sourceBroker of each broker: the shared NATS, RabbitMQ and
// Mosquitto of the project's machines, and a kfake cluster in the test
// process (no Kafka broker runs there) that Herald's process connects to.

// publishTimeout bounds one publish call of a sourceBroker.
const publishTimeout = 20 * time.Second

// testName is a new name of the test's own, in lower case, after prefix.
func testName(prefix string) string { return prefix + strings.ToLower(ids.New("", time.Now())) }

// natsBroker is a JetStream stream of the test's own.
type natsBroker struct {
	js              jetstream.JetStream
	stream, subject string
}

func openNATSBroker(t *testing.T) sourceBroker {
	t.Helper()
	nc, err := nats.Connect(brokertest.NATSURL, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s: %v", brokertest.NATSURL, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := testName("pt")
	b := &natsBroker{js: js, stream: strings.ToUpper(name), subject: name}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: b.stream, Subjects: []string{b.subject + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, b.stream)
	})
	return b
}

func (b *natsBroker) body() map[string]any {
	return map[string]any{"type": "nats", "url": brokertest.NATSURL, "stream": b.stream, "subject": b.subject + ".>", "format": "raw", "wrap": sourceWrap}
}

func (b *natsBroker) publish(from, to int) error {
	acks := make([]jetstream.PubAckFuture, 0, to-from)
	for i := from; i < to; i++ {
		a, err := b.js.PublishAsync(b.subject+".o", sourcePayload(i))
		if err != nil {
			return err
		}
		acks = append(acks, a)
	}
	deadline := time.NewTimer(publishTimeout)
	defer deadline.Stop()
	for _, a := range acks {
		select {
		case <-a.Ok():
		case err := <-a.Err():
			return err
		case <-deadline.C:
			return errors.New("no PubAck in time")
		}
	}
	return nil
}

// eventID: the stream and its sequence (from 1).
func (b *natsBroker) eventID(i int) string { return b.stream + "-" + strconv.Itoa(i+1) }

func (b *natsBroker) keeps() bool { return true }

// amqpBroker is a durable queue of the test's own on RabbitMQ, published
// to with publisher confirms.
type amqpBroker struct {
	ch    *amqp.Channel
	queue string
}

func openAMQPBroker(t *testing.T) sourceBroker {
	t.Helper()
	conn, err := amqp.Dial(brokertest.AMQPURL)
	if err != nil {
		t.Fatalf("RabbitMQ at %s: %v", brokertest.AMQPURL, err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	b := &amqpBroker{ch: ch, queue: testName("pt.")}
	if err == nil {
		_, err = ch.QueueDeclare(b.queue, true, false, false, false, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(b.queue, false, false, false) })
	return b
}

func (b *amqpBroker) body() map[string]any {
	return map[string]any{"type": "amqp", "url": brokertest.AMQPURL, "queue": b.queue, "format": "raw", "wrap": sourceWrap}
}

func (b *amqpBroker) publish(from, to int) error {
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	confirms := make([]*amqp.DeferredConfirmation, 0, to-from)
	for i := from; i < to; i++ {
		c, err := b.ch.PublishWithDeferredConfirmWithContext(ctx, "", b.queue, true, false,
			amqp.Publishing{MessageId: b.eventID(i), DeliveryMode: amqp.Persistent, Body: sourcePayload(i)})
		if err != nil {
			return err
		}
		confirms = append(confirms, c)
	}
	for i, c := range confirms {
		if ok, err := c.WaitContext(ctx); err != nil || !ok {
			return fmt.Errorf("message %d not confirmed (%v)", from+i, err)
		}
	}
	return nil
}

// eventID: the message's message-id.
func (b *amqpBroker) eventID(i int) string { return b.queue + "-" + strconv.Itoa(i) }

func (b *amqpBroker) keeps() bool { return true }

// mqttBroker is a topic of the test's own on Mosquitto, published to at
// QoS 1.
type mqttBroker struct {
	c     *paho.Client
	topic string
}

func openMQTTBroker(t *testing.T) sourceBroker {
	t.Helper()
	addr := strings.TrimPrefix(brokertest.MQTTURL, "mqtt://")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("Mosquitto at %s: %v", addr, err)
	}
	b := &mqttBroker{c: paho.NewClient(paho.ClientConfig{Conn: conn}), topic: testName("pt/") + "/o"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.c.Connect(ctx, &paho.Connect{ClientID: testName("pt-pub-"), CleanStart: true, KeepAlive: 30}); err != nil {
		conn.Close()
		t.Fatalf("connecting to Mosquitto: %v", err)
	}
	t.Cleanup(func() { _ = b.c.Disconnect(&paho.Disconnect{}) })
	return b
}

func (b *mqttBroker) body() map[string]any {
	return map[string]any{"type": "mqtt", "url": brokertest.MQTTURL, "topic": strings.TrimSuffix(b.topic, "/o") + "/#", "format": "raw", "wrap": sourceWrap}
}

func (b *mqttBroker) publish(from, to int) error {
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	for i := from; i < to; i++ {
		if _, err := b.c.Publish(ctx, &paho.Publish{Topic: b.topic, QoS: 1, Payload: sourcePayload(i)}); err != nil {
			return err
		}
	}
	return nil
}

// eventID: the SHA-256 of topic, a zero byte and payload, in hex.
func (b *mqttBroker) eventID(i int) string {
	sum := sha256.Sum256(append(append([]byte(b.topic), 0), sourcePayload(i)...))
	return hex.EncodeToString(sum[:])
}

func (b *mqttBroker) keeps() bool { return false }

// kafkaBroker is a kfake cluster of the test's own holding one topic of
// three partitions; eventID needs the partition and offset each message
// was given.
type kafkaBroker struct {
	k     *brokertest.Kafka
	p     *kgo.Client
	topic string
	ids   [sourceTotal]string
}

func openKafkaBroker(t *testing.T) sourceBroker {
	t.Helper()
	topic := testName("pt-")
	k := brokertest.StartKafka(t, topic)
	p, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &kafkaBroker{k: k, p: p, topic: topic}
}

func (b *kafkaBroker) body() map[string]any {
	return map[string]any{"type": "kafka", "brokers": b.k.Addrs(), "topic": b.topic, "format": "raw", "wrap": sourceWrap}
}

func (b *kafkaBroker) publish(from, to int) error {
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: sourcePayload(i)})
	}
	if err := b.p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	for j, r := range recs {
		b.ids[from+j] = fmt.Sprintf("%s-%d-%d", r.Topic, r.Partition, r.Offset)
	}
	return nil
}

// eventID: topic, partition and offset.
func (b *kafkaBroker) eventID(i int) string { return b.ids[i] }

func (b *kafkaBroker) keeps() bool { return true }
