// Package natsout publishes CloudEvents to NATS (a Connector of
// internal/broker), following the CloudEvents "NATS Protocol Binding"
// (cloudevents/spec, cloudevents/bindings/nats-protocol-binding.md, 1.0.3,
// which adds binary mode on NATS headers):
//   - binary mode: each attribute a ce-NAME header, its value
//     percent-encoded as the binding's "NATS Header Values" (the HTTP
//     binding's rule, event.PercentEncode; a NATS source decodes it,
//     internal/sourcing), the datacontenttype the ce-datacontenttype header
//     (the binding's) and the content-type header too (where the
//     CloudEvents Go SDK reads it), the data the payload;
//   - structured mode: the JSON event format as the payload, content-type
//     application/cloudevents+json.
//
// With jetstream the publish waits for the stream's PubAck (no stream for
// the subject, or an API error, is broker_refused); without, a core
// publish is flushed: the server's answer to the PING after it is the
// acknowledgement that it was received. nats.go's reconnection is off:
// a lost connection fails its publishes as broker_unreachable and the
// pool (internal/broker.Pool) dials again on the next attempt.
package natsout

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/event"
)

// conn is a connection to one NATS server (or cluster).
type conn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// Connect is the NATS broker.Connector: d.URL is the server's nats:// or
// tls:// URL (user and password, or a token, as nats.go reads them from
// it; tls:// with d.TLS, TLSOption). The TCP connection is made with dial; nats.go's INFO and CONNECT
// exchange must end within ctx's deadline (or broker.DialTimeout).
func Connect(ctx context.Context, d *broker.Destination, dial broker.DialFunc) (broker.Conn, error) {
	timeout := broker.DialTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	secure, err := TLSOption(d.Settings)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(d.URL,
		nats.SetCustomDialer(dialer{ctx: ctx, dial: dial}),
		nats.SkipHostLookup(), // the guarded dialer resolves
		nats.Timeout(timeout),
		nats.NoReconnect(),
		nats.Name("herald"),
		nats.NoCallbacksAfterClientClose(),
		secure,
	)
	if err != nil {
		return nil, classify(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, broker.Unreachable(err)
	}
	return &conn{nc: nc, js: js}, nil
}

// TLSOption is the nats.go option of s's TLS: for a tls:// URL, TLS with
// s.TLS's roots and server name (nats.go checks the URL's host when none
// is given); otherwise none (a server that requires TLS is then refused).
func TLSOption(s broker.Settings) (nats.Option, error) {
	if !s.Secure() {
		return func(*nats.Options) error { return nil }, nil
	}
	tc, err := s.TLSConfig("")
	if err != nil {
		return nil, err
	}
	return nats.Secure(tc), nil
}

// dialer is nats.go's CustomDialer over a broker.DialFunc.
type dialer struct {
	ctx  context.Context
	dial broker.DialFunc
}

func (d dialer) Dial(network, address string) (net.Conn, error) {
	return d.dial(d.ctx, network, address)
}

// Publish publishes m to subject and waits for its acknowledgement.
func (c *conn) Publish(ctx context.Context, d *broker.Destination, subject string, m broker.Message) error {
	msg := &nats.Msg{Subject: subject, Data: m.Body, Header: headers(m)}
	if d.JetStream {
		_, err := c.js.PublishMsg(ctx, msg, jetstream.WithRetryAttempts(0))
		return classify(err)
	}
	if err := c.nc.PublishMsg(msg); err != nil {
		return classify(err)
	}
	return classify(c.nc.FlushWithContext(ctx))
}

// headers are the message's NATS headers (see the package comment). Names
// are set as written: NATS header names are case-sensitive.
func headers(m broker.Message) nats.Header {
	h := make(nats.Header, len(m.Attributes)+1)
	for _, a := range m.Attributes {
		h["ce-"+a[0]] = []string{event.PercentEncode(a[1])}
	}
	if m.Attributes != nil && m.ContentType != "" {
		h["ce-datacontenttype"] = []string{event.PercentEncode(m.ContentType)}
	}
	if m.ContentType != "" {
		h["content-type"] = []string{m.ContentType}
	}
	return h
}

// classify names a nats.go error's outcome.
func classify(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders),
		errors.As(err, &apiErr), errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired),
		errors.Is(err, nats.ErrPermissionViolation), errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject):
		return broker.Refused(err)
	case errors.Is(err, nats.ErrTimeout):
		return broker.TimedOut(err)
	}
	return broker.AfterConnect(err)
}

// Broken reports whether the connection is closed.
func (c *conn) Broken() bool { return c.nc.IsClosed() }

// Close closes the connection.
func (c *conn) Close() { c.nc.Close() }
