package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/herald-events/herald/internal/ids"
)

// mqttURL is the Mosquitto every machine of the project runs.
const mqttURL = "mqtt://127.0.0.1:1883"

// mqttPublisher connects an MQTT 5 client to publish with.
func mqttPublisher(t *testing.T) *paho.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:1883", 5*time.Second)
	if err != nil {
		t.Fatalf("Mosquitto at %s: %v", mqttURL, err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "herald-test-" + ids.New("", time.Now()), KeepAlive: 30, CleanStart: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	return c
}

// mqttPublish publishes p at QoS 1 (acknowledged by the broker).
func mqttPublish(t *testing.T, c *paho.Client, p *paho.Publish) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.QoS = 1
	if _, err := c.Publish(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// TestMQTTSourceDelivers: an MQTT source's messages in both modes of the
// CloudEvents MQTT binding reach a webhook subscription once each; a
// garbage message goes to the dead letters and the next still arrives;
// paused, the source reads nothing (its session keeps the messages at the
// broker), and resumed it delivers them.
func TestMQTTSourceDelivers(t *testing.T) {
	b, sig := sourceSetup(t)
	pub := mqttPublisher(t)
	topic := "herald/test/" + ids.New("", time.Now())
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "mqtt", "url": mqttURL, "topic": topic + "/#"}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	sig.Started.WaitOrTimeout()
	sig.Connected.WaitOrTimeout() // subscribed: the session keeps what comes from now on
	mqttPublish(t, pub, &paho.Publish{Topic: topic + "/a", Properties: &paho.PublishProperties{ContentType: "application/cloudevents+json"},
		Payload: []byte(`{"specversion": "1.0", "id": "s-1", "source": "/mqtt", "type": "order.placed", "data": {"n": 1}}`)})
	mqttPublish(t, pub, &paho.Publish{Topic: topic + "/a", Properties: &paho.PublishProperties{ContentType: "text/plain"}, Payload: []byte("garbage")})
	mqttPublish(t, pub, &paho.Publish{Topic: topic + "/b", Payload: []byte(`{"n": 2}`), Properties: &paho.PublishProperties{
		ContentType: "application/json", User: paho.UserProperties{{Key: "specversion", Value: "1.0"}, {Key: "id", Value: "b-2"},
			{Key: "source", Value: "/mqtt"}, {Key: "type", Value: "order.placed"}}}})
	eventually(t, "two delivered, one dead-lettered", func() bool {
		s := b.getSource(src.ID)
		return rc.count() >= 2 && s.Counts.DeadLettered == 1 && s.Counts.Published == 2
	})

	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/pause", nil, nil); code != 200 {
		t.Fatalf("pause: %d %s", code, raw)
	}
	sig.Stopped.WaitOrTimeout()
	for _, id := range []string{"p-1", "p-2"} {
		mqttPublish(t, pub, &paho.Publish{Topic: topic + "/p", Properties: &paho.PublishProperties{ContentType: "application/cloudevents+json"},
			Payload: []byte(`{"specversion": "1.0", "id": "` + id + `", "source": "/mqtt", "type": "t"}`)})
	}
	if n := b.getSource(src.ID).Counts.Received; n != 3 || rc.count() != 2 {
		t.Fatalf("paused: %d received, %d delivered; want still 3 and 2 (the consumer stopped)", n, rc.count())
	}
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/resume", nil, nil); code != 200 {
		t.Fatalf("resume: %d %s", code, raw)
	}
	eventually(t, "the messages published while paused delivered", func() bool { return rc.count() >= 4 })
	if got := eventIDs(t, rc); len(got) != 4 || got["s-1"] != 1 || got["b-2"] != 1 || got["p-1"] != 1 || got["p-2"] != 1 {
		t.Fatalf("delivered %v; want 4 events once each", got)
	}
}

// TestMQTTSourceTopicChanged: a change of an MQTT source's topic starts a
// session of its own: the old topic's messages stop coming (the broker
// keeps a session's subscriptions, which Herald cannot list), the new
// topic's arrive.
func TestMQTTSourceTopicChanged(t *testing.T) {
	b, sig := sourceSetup(t)
	pub := mqttPublisher(t)
	old, next := "herald/test/"+ids.New("", time.Now()), "herald/test/"+ids.New("", time.Now())
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "mqtt", "url": mqttURL, "topic": old + "/#"}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	sig.Connected.WaitOrTimeout()
	ce := func(topic, id string) *paho.Publish {
		return &paho.Publish{Topic: topic + "/x", Properties: &paho.PublishProperties{ContentType: "application/cloudevents+json"},
			Payload: []byte(`{"specversion": "1.0", "id": "` + id + `", "source": "/mqtt", "type": "t"}`)}
	}
	mqttPublish(t, pub, ce(old, "a-1"))
	eventually(t, "a-1 delivered", func() bool { return rc.count() == 1 })

	if code, raw := b.do("PATCH", "/v1/sources/"+src.ID, map[string]any{"topic": next + "/#"}, nil); code != 200 {
		t.Fatalf("PATCH topic: %d %s", code, raw)
	}
	sig.Stopped.WaitOrTimeout()
	sig.Connected.WaitOrTimeout()
	mqttPublish(t, pub, ce(old, "a-2"))
	mqttPublish(t, pub, ce(next, "b-1"))
	eventually(t, "b-1 delivered and counted", func() bool { return rc.count() >= 2 && b.getSource(src.ID).Counts.Published >= 2 })
	if got := eventIDs(t, rc); len(got) != 2 || got["a-1"] != 1 || got["b-1"] != 1 {
		t.Fatalf("delivered %v; want a-1 and b-1 (a-2 is the old topic's)", got)
	}
	if s := b.getSource(src.ID); s.Counts.Received != 2 {
		t.Fatalf("received %d, want 2: the old topic's message came to the new session", s.Counts.Received)
	}
}
