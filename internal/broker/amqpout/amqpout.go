// Package amqpout publishes CloudEvents to an AMQP 0-9-1 broker (RabbitMQ;
// a Connector of internal/broker), following the CloudEvents "AMQP
// Protocol Binding" (cloudevents/spec,
// cloudevents/bindings/amqp-protocol-binding.md):
//   - binary mode: each attribute an application property named
//     cloudEvents:NAME (the binding's prefix), its value a string; the
//     datacontenttype the message's content-type property; the data the
//     body;
//   - structured mode: the JSON event format as the body, content-type
//     application/cloudevents+json.
//
// Messages are persistent and published with mandatory set on a channel
// in confirm mode: success is the broker's ack (basic.ack) with no
// basic.return before it. A return (no queue bound for the routing key), a
// nack, or a channel closed by the broker (an exchange that does not
// exist: 404, no access: 403) is broker_refused; a connection lost is
// broker_unreachable; no confirm by the attempt's deadline broker_timeout.
package amqpout

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/herald-events/herald/internal/broker"
)

// MaxChannels bounds the channels a connection opens: each carries one
// publish at a time (so that a basic.return is known to be its own), and
// a publish waits for a free one, within its deadline, when all are busy.
const MaxChannels = 16

// propertyPrefix is the binding's prefix of the attributes' application
// properties.
const propertyPrefix = "cloudEvents:"

// conn is a connection and its channels.
type conn struct {
	c    *amqp.Connection
	raw  net.Conn      // its TCP connection (abort closes it)
	free chan *channel // idle channels
	open chan struct{} // a token per channel open (MaxChannels)

	closeOnce sync.Once
}

// channel is a channel in confirm mode with its return and close
// notifications.
type channel struct {
	ch      *amqp.Channel
	returns chan amqp.Return
	closes  chan *amqp.Error
}

// Connect is the AMQP broker.Connector: d.URL is the broker's amqp:// or
// amqps:// URI (user, password and virtual host in it, as amqp091-go
// reads them; amqps:// with d.TLS's roots and server name). The TCP connection is made with dial; the AMQP handshake
// must end by ctx's deadline.
func Connect(ctx context.Context, d *broker.Destination, dial broker.DialFunc) (broker.Conn, error) {
	var raw net.Conn
	dialRaw := Dial(ctx, dial)
	cfg := amqp.Config{Heartbeat: 10 * time.Second, Locale: "en_US", Dial: func(network, addr string) (net.Conn, error) {
		nc, err := dialRaw(network, addr)
		raw = nc
		return nc, err
	}}
	var err error
	if cfg.TLSClientConfig, err = TLSConfig(d.Settings); err != nil {
		return nil, err
	}
	c, err := amqp.DialConfig(d.URL, cfg)
	if err != nil {
		return nil, classifyDial(err)
	}
	return &conn{c: c, raw: raw, free: make(chan *channel, MaxChannels), open: make(chan struct{}, MaxChannels)}, nil
}

// Dial is amqp091-go's Config.Dial over dial within ctx (a broker
// destination's connection, and a broker source's): as amqp.DefaultDial,
// the connection gets a deadline for the TLS and AMQP handshakes — ctx's,
// else broker.DialTimeout from now — which amqp091-go clears once the
// connection is open (its heartbeats bound it after). Without it a broker
// that accepts and never answers holds the open for ever: amqp091-go's own
// handshake has no timeout. Each write after is bounded too
// (broker.WriteBounded): amqp091-go's have no deadline.
func Dial(ctx context.Context, dial broker.DialFunc) func(network, addr string) (net.Conn, error) {
	return func(network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(broker.DialTimeout)
		}
		if err := nc.SetDeadline(deadline); err != nil {
			nc.Close()
			return nil, broker.Unreachable(err)
		}
		return broker.WriteBounded(nc), nil
	}
}

// TLSConfig is the TLS configuration of an amqps:// URL (s.TLS's roots
// and server name, else the system's and the URL's host); nil for amqp://.
func TLSConfig(s broker.Settings) (*tls.Config, error) {
	if !s.Secure() {
		return nil, nil
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, broker.Refused(err)
	}
	return s.TLSConfig(u.Hostname())
}

// classifyDial names a failed connection's outcome: credentials or a
// virtual host refused are broker_refused.
func classifyDial(err error) error {
	if ae, ok := errors.AsType[*amqp.Error](err); ok && (ae.Code == amqp.AccessRefused || ae.Code == amqp.NotAllowed) {
		return broker.Refused(err)
	}
	return broker.AfterConnect(err)
}

