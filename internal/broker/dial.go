package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"

	"github.com/herald-events/herald/internal/destination"
)

// DialTimeout bounds the making of one TCP connection to a broker (the
// attempt's own deadline may end it sooner); the protocol's handshake
// after it is bounded by the attempt's deadline.
const DialTimeout = 10 * time.Second

// WriteTimeout bounds one write to a broker's connection made by a client
// library that sets no write deadline of its own (amqp091-go and
// paho.golang: AMQP and MQTT, destinations and sources; nats.go and
// franz-go bound their writes themselves): a broker that stops reading,
// its socket buffers full, fails the write — the library then closes the
// connection, which the pool drops — instead of holding a publish, an
// acknowledgement or a ping, and every publish queued behind it, for
// ever. A publish may so outlive its attempt's deadline by WriteTimeout
// at most.
const WriteTimeout = 10 * time.Second

// WriteBounded is nc with each Write bounded by WriteTimeout.
func WriteBounded(nc net.Conn) net.Conn { return writeBounded{nc} }

type writeBounded struct{ net.Conn }

func (c writeBounded) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(WriteTimeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// NewDialFunc returns the DialFunc broker connections are made with: the
// destination guard of the HTTP attempts (destination.Dialer: the host is
// resolved on every dial and only addresses policy allows are
// connected to, so a broker's address passes the same
// --allow-private-destinations and --allow-destinations rules as a
// webhook's), within DialTimeout. A failed dial is OutcomeUnreachable; a
// refused address keeps its *destination.BlockedError in the chain
// (destination.IsBlocked), which the caller reports as
// destination_blocked.
func NewDialFunc(policy destination.Policy, r destination.Resolver) DialFunc {
	d := &destination.Dialer{
		Policy:   policy,
		Resolver: r,
		Dialer:   &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second},
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, DialTimeout)
		defer cancel()
		conn, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, Unreachable(err)
		}
		return conn, nil
	}
}

// DialTLS dials address with dial and, when c is Secure, makes the TLS
// handshake (c.TLSConfig of the address's host) by ctx's deadline. A
// certificate Herald does not trust is OutcomeRefused (IsCertificateError),
// any other failure OutcomeUnreachable.
func DialTLS(ctx context.Context, dial DialFunc, c Settings, network, address string) (net.Conn, error) {
	nc, err := dial(ctx, network, address)
	if err != nil || !c.Secure() {
		return nc, err
	}
	host, _, _ := net.SplitHostPort(address)
	tc, err := c.TLSConfig(host)
	if err != nil {
		nc.Close()
		return nil, err
	}
	conn := tls.Client(nc, tc)
	if err := conn.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, AfterConnect(err)
	}
	return conn, nil
}

// IsCertificateError reports whether err is a broker's certificate that
// Herald does not trust: signed by an authority not trusted (not the
// tls.ca_pem's, nor the system's), for another name, expired or
// otherwise invalid. Such a connection is OutcomeRefused: no retry mends
// it before its settings change.
func IsCertificateError(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	_, ok := errors.AsType[x509.CertificateInvalidError](err)
	return ok
}
