package destination

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// Resolver looks up a host name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer makes connections only to addresses its Policy allows. A host name
// is resolved on every dial (Guard.Lookup: localhost and the names under it
// mean 127.0.0.1 and ::1 and other special-use names are answered without
// asking the Resolver) and each of its addresses checked: the allowed ones
// are tried in the resolver's order, the refused ones never; when none is
// allowed the dial fails with a *BlockedError or a *NameBlockedError
// (wrapped in a *net.OpError). Each connection's address is checked once
// more just before it connects (net.Dialer.Control), so nothing reaches a
// refused address whatever path the dial took. Since every new connection
// is checked, a name that resolved to a public address once and to a
// refused one later (DNS rebinding) is refused then.
type Dialer struct {
	Policy Policy
	// Resolver looks names up (default net.DefaultResolver).
	Resolver Resolver
	// Dialer connects (default: a zero net.Dialer). Its Control, if any,
	// runs after the policy's check.
	Dialer *net.Dialer
}

// DialContext is an http.Transport's DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("port %q: %w", portStr, err)}
	}
	addrs, err := Guard{Policy: d.Policy, Resolver: d.Resolver}.Lookup(ctx, network, host)
	if IsBlocked(err) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	if err != nil {
		return nil, err
	}
	nd := d.netDialer()
	var firstErr error
	for _, a := range addrs {
		if err := d.Policy.Allowed(a); err != nil {
			if firstErr == nil {
				firstErr = &net.OpError{Op: "dial", Net: network, Addr: tcpAddr(a, port), Err: err}
			}
			continue
		}
		conn, err := nd.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil || IsBlocked(firstErr) {
			firstErr = err // a connection error says more than a refused sibling address
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// netDialer is the net.Dialer with the policy's last check in Control.
func (d *Dialer) netDialer() *net.Dialer {
	nd := net.Dialer{}
	if d.Dialer != nil {
		nd = *d.Dialer
	}
	inner := nd.Control
	nd.Control = func(network, address string, c syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("destination check: %w", err)
		}
		if err := d.Policy.Allowed(ap.Addr()); err != nil {
			return err
		}
		if inner != nil {
			return inner(network, address, c)
		}
		return nil
	}
	nd.ControlContext = nil
	return &nd
}

func tcpAddr(a netip.Addr, port uint64) net.Addr {
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, uint16(port)))
}
