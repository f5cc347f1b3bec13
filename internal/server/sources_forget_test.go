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

// TestPausedSourceDeletedForgotten: a source deleted while paused has no
// consumer to stop, yet what it kept at the broker is removed all the
// same (by the node that deleted it): a NATS source's durable consumer
// that Herald named and an MQTT source's persistent session.
func TestPausedSourceDeletedForgotten(t *testing.T) {
	b, sig := sourceSetup(t)
	st := newJSStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// pausedThenDeleted creates a source, waits for its consumer, pauses
	// it, waits for its consumer to stop, deletes it and waits until it
	// is forgotten.
	pausedThenDeleted := func(body map[string]any, kept func(id string) bool) string {
		t.Helper()
		var src sourceRes
		if code, raw := b.do("POST", "/v1/sources", body, &src); code != 201 {
			t.Fatalf("create: %d %s", code, raw)
		}
		sig.Connected.WaitOrTimeout()
		if !kept(src.ID) {
			t.Fatalf("source %s: nothing kept at the broker while it runs", src.ID)
		}
		if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/pause", nil, nil); code != 200 {
			t.Fatalf("pause: %d %s", code, raw)
		}
		for sig.Stopped.WaitOrTimeout() != src.ID {
		}
		if !kept(src.ID) {
			t.Fatalf("source %s: nothing kept at the broker once paused", src.ID)
		}
		if code, raw := b.do("DELETE", "/v1/sources/"+src.ID, nil, nil); code != 204 {
			t.Fatalf("delete: %d %s", code, raw)
		}
		if got := sig.Forgotten.WaitOrTimeout(); got != src.ID {
			t.Fatalf("forgot %s; want %s", got, src.ID)
		}
		return src.ID
	}

	durable := func(id string) bool {
		_, err := st.js.Consumer(ctx, st.name, "herald-"+id)
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if id := pausedThenDeleted(map[string]any{"type": "nats", "url": natsURL, "subject": st.subject + ".a"}, durable); durable(id) {
		t.Fatal("the durable consumer of a source deleted while paused is still there")
	}

	topic := "herald/test/" + ids.New("", time.Now()) + "/#"
	sum := sha256.Sum256([]byte(topic))
	session := func(id string) string { return "herald-" + id + "-" + hex.EncodeToString(sum[:4]) }
	// mqttSessionPresent ends the session it finds: seen while the source
	// runs it would end the consumer's, so only the end is looked at.
	id := pausedThenDeleted(map[string]any{"type": "mqtt", "url": mqttURL, "topic": topic}, func(string) bool { return true })
	if mqttSessionPresent(t, session(id)) {
		t.Fatal("the session of an MQTT source deleted while paused is still kept by the broker")
	}
}
