package sourcing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-events/herald/internal/broker/kafkaout"
)

// A Kafka source (franz-go) reads its topic in the consumer group
// herald-<source id> from the earliest offset the group has not
// committed, at most the consumer's bound of records a poll, and commits
// a poll's offsets once its records are committed (no automatic commits;
// rebalances wait for the commit). Records not committed are read again
// by the group's next consumer. The consumer is the group's static member
// herald-<source id> (one consumer per source: the lease): the next
// consumer, after a crash or on another node, takes the place of one that
// died without leaving at once, not after the group's session timeout
// (45 s), and one that closes does not leave (its place waits for the
// next for the session timeout). The CloudEvents Kafka binding: binary-mode
// attributes in ce_<attribute> headers, the content type in the
// content-type header. A raw record's id is <topic>-<partition>-<offset>.
//
// What a Kafka source holds in memory is bounded by its fetches: franz-go
// fetches from each broker that leads a partition of the topic and buffers
// what one fetch returned until it is polled; each fetch asks for at most
// kafkaFetchMaxBytes in all and per partition. A record batch larger than
// that is still returned alone (Kafka returns the first batch whatever the
// bound, so that a consumer makes progress; it is dead-lettered when its
// record is over the 1 MiB of an event): nothing is stuck.

// kafkaFetchMaxBytes bounds one fetch's records, in all and per
// partition (franz-go's defaults: 50 MiB and 1 MiB): the 1 MiB of an
// event.
const kafkaFetchMaxBytes = 1 << 20

// kafkaReader is a Kafka source's reader.
type kafkaReader struct {
	cl      *kgo.Client
	pending atomic.Int64
}

func openKafka(ctx context.Context, c *consumer) (reader, error) {
	conn := c.src.Config.Conn
	opts := []kgo.Opt{kgo.SeedBrokers(conn.Brokers...), kgo.ConsumerGroup("herald-" + c.src.ID), kgo.InstanceID("herald-" + c.src.ID),
		kgo.ConsumeTopics(c.src.Config.Topic), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Dialer(kafkaout.Dialer(conn, c.dialer().DialContext)),
		kgo.DialTimeout(dialTimeout), kgo.ClientID("herald-source-" + c.src.ID),
		kgo.FetchMaxBytes(kafkaFetchMaxBytes), kgo.FetchMaxPartitionBytes(kafkaFetchMaxBytes)}
	if conn.SASL != nil {
		m, err := kafkaout.Mechanism(conn.SASL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("a Kafka client: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("connecting to Kafka: %w", err)
	}
	r := &kafkaReader{cl: cl}
	r.pending.Store(-1)
	return r, nil
}

// next polls until records come (a poll that brings only errors ends the
// connection with the first). Records polled are returned even when ctx
// ended meanwhile: dropped, the offsets of later ones, committed, would
// pass over them.
func (r *kafkaReader) next(ctx context.Context, most int) ([]message, error) {
	for {
		fs := r.cl.PollRecords(ctx, most)
		if fs.IsClientClosed() {
			return nil, errors.New("the Kafka client closed")
		}
		var batch []message
		var lag int64
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, rec := range p.Records {
				batch = append(batch, kafkaMessage(rec))
			}
			if n := len(p.Records); n > 0 {
				lag += max(p.HighWatermark-p.Records[n-1].Offset-1, 0)
			}
		})
		if len(batch) > 0 {
			r.pending.Store(lag)
			return batch, nil
		}
		r.cl.AllowRebalance()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("reading Kafka topic %q: %w", errs[0].Topic, errs[0].Err)
		}
	}
}

// kafkaMessage is rec as a source message.
func kafkaMessage(rec *kgo.Record) message {
	m := message{id: rec.Topic + "-" + strconv.Itoa(int(rec.Partition)) + "-" + strconv.FormatInt(rec.Offset, 10),
		body: rec.Value, raw: rec, attrs: map[string]string{}}
	for _, h := range rec.Headers {
		switch k := strings.ToLower(h.Key); {
		case k == "content-type":
			m.contentType = string(h.Value)
		case strings.HasPrefix(k, "ce_"):
			m.attrs[k[3:]] = string(h.Value)
		}
	}
	return m
}

// ack commits the offsets of the poll's records and lets a rebalance go
// on.
func (r *kafkaReader) ack(ctx context.Context, msgs []message) error {
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		recs[i] = m.raw.(*kgo.Record)
	}
	defer r.cl.AllowRebalance()
	if err := r.cl.CommitRecords(ctx, recs...); err != nil {
		return fmt.Errorf("committing Kafka offsets: %w", err)
	}
	return nil
}

func (r *kafkaReader) lag() int64 { return r.pending.Load() }

func (r *kafkaReader) close() {
	r.cl.AllowRebalance()
	r.cl.Close()
}
