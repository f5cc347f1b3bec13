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
