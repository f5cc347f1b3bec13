package mqttout_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/brokertest"
	"github.com/herald-events/herald/internal/broker/mqttout"
	"github.com/herald-events/herald/internal/ids"
)

var connectors = map[string]broker.Connector{broker.TypeMQTT: mqttout.Connect}

// subscribe subscribes, at QoS 1, to filter on the broker at rawURL and
// returns what arrives.
func subscribe(t *testing.T, rawURL, filter string) <-chan *paho.Publish {
	t.Helper()
	u, _ := url.Parse(rawURL)
	nc, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *paho.Publish, 16)
	c := paho.NewClient(paho.ClientConfig{Conn: nc, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(r paho.PublishReceived) (bool, error) { got <- r.Packet; return true, nil },
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: strings.ToLower(ids.New("sub_", time.Now())), CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	return got
}

func next(t *testing.T, got <-chan *paho.Publish) *paho.Publish {
	t.Helper()
	select {
	case p := <-got:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived after 10s")
	}
	return nil
}

func publish(p *broker.Pool, d *broker.Destination, m broker.Message, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Publish(ctx, d, m)
}

func prefix() string { return "herald/test/" + strings.ToLower(ids.New("t_", time.Now())) }

// TestBinary: a binary-mode event is acknowledged (PUBACK) and arrives on
// the topic its template gives, each attribute a User Property of its
// name, the datacontenttype as Content Type, the data as payload.
func TestBinary(t *testing.T) {
	pre := prefix()
	got := subscribe(t, brokertest.MQTTURL, pre+"/#")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: brokertest.MQTTURL}, Topic: pre + "/{type}", QoS: 1}
	if err := publish(p, d, brokertest.Binary("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m := next(t, got)
	if m.Topic != pre+"/order.created" || m.QoS != 1 || m.Properties.ContentType != "application/json" {
		t.Errorf("topic %q, qos %d, content type %q", m.Topic, m.QoS, m.Properties.ContentType)
	}
	for name, want := range map[string]string{
		"specversion": "1.0", "id": "evt-1", "source": "/herald/test", "type": "order.created",
		"subject": "orders/42", "tenant": "Zoë Ltd",
	} {
		if v := m.Properties.User.Get(name); v != want {
			t.Errorf("user property %s = %q, want %q", name, v, want)
		}
	}
	if string(m.Payload) != `{"order":42}` {
		t.Errorf("payload %s", m.Payload)
	}
}

// TestStructured: structured mode carries the JSON event format with
// Content Type application/cloudevents+json and no user property.
func TestStructured(t *testing.T) {
	pre := prefix()
	got := subscribe(t, brokertest.MQTTURL, pre+"/#")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: brokertest.MQTTURL}, Topic: pre + "/s", QoS: 1, Mode: broker.ModeStructured}
	if err := publish(p, d, brokertest.Structured("order.created"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m := next(t, got)
	var ev map[string]any
	if m.Properties.ContentType != "application/cloudevents+json" || len(m.Properties.User) != 0 ||
		json.Unmarshal(m.Payload, &ev) != nil || ev["id"] != "evt-1" {
		t.Errorf("content type %q, user properties %v, payload %s", m.Properties.ContentType, m.Properties.User, m.Payload)
	}
}

// TestFailures: a broker of the test's own whose ACL lets anonymous
// clients write only under allowed/ answers a publish elsewhere with
// PUBACK 0x87 (not authorized): refused; and a template that resolves to
// a topic with a wildcard is refused before anything is sent; a closed
// port is unreachable; a server that accepts and says nothing times out.
func TestFailures(t *testing.T) {
	acl := t.TempDir() + "/acl"
	writeFile(t, acl, "topic readwrite allowed/#\n")
	srv := brokertest.StartMosquitto(t, "acl_file "+acl)
	p := brokertest.Pool(t, connectors)
	u := "mqtt://" + srv.Addr()
	if err := publish(p, &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: u}, Topic: "allowed/x", QoS: 1}, brokertest.Binary("a"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	denied := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: u}, Topic: "denied/x", QoS: 1}
	brokertest.WantOutcome(t, publish(p, denied, brokertest.Binary("a"), 10*time.Second), broker.OutcomeRefused)

	m := brokertest.Binary("a")
	m.Fields.Subject = "a/+"
	wild := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: u}, Topic: "allowed/{subject}", QoS: 1}
	brokertest.WantOutcome(t, publish(p, wild, m, 10*time.Second), broker.OutcomeRefused)

	closed := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: "mqtt://" + brokertest.ClosedPort(t)}, Topic: "a", QoS: 1}
	brokertest.WantOutcome(t, publish(p, closed, brokertest.Binary("a"), 10*time.Second), broker.OutcomeUnreachable)
	silent := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: "mqtt://" + brokertest.Silent(t)}, Topic: "a", QoS: 1}
	brokertest.WantOutcome(t, publish(p, silent, brokertest.Binary("a"), 500*time.Millisecond), broker.OutcomeTimeout)
}

