// Package mqttout publishes CloudEvents to an MQTT 5 broker (a Connector
// of internal/broker, on Eclipse Paho's paho.golang client), following the
// CloudEvents "MQTT Protocol Binding" (cloudevents/spec,
// cloudevents/bindings/mqtt-protocol-binding.md) for MQTT 5:
//   - binary mode: each attribute a User Property named as the attribute
//     (no prefix), the datacontenttype the Content Type property, the data
//     the payload;
//   - structured mode: the JSON event format as the payload, Content Type
//     application/cloudevents+json.
//
// At QoS 1 (the default) success is the broker's PUBACK with a reason code
// below 0x80 (0x10, no matching subscribers, included); a reason of 0x80
// or more (0x87 not authorized, say) is broker_refused, as is a CONNACK
// that refuses the connection. At QoS 0 the broker acknowledges nothing:
// success is the PUBLISH written to the connection.
package mqttout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/herald-events/herald/internal/broker"
)

// errConnectionLost ends a publish whose connection the broker closed.
var errConnectionLost = errors.New("the connection to the MQTT broker was lost")

// keepAlive is the connection's MQTT keep-alive, in seconds.
const keepAlive = 30

// packetTimeout is paho's own bound on waiting for an acknowledgement; the
// attempt's deadline (at most 5 minutes, a subscription's longest
// timeout) ends the wait first.
const packetTimeout = 5 * time.Minute

// conn is one MQTT connection.
type conn struct {
	c      *paho.Client
	broken atomic.Bool
}

// Connect is the MQTT broker.Connector: d.URL is mqtt://host[:1883] or
// mqtts://host[:8883] (TLS, verified against d.TLS's roots, else the
// system's; tcp:// and ssl:// are their other names), with the
// user and password in it when the broker asks for them. Each connection
// has a client id of its own (herald-<random>) and a clean start; the
// CONNACK must come by ctx's deadline.
func Connect(ctx context.Context, d *broker.Destination, dial broker.DialFunc) (broker.Conn, error) {
	u, err := url.Parse(d.URL)
	if err != nil {
		return nil, broker.Refused(err)
	}
	nc, err := broker.DialTLS(ctx, dial, d.Settings, "tcp", HostPort(u))
	if err != nil {
		return nil, err
	}
	nc = broker.WriteBounded(nc) // paho.golang's writes have no deadline
	c := &conn{}
	c.c = paho.NewClient(paho.ClientConfig{
		Conn:               packets.NewThreadSafeConn(nc),
		PacketTimeout:      packetTimeout,
		OnClientError:      func(error) { c.broken.Store(true) },
		OnServerDisconnect: func(*paho.Disconnect) { c.broken.Store(true) },
	})
	cp := &paho.Connect{ClientID: clientID(), KeepAlive: keepAlive, CleanStart: true}
	if user := u.User; user != nil {
		cp.Username, cp.UsernameFlag = user.Username(), true
		if pw, ok := user.Password(); ok {
			cp.Password, cp.PasswordFlag = []byte(pw), true
		}
	}
	ca, err := c.c.Connect(ctx, cp)
	if err != nil {
		nc.Close()
		if ca != nil && ca.ReasonCode >= 0x80 {
			return nil, broker.Refused(err)
		}
		return nil, broker.AfterConnect(err)
	}
	return c, nil
}

// HostPort is the host:port of an MQTT URL: its port, else 8883 for
// mqtts:// and ssl://, 1883 for mqtt:// and tcp://.
func HostPort(u *url.URL) string {
	port := u.Port()
	switch s := strings.ToLower(u.Scheme); {
	case port != "":
	case s == "mqtts" || s == "ssl":
		port = "8883"
	default:
		port = "1883"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// clientID is a new MQTT client id: herald- and 16 random hex digits.
func clientID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "herald-" + hex.EncodeToString(b)
}

// Publish publishes m to topic at d.QoS and waits for its PUBACK (QoS 1).
func (c *conn) Publish(ctx context.Context, d *broker.Destination, topic string, m broker.Message) error {
	p := &paho.Publish{
		Topic: topic, QoS: byte(d.QoS), Payload: m.Body,
		Properties: &paho.PublishProperties{ContentType: m.ContentType, User: userProperties(m)},
	}
	// paho keeps a QoS 1 message whose connection was lost for a session
	// that never resumes here: the wait ends when the client shuts down.
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-c.c.Done():
			cancel(errConnectionLost)
		case <-pctx.Done():
		}
	}()
	pr, err := c.c.Publish(pctx, p)
	switch {
	case err == nil:
		return nil
	case pr != nil && pr.ReasonCode >= 0x80:
		return broker.Refused(fmt.Errorf("PUBACK reason 0x%02x: %w", pr.ReasonCode, err))
	case errors.Is(context.Cause(pctx), errConnectionLost):
		c.broken.Store(true)
		return broker.Unreachable(errConnectionLost)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return broker.TimedOut(fmt.Errorf("no PUBACK: %w", err))
	}
	c.broken.Store(true)
	return broker.Unreachable(err)
}

// userProperties are the attributes as User Properties (binary mode).
func userProperties(m broker.Message) paho.UserProperties {
	if len(m.Attributes) == 0 {
		return nil
	}
	up := make(paho.UserProperties, 0, len(m.Attributes))
	for _, a := range m.Attributes {
		up = append(up, paho.UserProperty{Key: a[0], Value: a[1]})
	}
	return up
}

// Broken reports whether the connection failed or the broker
// disconnected it.
func (c *conn) Broken() bool {
	if c.broken.Load() {
		return true
	}
	select {
	case <-c.c.Done():
		return true
	default:
		return false
	}
}

// Close disconnects.
func (c *conn) Close() {
	_ = c.c.Disconnect(&paho.Disconnect{ReasonCode: 0})
}
