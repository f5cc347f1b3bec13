package sourcing

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/amqpout"
	"github.com/herald-events/herald/internal/ids"
)

// An AMQP source consumes its queue (which must exist) with manual acks
// and a prefetch of the consumer's bound; a batch is acknowledged with one
// multiple ack once committed, and a message not acknowledged comes again
// when the connection ends. The CloudEvents AMQP binding: binary-mode
// attributes in application properties named cloudEvents:<attribute> (or
// cloudEvents_<attribute>), the content type the message's. A raw
// message's id is its message-id; without one it is unique to the
// delivery (queue, consumer tag and delivery tag): such a message that
// comes again after a crash is then a new event.

// amqpHeartbeat is the connection's heartbeat: a broker that stops
// answering is noticed within about twice this.
const amqpHeartbeat = 10 * time.Second

// amqpReader is an AMQP source's reader.
type amqpReader struct {
	conn    *amqp.Connection
	ch      *amqp.Channel
	inspect *amqp.Channel // QueueDeclarePassive for the lag: a failure closes only this channel
	queue   string
	tag     string
	msgs    <-chan amqp.Delivery
	closed  chan *amqp.Error
	pending atomic.Int64
}

func openAMQP(ctx context.Context, c *consumer) (reader, error) {
	d := c.dialer()
	tc, err := amqpout.TLSConfig(c.src.Config.Conn)
	if err != nil {
		return nil, err
	}
	conn, err := amqp.DialConfig(c.src.Config.Conn.URL, amqp.Config{Heartbeat: amqpHeartbeat, TLSClientConfig: tc,
		Properties: amqp.Table{"connection_name": "herald source " + c.src.ID},
		Dial:       amqpout.Dial(ctx, d.DialContext)})
	if err != nil {
		return nil, fmt.Errorf("connecting to AMQP: %w", err)
	}
	r := &amqpReader{conn: conn, queue: c.src.Config.Queue, tag: "herald-" + c.src.ID + "-" + ids.New("", time.Now())}
	r.pending.Store(-1)
	if err := r.consume(c.svc.cfg.MaxInFlight); err != nil {
		conn.Close()
		return nil, fmt.Errorf("consuming AMQP queue %q: %w", r.queue, err)
	}
	return r, nil
}

// consume opens the channels and starts the consumer.
func (r *amqpReader) consume(max int) error {
	var err error
	if r.ch, err = r.conn.Channel(); err != nil {
		return err
	}
	if err = r.ch.Qos(max, 0, false); err != nil {
		return err
	}
	r.closed = r.ch.NotifyClose(make(chan *amqp.Error, 1))
	if r.msgs, err = r.ch.Consume(r.queue, r.tag, false, false, false, false, nil); err != nil {
		return err
	}
	r.inspect, err = r.conn.Channel()
	return err
}

func (r *amqpReader) next(ctx context.Context, max int) ([]message, error) {
	var batch []message
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case err := <-r.closed:
		return nil, fmt.Errorf("AMQP channel closed: %v", err)
	case d, ok := <-r.msgs:
		if !ok {
			return nil, fmt.Errorf("AMQP consumer of %q ended", r.queue)
		}
		batch = append(batch, r.message(d))
	}
	for len(batch) < max {
		select {
		case d, ok := <-r.msgs:
			if !ok {
				return batch, nil
			}
			batch = append(batch, r.message(d))
		default:
			return batch, nil
		}
	}
	return batch, nil
}

// message is d as a source message.
func (r *amqpReader) message(d amqp.Delivery) message {
	m := message{id: d.MessageId, contentType: d.ContentType, body: d.Body, raw: d, attrs: map[string]string{}}
	if m.id == "" {
		m.id = r.queue + "-" + r.tag + "-" + strconv.FormatUint(d.DeliveryTag, 10)
	}
	for k, v := range d.Headers {
		name, ok := strings.CutPrefix(k, "cloudEvents:")
		if !ok {
			name, ok = strings.CutPrefix(k, "cloudEvents_")
		}
		if !ok {
			continue
		}
		switch v := v.(type) {
		case string:
			m.attrs[name] = v
		case time.Time:
			m.attrs[name] = v.UTC().Format(time.RFC3339Nano)
		default:
			m.attrs[name] = fmt.Sprint(v)
		}
	}
	return m
}

// ack acknowledges the batch with one multiple ack of its last delivery:
// every delivery before it on the channel is in this batch or an earlier
// one, acknowledged already.
func (r *amqpReader) ack(_ context.Context, msgs []message) error {
	if err := msgs[len(msgs)-1].raw.(amqp.Delivery).Ack(true); err != nil {
		return fmt.Errorf("acknowledging AMQP messages: %w", err)
	}
	return nil
}

// lag asks the broker for the queue's ready messages (a round trip: it is
// read once a report). amqp091-go waits for the answer without a timeout:
// when none comes within broker.WriteTimeout (a broker that stopped
// reading the connection, its heartbeats still coming) the connection is
// closed, which ends the wait and the reader (next fails).
func (r *amqpReader) lag() int64 {
	abort := time.AfterFunc(broker.WriteTimeout, func() { r.conn.CloseDeadline(time.Now()) })
	q, err := r.inspect.QueueDeclarePassive(r.queue, true, false, false, false, nil)
	if abort.Stop() && err == nil {
		r.pending.Store(int64(q.Messages))
	}
	return r.pending.Load()
}

// close closes the connection, waiting for the broker's answer
// broker.WriteTimeout at most.
func (r *amqpReader) close() { r.conn.CloseDeadline(time.Now().Add(broker.WriteTimeout)) }
