package server_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/herald-events/herald/internal/ids"
)

// amqpURL is the RabbitMQ every machine of the project runs.
const amqpURL = "amqp://guest:guest@127.0.0.1:5672/"

// amqpSourceQueue declares a queue of the test's own (deleted when it ends) and
// returns a channel to publish on and the queue's name.
func amqpSourceQueue(t *testing.T) (*amqp.Channel, string) {
	t.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatalf("RabbitMQ at %s: %v", amqpURL, err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q := "herald-test-" + ids.New("", time.Now())
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(q, false, false, false) })
	return ch, q
}

// amqpPublish publishes p to the queue through the default exchange.
func amqpPublish(t *testing.T, ch *amqp.Channel, q string, p amqp.Publishing) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ch.PublishWithContext(ctx, "", q, false, false, p); err != nil {
		t.Fatal(err)
	}
}

// TestAMQPSourceDelivers: an AMQP source's messages in both modes of the
// CloudEvents AMQP binding reach a webhook subscription once each; a
// garbage message goes to the dead letters and the next still arrives;
// paused, the source reads nothing (the messages wait in the queue), and
// resumed it delivers them.
func TestAMQPSourceDelivers(t *testing.T) {
	b, sig := sourceSetup(t)
	ch, q := amqpSourceQueue(t)
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "amqp", "url": amqpURL, "queue": q}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	sig.Started.WaitOrTimeout()
	amqpPublish(t, ch, q, amqp.Publishing{ContentType: "application/cloudevents+json",
		Body: []byte(`{"specversion": "1.0", "id": "s-1", "source": "/amqp", "type": "order.placed", "data": {"n": 1}}`)})
	amqpPublish(t, ch, q, amqp.Publishing{ContentType: "text/plain", MessageId: "garbage-1", Body: []byte("not an event")})
	amqpPublish(t, ch, q, amqp.Publishing{ContentType: "application/json", Body: []byte(`{"n": 2}`),
		Headers: amqp.Table{"cloudEvents:specversion": "1.0", "cloudEvents:id": "b-2", "cloudEvents:source": "/amqp",
			"cloudEvents:type": "order.placed"}})
	eventually(t, "two delivered, one dead-lettered", func() bool {
		s := b.getSource(src.ID)
		return rc.count() >= 2 && s.Counts.DeadLettered == 1 && s.Counts.Published == 2
	})
	var dls struct {
		Data []struct {
			MessageID string `json:"message_id"`
		}
	}
	if code, raw := b.do("GET", "/v1/sources/"+src.ID+"/dead-letters", nil, &dls); code != 200 || len(dls.Data) != 1 ||
		dls.Data[0].MessageID != "garbage-1" {
		t.Fatalf("dead letters: %d %s", code, raw)
	}

	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/pause", nil, nil); code != 200 {
		t.Fatalf("pause: %d %s", code, raw)
	}
	sig.Stopped.WaitOrTimeout()
	for _, id := range []string{"p-1", "p-2"} {
		amqpPublish(t, ch, q, amqp.Publishing{ContentType: "application/cloudevents+json",
			Body: []byte(`{"specversion": "1.0", "id": "` + id + `", "source": "/amqp", "type": "t"}`)})
	}
	eventually(t, "the two published while paused waiting in the queue", func() bool {
		qi, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		return err == nil && qi.Messages == 2
	})
	if rc.count() != 2 {
		t.Fatalf("paused: %d delivered; want still 2", rc.count())
	}
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/resume", nil, nil); code != 200 {
		t.Fatalf("resume: %d %s", code, raw)
	}
	eventually(t, "the messages published while paused delivered", func() bool { return rc.count() >= 4 })
	if got := eventIDs(t, rc); len(got) != 4 || got["s-1"] != 1 || got["b-2"] != 1 || got["p-1"] != 1 || got["p-2"] != 1 {
		t.Fatalf("delivered %v; want 4 events once each", got)
	}
}

// TestAMQPSourceHostileMessages: messages whose broker-given parts are
// not text a store column takes — a message id holding NUL and bytes that
// are not UTF-8 (PostgreSQL's text refuses both), a raw event id put in
// the dead letter's reason — and a body over the 1 MiB event bound are
// each dead-lettered (the id and reason as valid UTF-8 text, NUL shown as
// U+FFFD; the body's first 64 KiB kept, its size whole) and the message
// after them is still delivered: none blocks the source.
func TestAMQPSourceHostileMessages(t *testing.T) {
	b, sig := sourceSetup(t)
	ch, q := amqpSourceQueue(t)
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "amqp", "url": amqpURL, "queue": q}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	sig.Started.WaitOrTimeout()
	amqpPublish(t, ch, q, amqp.Publishing{ContentType: "text/plain", MessageId: "bad\x00id\xff", Body: []byte("not an event")})
	big := make([]byte, 2<<20)
	for i := range big {
		big[i] = 'a'
	}
	amqpPublish(t, ch, q, amqp.Publishing{ContentType: "application/json", MessageId: "big", Body: big,
		Headers: amqp.Table{"cloudEvents:specversion": "1.0", "cloudEvents:id": "big-1", "cloudEvents:source": "/amqp",
			"cloudEvents:type": "order.placed"}})
	amqpPublish(t, ch, q, amqp.Publishing{ContentType: "application/cloudevents+json",
		Body: []byte(`{"specversion": "1.0", "id": "after", "source": "/amqp", "type": "order.placed"}`)})
	eventually(t, "the message after them delivered, both dead-lettered", func() bool {
		s := b.getSource(src.ID)
		return rc.count() >= 1 && s.Counts.DeadLettered == 2
	})
	var dls struct {
		Data []struct {
			MessageID string `json:"message_id"`
			Size      int64  `json:"size"`
			Truncated bool   `json:"truncated"`
			Body      []byte `json:"body_base64"`
		}
	}
	if code, raw := b.do("GET", "/v1/sources/"+src.ID+"/dead-letters", nil, &dls); code != 200 || len(dls.Data) != 2 ||
		dls.Data[0].MessageID != "bad\uFFFDid\uFFFD" || dls.Data[1].MessageID != "big" ||
		dls.Data[1].Size != 2<<20 || !dls.Data[1].Truncated || len(dls.Data[1].Body) != 64<<10 {
		t.Fatalf("dead letters: %d %.600s", code, raw)
	}
}
