package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-events/herald/internal/ids"
)

// TestDeletedSourceForgotten: deleting a source removes what its consumer
// kept at the broker: a NATS source's durable consumer that Herald named
// (herald-<id>), but not one the source named (the user's), and an MQTT
// source's persistent session.
func TestDeletedSourceForgotten(t *testing.T) {
	b, sig := sourceSetup(t)
	st := newJSStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := func(body map[string]any) string {
		t.Helper()
		var src sourceRes
		if code, raw := b.do("POST", "/v1/sources", body, &src); code != 201 {
			t.Fatalf("create: %d %s", code, raw)
		}
		sig.Connected.WaitOrTimeout()
		return src.ID
	}
	remove := func(id string) {
		t.Helper()
		if code, raw := b.do("DELETE", "/v1/sources/"+id, nil, nil); code != 204 {
			t.Fatalf("delete: %d %s", code, raw)
		}
		sig.Forgotten.WaitOrTimeout()
	}

	ours := create(map[string]any{"type": "nats", "url": natsURL, "subject": st.subject + ".a"})
	if _, err := st.js.Consumer(ctx, st.name, "herald-"+ours); err != nil {
		t.Fatalf("the source's durable consumer: %v", err)
	}
	remove(ours)
	if _, err := st.js.Consumer(ctx, st.name, "herald-"+ours); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the deleted source's durable consumer: %v, want it deleted", err)
	}
	theirs := "user-" + ids.New("", time.Now())
	remove(create(map[string]any{"type": "nats", "url": natsURL, "subject": st.subject + ".b", "durable": theirs}))
	if _, err := st.js.Consumer(ctx, st.name, theirs); err != nil {
		t.Fatalf("the durable consumer the source named: %v, want it kept", err)
	}

	topic := "herald/test/" + ids.New("", time.Now()) + "/#"
	mqttSrc := create(map[string]any{"type": "mqtt", "url": mqttURL, "topic": topic})
	remove(mqttSrc)
	sum := sha256.Sum256([]byte(topic))
	if mqttSessionPresent(t, "herald-"+mqttSrc+"-"+hex.EncodeToString(sum[:4])) {
		t.Fatal("the deleted MQTT source's session is still kept by the broker")
	}
}

// mqttSessionPresent reports whether Mosquitto holds a session for
// clientID (a resume of it says so), and ends it.
func mqttSessionPresent(t *testing.T, clientID string) bool {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:1883", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := c.Connect(ctx, &paho.Connect{ClientID: clientID, KeepAlive: 30, CleanStart: false})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Disconnect(&paho.Disconnect{})
	return ack.SessionPresent
}
