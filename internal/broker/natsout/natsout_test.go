package natsout_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
	"github.com/herald-events/herald/internal/broker/natsout"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/ids"
)

var connectors = map[string]broker.Connector{broker.TypeNATS: natsout.Connect}

// stream makes a JetStream stream on url (connected to with opts) for the
// subjects under a new prefix and returns the prefix and a consumer of the
// stream; the stream is deleted when the test ends.
func stream(t *testing.T, url string, opts ...nats.Option) (string, jetstream.Consumer) {
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
	name := strings.ToUpper(strings.ReplaceAll(ids.New("t_", time.Now()), "_", ""))
	prefix := "herald.test." + strings.ToLower(name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		js.DeleteStream(ctx, name)
	})
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "herald-test", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return prefix, c
}

// next reads the consumer's next message within 10 seconds.
func next(t *testing.T, c jetstream.Consumer) jetstream.Msg {
	t.Helper()
	msgs, err := c.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range msgs.Messages() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.DoubleAck(ctx); err != nil { // acknowledged before a restart
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("no message in the stream: %v", msgs.Error())
	return nil
}

func publish(p *broker.Pool, d *broker.Destination, m broker.Message, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Publish(ctx, d, m)
}

// TestJetStreamBinary: a binary-mode event arrives in the stream, on the
// subject its template gives, with the binding's ce- headers
// (percent-encoded values), ce-datacontenttype and content-type, and the data as payload.
func TestJetStreamBinary(t *testing.T) {
	prefix, c := stream(t, brokertest.NATSURL)
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: prefix + ".{type}", JetStream: true}
	if err := publish(p, d, brokertest.Binary("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m := next(t, c)
	if m.Subject() != prefix+".order.created" {
		t.Errorf("subject %q", m.Subject())
	}
	h := m.Headers()
	for name, want := range map[string]string{
		"ce-specversion": "1.0", "ce-id": "evt-1", "ce-source": "/herald/test", "ce-type": "order.created",
		"ce-subject": "orders/42", "ce-tenant": "Zo%C3%AB%20Ltd", "ce-datacontenttype": "application/json", "content-type": "application/json",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if string(m.Data()) != `{"order":42}` {
		t.Errorf("payload %s", m.Data())
	}
}

// TestJetStreamStructured: structured mode carries the JSON event format
// as the payload, content-type application/cloudevents+json, no ce-
// header.
func TestJetStreamStructured(t *testing.T) {
	prefix, c := stream(t, brokertest.NATSURL)
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: prefix + ".x", JetStream: true, Mode: broker.ModeStructured}
	if err := publish(p, d, brokertest.Structured("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m := next(t, c)
	if ct := m.Headers().Get("content-type"); ct != "application/cloudevents+json" {
		t.Errorf("content-type %q", ct)
	}
	if id := m.Headers().Get("ce-id"); id != "" {
		t.Errorf("ce-id header %q in structured mode", id)
	}
	var ev map[string]any
	if err := json.Unmarshal(m.Data(), &ev); err != nil || ev["id"] != "evt-1" || ev["type"] != "order.created" {
		t.Errorf("payload %s (%v)", m.Data(), err)
	}
}

// TestCorePublish: without JetStream the publish is a core one, flushed;
// a subscriber receives it with the headers.
func TestCorePublish(t *testing.T) {
	nc, err := nats.Connect(brokertest.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subject := "herald.core." + strings.ToLower(ids.New("t_", time.Now()))
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: subject}
	if err := publish(p, d, brokertest.Binary("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get("ce-type") != "order.created" || string(m.Data) != `{"order":42}` {
		t.Errorf("got %v %s", m.Header, m.Data)
	}
}

// TestFailures: each failure has its outcome: no stream for a JetStream
// subject is refused, so is a template that resolves to a subject with an
// empty token; a closed port is unreachable; a server that accepts the
// connection and says nothing times out; a loopback broker under the
// default policy is refused by the destination guard.
func TestFailures(t *testing.T) {
	p := brokertest.Pool(t, connectors)
	nostream := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: "herald.nostream." + strings.ToLower(ids.New("t_", time.Now())), JetStream: true}
	brokertest.WantOutcome(t, publish(p, nostream, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)

	m := brokertest.Binary("a")
	m.Fields.Subject = ""
	empty := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: "herald.{subject}", JetStream: true}
	brokertest.WantOutcome(t, publish(p, empty, m, 10*time.Second), broker.OutcomeRefused)

	closed := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: "nats://" + brokertest.ClosedPort(t)}, Subject: "a", JetStream: true}
	brokertest.WantOutcome(t, publish(p, closed, brokertest.Binary("a"), 10*time.Second), broker.OutcomeUnreachable)

	silent := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: "nats://" + brokertest.Silent(t)}, Subject: "a", JetStream: true}
	brokertest.WantOutcome(t, publish(p, silent, brokertest.Binary("a"), 500*time.Millisecond), broker.OutcomeTimeout)

	guarded := brokertest.PoolWith(t, connectors, destination.Policy{})
	err := publish(guarded, &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: "a"}, brokertest.Binary("a"), 10*time.Second)
	if !destination.IsBlocked(err) {
		t.Fatalf("loopback broker under the default policy: %v, want a destination block", err)
	}
}

