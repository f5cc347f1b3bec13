package attempting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/amqpout"
	"github.com/herald-events/herald/internal/broker/kafkaout"
	"github.com/herald-events/herald/internal/broker/mqttout"
	"github.com/herald-events/herald/internal/broker/natsout"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
)

// outcomeBrokerAcked is the outcome of a publish the broker acknowledged
// (docs/destinations.md); its failures are broker.OutcomeUnreachable,
// OutcomeRefused and OutcomeTimeout (or destination_blocked, request_error).
const outcomeBrokerAcked = "broker_acked"

// brokerPool is the Attempter's connections to brokers: a broker.Pool
// (bounded: broker.MaxConns) made on the first publish, its dials through
// the destination policy of the HTTP attempts (Config.Destinations and
// Resolver).
type brokerPool struct {
	once sync.Once
	pool *broker.Pool
}

// get returns the pool, making it on first use with cfg's destination
// policy and resolver.
func (b *brokerPool) get(cfg *Config) *broker.Pool {
	b.once.Do(func() {
		b.pool = broker.NewPool(map[string]broker.Connector{
			broker.TypeNATS:  natsout.Connect,
			broker.TypeAMQP:  amqpout.Connect,
			broker.TypeMQTT:  mqttout.Connect,
			broker.TypeKafka: kafkaout.Connect,
		}, broker.NewDialFunc(cfg.Destinations, cfg.Resolver))
	})
	return b.pool
}

// CloseBrokers closes the connections to brokers (when the server
// stops, no attempt running): a later publish fails broker_unreachable.
func (a *Attempter) CloseBrokers() {
	a.brokerConns.once.Do(func() {}) // none made after this
	if p := a.brokerConns.pool; p != nil {
		p.Close()
	}
}

// publishes reports whether an attempt of cs goes to sub's broker: sub has
// a broker destination and cs are not a dead letter (which goes to the
// dead-letter URL, over HTTP).
func publishes(sub *catalog.Entry, cs []store.Claimed) bool {
	return sub.Delivery.Destination != nil && cs[0].DeadLetterOf == ""
}

// publish makes one attempt of a broker subscription: its delivery (a
// broker destination takes no batches; the first item alone is sent) is
// encoded (brokerMessage) and published to the broker, within ctx (the
// subscription's timeout). The result has no status code: success is the
// broker's acknowledgement (outcome broker_acked), a failure's outcome is
// the broker's (broker.OutcomeOf), or destination_blocked when the guard
// refused every address of the broker. A target the event's attributes
// make invalid (broker.InvalidTarget) is broker_refused and ends the
// delivery at once (reason InvalidTarget), saying nothing of the broker's
// health: every retry would fail the same way.
func (b *brokerPool) publish(ctx context.Context, cfg *Config, sub *catalog.Entry, cs []store.Claimed, items []event.Item) result {
	begin := time.Now()
	res := result{published: true}
	d := sub.Delivery.Destination
	m, err := brokerMessage(sub.Schema(), d, items[0], cs[0].OrderingKey)
	if err != nil {
		res.fail(outcomeRequestError, err)
		return res
	}
	err = b.get(cfg).Publish(ctx, d, m)
	res.duration = time.Since(begin)
	switch {
	case err == nil:
		res.outcome = outcomeBrokerAcked
	case destination.IsBlocked(err):
		res.fail(outcomeBlocked, err)
	case broker.InvalidTarget(err):
		res.fail(broker.OutcomeRefused, err)
		res.ends = retry.ReasonInvalidTarget
	default:
		res.fail(broker.OutcomeOf(err), err)
	}
	return res
}

// brokerMessage encodes a delivery for d with the subscription's delivery
// schema: cloudevents and cloudevents-binary follow d's mode — binary (the
// attributes apart, as event.Encode writes them for the HTTP binding,
// percent-decoded: each broker binding writes them its own way) or
// structured (the stored event as the body) — and eventgrid, data and
// pubsub give the body and content type that schema gives (no
// attributes). key is the delivery's ordering key.
func brokerMessage(schema string, d *broker.Destination, it event.Item, key string) (broker.Message, error) {
	if schema == event.SchemaCloudEvents || schema == event.SchemaCloudEventsBinary {
		schema = event.SchemaCloudEventsBinary
		if d.Structured() {
			schema = event.SchemaCloudEvents
		}
	}
	enc, err := event.Encode(schema, event.Target{}, []event.Item{it})
	if err != nil {
		return broker.Message{}, err
	}
	m := broker.Message{ContentType: enc.ContentType, Body: enc.Body, Key: key}
	if schema == event.SchemaCloudEventsBinary {
		m.Attributes = make([][2]string, 0, len(enc.Header))
		for _, h := range enc.Header {
			v, err := url.PathUnescape(h[1])
			if err != nil {
				return broker.Message{}, fmt.Errorf("attribute %s: %w", h[0], err)
			}
			m.Attributes = append(m.Attributes, [2]string{strings.TrimPrefix(h[0], "ce-"), v})
		}
	}
	if strings.Contains(d.Template(), "{") {
		var f struct {
			Type    string `json:"type"`
			Subject string `json:"subject"`
			Source  string `json:"source"`
		}
		if err := json.Unmarshal(it.Payload, &f); err != nil {
			return broker.Message{}, errors.New("the stored event is not a CloudEvent: " + err.Error())
		}
		m.Fields = broker.Fields(f)
	}
	return m, nil
}

// succeeded reports whether an attempt succeeded: a publish the broker
// acknowledged, or an HTTP answer whose status policy takes as success.
func (r *result) succeeded(policy retry.Policy) bool {
	if r.published {
		return r.err == "" && r.outcome == outcomeBrokerAcked
	}
	return r.err == "" && policy.Success(r.status)
}
