package sourcing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/eclipse/paho.golang/paho"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/broker/mqttout"
	"github.com/herald-events/herald/internal/source"
)

// An MQTT source (MQTT 5, eclipse/paho.golang) subscribes its topic filter
// at QoS 1 in a persistent session (client id mqttClientID: the source's
// and its topic's, kept by the broker for mqttSessionExpiry), with manual
// acknowledgement: a PUBACK
// is sent once the message is committed, and a message not acknowledged
// is sent again by the broker when the session resumes. The broker is to
// send at most the consumer's bound unacknowledged (receive maximum);
// Mosquitto 2.0 at times sends more (after acknowledgements, and when a
// session resumes), and those wait in the client's bounded queue (a
// receive maximum's worth) and then on the connection until next takes
// them. The
// CloudEvents MQTT binding: binary-mode attributes in user properties
// named as the attributes, the content type in the content-type property.
// TLS for mqtts:// and ssl:// (broker.DialTLS).
// MQTT gives a message no id that outlives its session: a raw message's id
// is the SHA-256 of its topic and payload (two equal payloads on one topic
// are one event, within the dedup retention).

// mqttClientID is the client id of src's session: herald-<source id>-<the
// first 8 hex digits of the SHA-256 of its topic filter>. A change of the
// topic is a new session: the broker keeps a session's subscriptions, and
// MQTT has no way to list them, so the old session would go on delivering
// the old topic's messages; it expires after mqttSessionExpiry instead.
func mqttClientID(src source.Source) string {
	sum := sha256.Sum256([]byte(src.Config.Topic))
	return "herald-" + src.ID + "-" + hex.EncodeToString(sum[:4])
}

// mqttSessionExpiry is how long, in seconds, the broker keeps the session
// (and the QoS 1 messages of the subscription) while no consumer is
// connected: a day.
const mqttSessionExpiry = 24 * 60 * 60

// mqttKeepAlive is the keep-alive, in seconds: a broker that stops
// answering is noticed within about one and a half times this.
const mqttKeepAlive = 30

// mqttReader is an MQTT source's reader.
type mqttReader struct {
	client *paho.Client
	feed   *feed[*paho.Publish]
	// stopSubscribe ends resubscribe's wait (nil: none).
	stopSubscribe context.CancelFunc
}