// TestRestartedServer: a server of the test's own is killed — the publish
// is unreachable — and restarted: the next publish reconnects and is
// acknowledged by the stream, kept across the restart in its store.
func TestRestartedServer(t *testing.T) {
	srv := brokertest.StartNATS(t)
	url := "nats://" + srv.Addr()
	prefix, c := stream(t, url)
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: url}, Subject: prefix + ".{type}", JetStream: true}
	if err := publish(p, d, brokertest.Binary("one"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, c)
	srv.Stop()
	brokertest.WantOutcome(t, publish(p, d, brokertest.Binary("two"), 5*time.Second), broker.OutcomeUnreachable)
	srv.Start()
	if err := publish(p, d, brokertest.Binary("three"), 10*time.Second); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	// The durable consumer, its test connection reconnected, reads on
	// ("one" may come again: a SIGKILL can lose its acknowledgement).
	for i := 0; ; i++ {
		got := next(t, c).Headers().Get("ce-type")
		if got == "three" {
			break
		}
		if got != "one" || i == 2 {
			t.Fatalf("after the restart the stream holds type %q", got)
		}
	}
}

// TestReservedSubjects: a destination whose subject is all the event's
// ({type}) would, for an event of type $KV.<bucket>.<key>, overwrite an
// entry of a JetStream key-value bucket (its stream captures the
// subject); such a type ($ subjects: $JS.API, $KV, $SYS, …; and _INBOX.,
// request-reply answers) is refused at once as InvalidTarget and nothing
// is sent: the entry keeps its value.
func TestReservedSubjects(t *testing.T) {
	prefix, c := stream(t, brokertest.NATSURL)
	nc, err := nats.Connect(brokertest.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bucket := "herald_test_" + strings.ToLower(ids.New("kv_", time.Now()))
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	defer js.DeleteKeyValue(context.Background(), bucket)
	if _, err := kv.PutString(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	p := brokertest.Pool(t, connectors)
	for _, jetStream := range []bool{false, true} {
		d := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: "{type}", JetStream: jetStream}
		for _, typ := range []string{"$KV." + bucket + ".k", "_INBOX.abc"} {
			if err := publish(p, d, brokertest.Binary(typ), 10*time.Second); !broker.InvalidTarget(err) {
				t.Errorf("jetstream %v, type %q: %v, want an invalid target", jetStream, typ, err)
			}
		}
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("the bucket's entry after the publishes: %v", err)
	}
	d := &broker.Destination{Type: broker.TypeNATS, Settings: broker.Settings{URL: brokertest.NATSURL}, Subject: "{type}", JetStream: true}
	if err := publish(p, d, brokertest.Binary(prefix+".ok"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); m.Subject() != prefix+".ok" {
		t.Errorf("subject %q", m.Subject())
	}
}