// Publish publishes m to d.Exchange with routingKey and waits for its
// confirm.
func (c *conn) Publish(ctx context.Context, d *broker.Destination, routingKey string, m broker.Message) error {
	ch, err := c.channel(ctx)
	if err != nil {
		return err
	}
	pub := amqp.Publishing{
		Headers: properties(m), ContentType: m.ContentType, DeliveryMode: amqp.Persistent, Body: m.Body,
	}
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, d.Exchange, routingKey, true, false, pub)
	if err != nil {
		err = c.failure(ch, err)
		c.discard(ch)
		return err
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		// A late confirm or return must not be read by the next publish.
		c.discard(ch)
		return broker.TimedOut(fmt.Errorf("no publisher confirm: %w", err))
	}
	select {
	case ret, ok := <-ch.returns:
		if !ok { // closed with the channel: no return came
			break
		}
		c.release(ch)
		return broker.Refusedf("the broker returned the message: %d %s (exchange %q, routing key %q)",
			ret.ReplyCode, ret.ReplyText, ret.Exchange, ret.RoutingKey)
	default:
	}
	if !acked {
		err := c.failure(ch, errors.New("the broker nacked the message, or closed the channel"))
		c.discard(ch)
		return err
	}
	c.release(ch)
	return nil
}

// failure classifies a publish's error: a channel closed by the broker
// with a soft error (404 no exchange, 403 access refused: the protocol's
// recoverable errors), or a nack on an open channel, is broker_refused
// with the broker's reason; the connection lost (a hard error, or none)
// broker_unreachable.
func (c *conn) failure(ch *channel, err error) error {
	select {
	case ae, ok := <-ch.closes:
		if ok && ae != nil && ae.Recover && !c.c.IsClosed() {
			return broker.Refused(ae)
		}
		if ok && ae != nil {
			return broker.Unreachable(ae)
		}
	default:
	}
	if c.c.IsClosed() || ch.ch.IsClosed() {
		return broker.Unreachable(err)
	}
	return broker.Refused(err)
}

// properties are the message's application properties (see the package
// comment).
func properties(m broker.Message) amqp.Table {
	if len(m.Attributes) == 0 {
		return nil
	}
	t := make(amqp.Table, len(m.Attributes))
	for _, a := range m.Attributes {
		t[propertyPrefix+a[0]] = a[1]
	}
	return t
}

// channel takes a free channel, or opens one while fewer than MaxChannels
// are open, or waits for one until ctx ends.
func (c *conn) channel(ctx context.Context) (*channel, error) {
	select {
	case ch := <-c.free:
		return ch, nil
	default:
	}
	select {
	case ch := <-c.free:
		return ch, nil
	case c.open <- struct{}{}:
		ch, err := c.openChannel(ctx)
		if err != nil {
			<-c.open
			return nil, err
		}
		return ch, nil
	case <-ctx.Done():
		return nil, broker.TimedOut(fmt.Errorf("waiting for a free AMQP channel: %w", ctx.Err()))
	}
}

// openChannel opens a channel in confirm mode, within ctx (within).
func (c *conn) openChannel(ctx context.Context) (*channel, error) {
	var ach *amqp.Channel
	err := c.within(ctx, func() (err error) {
		if ach, err = c.c.Channel(); err != nil {
			return broker.AfterConnect(err)
		}
		if err := ach.Confirm(false); err != nil {
			ach.Close()
			return broker.AfterConnect(err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &channel{
		ch:      ach,
		returns: ach.NotifyReturn(make(chan amqp.Return, 1)),
		closes:  ach.NotifyClose(make(chan *amqp.Error, 1)),
	}, nil
}

// release gives a channel back, or drops it when the broker closed it.
func (c *conn) release(ch *channel) {
	if ch.ch.IsClosed() {
		c.discard(ch)
		return
	}
	c.free <- ch
}

// discard closes a channel and frees its place, waiting for the broker's
// answer broker.WriteTimeout at most (within).
func (c *conn) discard(ch *channel) {
	ctx, cancel := context.WithTimeout(context.Background(), broker.WriteTimeout)
	defer cancel()
	_ = c.within(ctx, ch.ch.Close)
	<-c.open
}

// within runs f, AMQP methods that wait for the broker's answer, and
// aborts the connection when ctx ends first: amqp091-go's waits have no
// timeout, and a broker that stops reading the connection — RabbitMQ does
// so to a publishing connection while a memory or disk alarm lasts — holds
// them for ever, its heartbeats still coming. f then fails (as does every
// call waiting on the connection) and the pool drops the connection
// (Broken).
func (c *conn) within(ctx context.Context, f func() error) error {
	stop := context.AfterFunc(ctx, c.abort)
	err := f()
	if !stop() {
		return broker.TimedOut(fmt.Errorf("no answer from the broker (the connection is closed): %w", ctx.Err()))
	}
	return err
}

// abort closes the TCP connection under the AMQP one: every read and
// write on it fails, and amqp091-go shuts the connection down.
func (c *conn) abort() {
	if c.raw != nil {
		c.raw.Close()
	}
}

// Broken reports whether the connection is closed.
func (c *conn) Broken() bool { return c.c.IsClosed() }

// Close closes the connection (and its channels).
func (c *conn) Close() {
	// The broker's answer is waited for broker.WriteTimeout at most
	// (CloseDeadline), and not by the caller (the pool, under its lock).
	c.closeOnce.Do(func() { go c.c.CloseDeadline(time.Now().Add(broker.WriteTimeout)) })
}
