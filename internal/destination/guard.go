package destination

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// CheckTimeout bounds the lookup Guard.Check makes of a host name when a
// subscription's URL is created or changed; a name that has not resolved by
// then is accepted.
const CheckTimeout = 3 * time.Second

// Guard is a Policy and the Resolver host names are looked up with: what
// the Dialer judges each connection by, and what Check judges a URL's host
// by when a subscription is created or changed.
type Guard struct {
	Policy Policy
	// Resolver looks names up (nil: net.DefaultResolver).
	Resolver Resolver
}

// Lookup returns the addresses a connection to host may go to, for a
// dial's network ("tcp", "tcp4", "tcp6"), without judging them:
//   - a literal address: itself;
//   - localhost and the names under it, in any case, with or without the
//     trailing dot: 127.0.0.1 and ::1 (RFC 6761 §6.3), without asking the
//     Resolver;
//   - a name under invalid or onion: a not-found *net.DNSError, without
//     asking the Resolver;
//   - a name of a local network (under local, home.arpa or internal) when
//     the policy allows no address that is not public: a *NameBlockedError,
//     without asking the Resolver;
//   - any other name: what the Resolver answers (no addresses is a
//     not-found *net.DNSError).
func (g Guard) Lookup(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	switch s := special(host); s.kind {
	case loopbackName:
		return loopbackAddrs(network), nil
	case unresolvableName:
		return nil, &net.DNSError{Err: "no such host: it " + s.why, Name: host, IsNotFound: true}
	case localNetworkName:
		if !g.Policy.allowsNonPublic() {
			return nil, &NameBlockedError{Name: host, Why: s.why}
		}
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, lookupNetwork(network), host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// Check judges the host of a subscription's URL (a hostname, without
// brackets or port) when the URL is created or changed. It returns:
//   - a *BlockedError for a literal address the policy refuses;
//   - a *NameBlockedError for a name every address of which the policy
//     refuses (a loopback name under a policy that allows no loopback
//     address; a name the Resolver answers, within CheckTimeout, only with
//     refused addresses), or for a local network's name (see Lookup);
//   - nil otherwise, and for a name that does not resolve, or not within
//     CheckTimeout: its DNS may come later, and the Dialer judges every
//     connection anyway.
func (g Guard) Check(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	addrs, err := g.Lookup(ctx, "tcp", host)
	if err != nil {
		if IsBlocked(err) {
			return err
		}
		return nil
	}
	var blocked []*BlockedError
	for _, a := range addrs {
		err := g.Policy.Allowed(a)
		if err == nil {
			return nil
		}
		blocked = append(blocked, err.(*BlockedError))
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return blocked[0]
	}
	return &NameBlockedError{Name: host, Why: special(host).why, Blocked: blocked}
}

// NameBlockedError is the answer for a host name the policy refuses as a
// whole: every address it resolves to is refused, or it is a local
// network's name under a policy that allows no address that is not public.
type NameBlockedError struct {
	Name string
	// Why says what a special-use name is ("" for another name), as the
	// predicate of a sentence whose subject is the name.
	Why string
	// Blocked are its addresses, each refused; none for a local network's
	// name, which is refused before any lookup.
	Blocked []*BlockedError
}

// maxListed bounds the addresses a NameBlockedError names.
const maxListed = 4

func (e *NameBlockedError) Error() string {
	return fmt.Sprintf("destination %s is blocked: it %s (%s)", e.Name, e.Reason(), e.Hint())
}

// Reason says why the name is refused, as the predicate of a sentence whose
// subject is the name: what the name is, and the addresses it means with
// their class and range (at most four).
func (e *NameBlockedError) Reason() string {
	const refused = "which Herald does not deliver to by default"
	if len(e.Blocked) == 0 {
		return e.Why + ", " + refused + " and does not look up"
	}
	list := make([]string, 0, maxListed+1)
	for i, b := range e.Blocked {
		if i == maxListed {
			list = append(list, fmt.Sprintf("and %d more", len(e.Blocked)-maxListed))
			break
		}
		list = append(list, fmt.Sprintf("%s (%s, %s)", b.Addr, b.Class.Name, b.Range))
	}
	if e.Why != "" {
		return e.Why + ": it resolves only to " + strings.Join(list, ", ") + ", " + refused
	}
	return "resolves only to " + strings.Join(list, ", ") + ", " + refused
}

// Hint says how to allow the name: the flags that would allow its
// addresses (see BlockedError.Hint; the ranges of the first four), with
// --allow-private-destinations when it allows some (one allowed address is
// enough to deliver).
func (e *NameBlockedError) Hint() string {
	if len(e.Blocked) == 0 {
		return "start Herald with --allow-private-destinations, or --allow-destinations with the range of its addresses"
	}
	private := false
	var ranges []string
	for _, b := range e.Blocked {
		private = private || b.Class.Private
		if r := b.allowRange().String(); !slices.Contains(ranges, r) && len(ranges) < maxListed {
			ranges = append(ranges, r)
		}
	}
	return hint(private, strings.Join(ranges, ","))
}