// TestRestartedBroker: a broker of the test's own is killed — the publish
// is unreachable — and restarted: the next publish reconnects and is
// acknowledged, and a subscriber receives it.
func TestRestartedBroker(t *testing.T) {
	srv := brokertest.StartMosquitto(t, "")
	u := "mqtt://" + srv.Addr()
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: u}, Topic: "herald/{type}", QoS: 1}
	if err := publish(p, d, brokertest.Binary("one"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	brokertest.WantOutcome(t, publish(p, d, brokertest.Binary("two"), 5*time.Second), broker.OutcomeUnreachable)
	srv.Start()
	got := subscribe(t, u, "herald/#")
	if err := publish(p, d, brokertest.Binary("three"), 10*time.Second); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if m := next(t, got); m.Properties.User.Get("type") != "three" {
		t.Errorf("after the restart: %v", m.Properties.User)
	}
}

// TestTargetsFromAttributes: an event whose type puts in the topic what
// Mosquitto takes for a malformed packet (a C1 control character, a
// Unicode noncharacter: MQTT's UTF-8 rules) or a topic of the broker's own
// ($SYS/...) is refused at once as InvalidTarget and nothing is
// published: the shared connection stays up and the next event goes
// through it.
func TestTargetsFromAttributes(t *testing.T) {
	pre := prefix()
	got := subscribe(t, brokertest.MQTTURL, pre+"/#")
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: brokertest.MQTTURL}, Topic: "{type}", QoS: 1}
	for _, typ := range []string{pre + "/a\u0085b", pre + "/a\uffffb", pre + "/a\ufdd0b", "$SYS/broker/x"} {
		err := publish(p, d, brokertest.Binary(typ), 10*time.Second)
		if !broker.InvalidTarget(err) {
			t.Errorf("type %q: %v, want an invalid target", typ, err)
		}
	}
	if err := publish(p, d, brokertest.Binary(pre+"/ok"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if m := next(t, got); m.Topic != pre+"/ok" {
		t.Errorf("arrived on %q, want %s/ok alone", m.Topic, pre)
	}
}

// deafBroker is an MQTT 5 server on loopback that accepts each CONNECT
// and then reads nothing more: the client's writes fill the sockets'
// buffers and block.
func deafBroker(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				r := bufio.NewReader(c)
				if _, err := r.ReadByte(); err != nil { // CONNECT's fixed header
					return
				}
				n, shift := 0, 0
				for {
					b, err := r.ReadByte()
					if err != nil {
						return
					}
					n |= int(b&0x7f) << shift
					if b&0x80 == 0 {
						break
					}
					shift += 7
				}
				if _, err := io.ReadFull(r, make([]byte, n)); err != nil {
					return
				}
				c.Write([]byte{0x20, 3, 0, 0, 0}) // CONNACK: no session, success, no properties
			}()
		}
	}()
	return l.Addr().String()
}

// TestBrokerReadsNothing: a broker that stops reading the connection
// cannot hold a publish of a large message past the write bound: the
// write fails and the publish ends, the connection broken.
func TestBrokerReadsNothing(t *testing.T) {
	p := brokertest.Pool(t, connectors)
	d := &broker.Destination{Type: broker.TypeMQTT, Settings: broker.Settings{URL: "mqtt://" + deafBroker(t)}, Topic: "a", QoS: 1}
	m := brokertest.Binary("a")
	m.Body = make([]byte, 32<<20)
	done := make(chan error, 1)
	go func() { done <- publish(p, d, m, time.Second) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("published to a broker that reads nothing")
		}
	case <-time.After(broker.WriteTimeout + 10*time.Second):
		t.Fatalf("the publish still waits %s after its 1s deadline", broker.WriteTimeout+10*time.Second)
	}
}
