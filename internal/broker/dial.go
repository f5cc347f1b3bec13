package broker

import (
	"context"
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
