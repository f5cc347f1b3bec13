package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaCluster starts franz-go's kfake, an in-process cluster speaking the
// Kafka wire protocol (no Kafka broker runs on the project's machines),
// with the topic, and returns its addresses and a producer.
func kafkaCluster(t *testing.T, topic string) ([]string, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return c.ListenAddrs(), p
}

// kafkaProduce produces rec (acknowledged by the cluster).
func kafkaProduce(t *testing.T, p *kgo.Client, rec *kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestKafkaSourceDelivers: a Kafka source's records in both modes of the
// CloudEvents Kafka binding reach a webhook subscription once each; a
// garbage record goes to the dead letters and the next still arrives;
// paused, the source reads nothing, and resumed it delivers what came
// meanwhile from its group's committed offset; the lag is reported.
func TestKafkaSourceDelivers(t *testing.T) {
	b, sig := sourceSetup(t)
	brokers, p := kafkaCluster(t, "orders")
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "kafka", "brokers": brokers, "topic": "orders"}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	sig.Started.WaitOrTimeout()
	kafkaProduce(t, p, &kgo.Record{Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
		Value: []byte(`{"specversion": "1.0", "id": "s-1", "source": "/kafka", "type": "order.placed", "data": {"n": 1}}`)})
	kafkaProduce(t, p, &kgo.Record{Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("text/plain")}}, Value: []byte("garbage")})
	kafkaProduce(t, p, &kgo.Record{Value: []byte(`{"n": 2}`), Headers: []kgo.RecordHeader{{Key: "ce_specversion", Value: []byte("1.0")},
		{Key: "ce_id", Value: []byte("b-2")}, {Key: "ce_source", Value: []byte("/kafka")}, {Key: "ce_type", Value: []byte("order.placed")},
		{Key: "content-type", Value: []byte("application/json")}}})
	eventually(t, "two delivered, one dead-lettered", func() bool {
		s := b.getSource(src.ID)
		return rc.count() >= 2 && s.Counts.DeadLettered == 1 && s.Counts.Published == 2 && s.Lag != nil && *s.Lag == 0
	})
	var dls struct {
		Data []struct {
			MessageID string `json:"message_id"`
		}
	}
	if code, raw := b.do("GET", "/v1/sources/"+src.ID+"/dead-letters", nil, &dls); code != 200 || len(dls.Data) != 1 ||
		dls.Data[0].MessageID != "orders-0-1" {
		t.Fatalf("dead letters: %d %s", code, raw)
	}

	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/pause", nil, nil); code != 200 {
		t.Fatalf("pause: %d %s", code, raw)
	}
	sig.Stopped.WaitOrTimeout()
	for _, id := range []string{"p-1", "p-2"} {
		kafkaProduce(t, p, &kgo.Record{Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
			Value: []byte(`{"specversion": "1.0", "id": "` + id + `", "source": "/kafka", "type": "t"}`)})
	}
	if n := b.getSource(src.ID).Counts.Received; n != 3 || rc.count() != 2 {
		t.Fatalf("paused: %d received, %d delivered; want still 3 and 2 (the consumer stopped)", n, rc.count())
	}
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/resume", nil, nil); code != 200 {
		t.Fatalf("resume: %d %s", code, raw)
	}
	eventually(t, "the records produced while paused delivered", func() bool { return rc.count() >= 4 })
	if got := eventIDs(t, rc); len(got) != 4 || got["s-1"] != 1 || got["b-2"] != 1 || got["p-1"] != 1 || got["p-2"] != 1 {
		t.Fatalf("delivered %v; want 4 events once each", got)
	}
}