func openMQTT(ctx context.Context, c *consumer) (reader, error) {
	max := c.svc.cfg.MaxInFlight
	r := &mqttReader{feed: newFeed(max, mqttMessage)}
	expiry, receiveMax := uint32(mqttSessionExpiry), uint16(max)
	ack, err := c.connectMQTT(ctx, false, &paho.ConnectProperties{SessionExpiryInterval: &expiry, ReceiveMaximum: &receiveMax},
		func(conn net.Conn) *paho.Client {
			r.client = paho.NewClient(paho.ClientConfig{Conn: conn, ClientID: mqttClientID(c.src), EnableManualAcknowledgment: true,
				OnPublishReceived: []func(paho.PublishReceived) (bool, error){r.receive},
				OnClientError:     r.feed.fail,
				OnServerDisconnect: func(d *paho.Disconnect) {
					r.feed.fail(fmt.Errorf("the MQTT broker disconnected (reason %d)", d.ReasonCode))
				}})
			return r.client
		})
	if err != nil {
		return nil, err
	}
	if ack.SessionPresent {
		r.resubscribe(c.src.Config.Topic)
		return r, nil
	}
	if err := r.subscribe(ctx, c.src.Config.Topic); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// connectMQTT dials the source's broker (through the destination guard;
// TLS for mqtts:// and ssl://), makes its client (client, given the
// connection) and connects as the source's session (mqttClientID) with
// the URL's credentials: resumed, or started clean when clean. The
// connection is closed when it fails.
func (c *consumer) connectMQTT(ctx context.Context, clean bool, props *paho.ConnectProperties, client func(net.Conn) *paho.Client) (*paho.Connack, error) {
	u, err := url.Parse(c.src.Config.Conn.URL)
	if err != nil {
		return nil, err
	}
	conn, err := broker.DialTLS(ctx, c.dialer().DialContext, c.src.Config.Conn, "tcp", mqttout.HostPort(u))
	if err != nil {
		return nil, fmt.Errorf("connecting to MQTT: %w", err)
	}
	conn = broker.WriteBounded(conn) // paho.golang's writes have no deadline
	cp := &paho.Connect{ClientID: mqttClientID(c.src), KeepAlive: mqttKeepAlive, CleanStart: clean, Properties: props}
	if u.User != nil {
		pw, ok := u.User.Password()
		cp.Username, cp.UsernameFlag, cp.Password, cp.PasswordFlag = u.User.Username(), true, []byte(pw), ok
	}
	ack, err := client(conn).Connect(ctx, cp)
	if err != nil {
		conn.Close()
		if ack != nil {
			return nil, fmt.Errorf("connecting to MQTT: %s (reason %d)", ack.Properties.ReasonString, ack.ReasonCode)
		}
		return nil, fmt.Errorf("connecting to MQTT: %w", err)
	}
	return ack, nil
}

// forgetMQTT ends a deleted source's persistent session at the broker: a
// clean start of its client id with no session expiry, then a disconnect,
// so that the broker stops keeping the topic's messages for it.
func forgetMQTT(ctx context.Context, c *consumer) error {
	var client *paho.Client
	if _, err := c.connectMQTT(ctx, true, nil, func(conn net.Conn) *paho.Client {
		client = paho.NewClient(paho.ClientConfig{Conn: conn, ClientID: mqttClientID(c.src)})
		return client
	}); err != nil {
		return err
	}
	if err := client.Disconnect(&paho.Disconnect{ReasonCode: 0}); err != nil {
		return fmt.Errorf("disconnecting from MQTT: %w", err)
	}
	select {
	case <-client.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// subscribe subscribes the topic filter at QoS 1 and waits for the SUBACK.
func (r *mqttReader) subscribe(ctx context.Context, topic string) error {
	if _, err := r.client.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		return fmt.Errorf("subscribing to MQTT topic %q: %w", topic, err)
	}
	return nil
}

// resubscribe subscribes again in a resumed session (whose subscription
// the broker kept) without waiting for the SUBACK: the session's messages
// come before it, and may be more than the receive maximum (Mosquitto 2.0
// sends more after a consumer died holding some); the client reads the
// SUBACK only once next has taken enough of them, so the opening must not
// wait for it. A refusal, or no SUBACK within dialTimeout, ends the
// connection through next; close stops the wait.
func (r *mqttReader) resubscribe(topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	r.stopSubscribe = cancel
	go func() {
		defer cancel()
		if err := r.subscribe(ctx, topic); err != nil && !errors.Is(err, context.Canceled) {
			r.feed.fail(err)
		}
	}()
}

// receive hands a message over to next; the channel holds the receive
// maximum, and a message beyond it (a broker that sends more) waits here,
// holding the client's reading of the connection, until next takes one.
func (r *mqttReader) receive(pr paho.PublishReceived) (bool, error) {
	r.feed.put(pr.Packet)
	return true, nil
}

func (r *mqttReader) next(ctx context.Context, max int) ([]message, error) {
	return r.feed.next(ctx, max, r.client.Done())
}

// mqttMessage is p as a source message.
func mqttMessage(p *paho.Publish) message {
	sum := sha256.Sum256(append(append([]byte(p.Topic), 0), p.Payload...))
	m := message{id: hex.EncodeToString(sum[:]), body: p.Payload, raw: p, attrs: map[string]string{}}
	if p.Properties != nil {
		m.contentType = p.Properties.ContentType
		for _, up := range p.Properties.User {
			m.attrs[strings.ToLower(up.Key)] = up.Value
		}
	}
	return m
}

func (r *mqttReader) ack(_ context.Context, msgs []message) error {
	for _, m := range msgs {
		if err := r.client.Ack(m.raw.(*paho.Publish)); err != nil {
			return fmt.Errorf("acknowledging an MQTT message: %w", err)
		}
	}
	return nil
}

// lag: MQTT does not tell.
func (r *mqttReader) lag() int64 { return -1 }

func (r *mqttReader) close() {
	r.feed.stop()
	if r.stopSubscribe != nil {
		r.stopSubscribe()
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	_ = r.client.Disconnect(&paho.Disconnect{ReasonCode: 0})
	select {
	case <-r.client.Done():
	case <-ctx.Done():
	}
}
