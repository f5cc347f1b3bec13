package sourcing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/source"
)

// kafkaIDs are the ids of msgs.
func kafkaIDs(msgs []message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.id
	}
	return ids
}

// TestKafkaConsumerReplacedAtOnceAfterDeath: a Kafka source's consumer
// that dies holding records it has not committed never leaves its group
// (a SIGKILL: here the cluster drops every LeaveGroup); the next consumer
// of the source takes its place at once — the same static member — and
// reads the records again, instead of waiting for the group's session
// timeout (45 s) to end the dead member.
func TestKafkaConsumerReplacedAtOnceAfterDeath(t *testing.T) {
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.ControlKey(int16(kmsg.LeaveGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		cl.KeepControl()
		return nil, errors.New("a dead consumer does not leave"), true
	})
	p, err := kgo.NewClient(kgo.SeedBrokers(cl.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	for i := range 5 {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, `{"n": %d}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c := &consumer{svc: &Service{cfg: Config{MaxInFlight: 10, Destinations: destination.Guard{Policy: destination.Policy{AllowPrivate: true}}}},
		src: source.Source{ID: "src_kafka", Type: source.TypeKafka, Config: source.Config{Conn: broker.Settings{Brokers: cl.ListenAddrs()}, Topic: "orders"}}}
	read := func(what string) []string {
		r, err := openKafka(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer r.close()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		batch, err := r.next(rctx, 10)
		if err != nil {
			t.Fatalf("%s read nothing within 10s: %v", what, err)
		}
		return kafkaIDs(batch)
	}
	first := read("the first consumer")
	again := read("the consumer after the first died")
	if fmt.Sprint(first) != fmt.Sprint(again) {
		t.Fatalf("the first consumer read %v, the next %v; want the same records (none committed)", first, again)
	}
}

// TestKafkaFetchBounded: a Kafka source's fetch holds at most
// kafkaFetchMaxBytes of records in all (franz-go's default: 50 MiB, 1 MiB
// a partition: here 4 partitions of 1.2 MiB each came in one poll), and a
// record larger than that still comes, alone: nothing is stuck.
func TestKafkaFetchBounded(t *testing.T) {
	const partitions, perPartition, size = 4, 4, 300 << 10
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "big"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(8 << 20)}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := kgo.NewClient(kgo.SeedBrokers(cl.ListenAddrs()...), kgo.DefaultProduceTopic("big"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(8<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	produce := func(part int32, n int) {
		t.Helper()
		if err := p.ProduceSync(ctx, &kgo.Record{Partition: part, Value: bytes.Repeat([]byte{'x'}, n)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want := 0
	for part := range int32(partitions) {
		for i := range perPartition {
			produce(part, size)
			if part == 0 && i == 1 {
				produce(part, 3<<20) // a record over the bound, between others
				want++
			}
			want++
		}
	}
	c := &consumer{svc: &Service{cfg: Config{MaxInFlight: 100, Destinations: destination.Guard{Policy: destination.Policy{AllowPrivate: true}}}},
		src: source.Source{ID: "src_kafka_big", Type: source.TypeKafka, Config: source.Config{Conn: broker.Settings{Brokers: cl.ListenAddrs()}, Topic: "big"}}}
	r, err := openKafka(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	big := false
	for got := 0; got < want; {
		batch, err := r.next(ctx, 100)
		if err != nil {
			t.Fatalf("after %d of %d records: %v", got, want, err)
		}
		held := 0
		for _, m := range batch {
			held += len(m.body)
			big = big || len(m.body) > kafkaFetchMaxBytes
		}
		if len(batch) > 1 && held > kafkaFetchMaxBytes {
			t.Fatalf("a poll of %d records, %d bytes; at most %d bytes (or one record)", len(batch), held, kafkaFetchMaxBytes)
		}
		got += len(batch)
	}
	if !big {
		t.Fatal("the record over the bound never came")
	}
}
