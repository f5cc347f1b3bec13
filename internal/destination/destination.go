// Package destination decides which addresses Herald may deliver to. By
// default only public unicast addresses are allowed: a subscription's URL
// must not make Herald reach into its own host or network (loopback,
// private and link-local ranges, the cloud metadata address) or to an
// address no delivery can go to (unspecified, multicast, broadcast,
// documentation, benchmarking and other reserved ranges). The same
// classification applies to IPv4, IPv6 and IPv4 addresses embedded in IPv6
// (IPv4-mapped ::ffff:0:0/96 and the NAT64 prefix 64:ff9b::/96 are judged
// by the IPv4 address they carry).
//
// Special-use names are answered without asking any resolver (names.go):
// localhost and the names under it mean 127.0.0.1 and ::1 (RFC 6761), the
// names of a local network (local, home.arpa, internal) are refused unless
// the policy allows some non-public range, invalid and onion never resolve.
//
// The API checks a URL's host when a subscription is created or changed
// (Guard.Check): a literal address, a special-use name, and a name that
// resolves then only to refused addresses are refused. The dialer of the
// attempts (internal/attempting) checks the address of every connection,
// so a host name is judged by what it resolves to each time (DNS
// rebinding is caught on the attempt that resolves to a refused address).
package destination

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Class is a kind of address.
type Class struct {
	// Name is the class in an error message: "loopback", "private", ...
	Name string
	// Private is true for the classes --allow-private-destinations
	// allows: loopback, RFC 1918 and IPv6 unique local addresses.
	Private bool
}

// The classes of addresses. Public is the only one allowed by default.
var (
	Public        = Class{Name: "public"}
	Loopback      = Class{Name: "loopback", Private: true}
	Private       = Class{Name: "private", Private: true}
	LinkLocal     = Class{Name: "link-local"}
	Metadata      = Class{Name: "cloud metadata"}
	CGNAT         = Class{Name: "carrier-grade NAT"} // 100.64.0.0/10, RFC 6598 shared address space
	Unspecified   = Class{Name: "unspecified"}
	Multicast     = Class{Name: "multicast"}
	Broadcast     = Class{Name: "broadcast"}
	Documentation = Class{Name: "documentation"}
	Benchmarking  = Class{Name: "benchmarking"}
	Reserved      = Class{Name: "reserved"}
)

// rule is one range of non-public addresses.
type rule struct {
	prefix netip.Prefix
	class  Class
}

// rules are the non-public ranges, the more specific before the ranges
// that hold them (the first match wins). IPv4-mapped and NAT64 addresses
// are unwrapped before these are consulted; an IPv6 address outside
// 2000::/3 (global unicast) that no rule names is Reserved.
var rules = func() []rule {
	r := func(p string, c Class) rule { return rule{netip.MustParsePrefix(p), c} }
	return []rule{
		// IPv4 (RFC 6890 and the IANA special-purpose registry).
		r("0.0.0.0/8", Unspecified), // "this network": 0.0.0.0 reaches the local host
		r("10.0.0.0/8", Private),
		r("100.64.0.0/10", CGNAT), // also Alibaba Cloud's metadata 100.100.100.200
		r("127.0.0.0/8", Loopback),
		r("169.254.169.254/32", Metadata), // AWS, GCP, Azure, OpenStack, ...
		r("169.254.0.0/16", LinkLocal),    // also AWS ECS 169.254.170.2, time 169.254.169.123
		r("172.16.0.0/12", Private),
		r("192.0.0.0/24", Reserved), // IETF protocol assignments
		r("192.0.2.0/24", Documentation),
		r("192.88.99.0/24", Reserved), // former 6to4 relay anycast
		r("192.168.0.0/16", Private),
		r("198.18.0.0/15", Benchmarking),
		r("198.51.100.0/24", Documentation),
		r("203.0.113.0/24", Documentation),
		r("224.0.0.0/4", Multicast),
		r("255.255.255.255/32", Broadcast),
		r("240.0.0.0/4", Reserved),

		// IPv6.
		r("::/128", Unspecified),
		r("::1/128", Loopback),
		r("::/96", Reserved),     // IPv4-compatible (deprecated)
		r("100::/64", Reserved),  // discard-only
		r("2001::/23", Reserved), // IETF protocol assignments: Teredo, ORCHID, benchmarking 2001:2::/48
		r("2001:db8::/32", Documentation),
		r("2002::/16", Reserved), // 6to4 (deprecated): the IPv4 it carries is not checked
		r("3fff::/20", Documentation),
		r("fd00:ec2::254/128", Metadata), // AWS's IPv6 metadata address
		r("fc00::/7", Private),           // unique local
		r("fe80::/10", LinkLocal),
		r("fec0::/10", Reserved), // site-local (deprecated)
		r("ff00::/8", Multicast),
		r("64:ff9b:1::/48", Reserved), // local-use NAT64: its mapping is the network's own
	}
}()

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	globalIPv6 = netip.MustParsePrefix("2000::/3")
)

// Classify returns an address's class and the range that gave it (invalid
// for Public). An IPv4-mapped address (::ffff:10.0.0.1) and a NAT64 one
// (64:ff9b::10.0.0.1) are classified by the IPv4 address they carry; the
// zone of a scoped address is ignored.
func Classify(a netip.Addr) (Class, netip.Prefix) {
	a = a.WithZone("")
	if v4, ok := embeddedIPv4(a); ok {
		a = v4
	}
	for _, r := range rules {
		if r.prefix.Contains(a) {
			return r.class, r.prefix
		}
	}
	if !a.IsValid() {
		return Reserved, netip.Prefix{}
	}
	if a.Is6() && !globalIPv6.Contains(a) {
		return Reserved, netip.PrefixFrom(a, 128)
	}
	return Public, netip.Prefix{}
}

// embeddedIPv4 returns the IPv4 address an IPv4-mapped or NAT64 (well-known
// prefix) IPv6 address carries.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	switch {
	case a.Is4In6():
		return a.Unmap(), true
	case a.Is6() && nat64.Contains(a):
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:])), true
	}
	return netip.Addr{}, false
}

// Policy says which addresses Herald may deliver to. The zero Policy
// allows only public addresses.
type Policy struct {
	// AllowPrivate allows loopback, private (RFC 1918) and unique local
	// (fc00::/7) addresses: --allow-private-destinations. Link-local
	// addresses, the cloud metadata addresses and the other classes stay
	// refused; only Allow lets them through.
	AllowPrivate bool
	// Allow are ranges allowed whatever their class: --allow-destinations.
	// An IPv4 range also allows the same addresses IPv4-mapped or NAT64.
	Allow []netip.Prefix
}

// BlockedError is the answer for an address the policy refuses.
type BlockedError struct {
	Addr  netip.Addr
	Class Class
	// Range is the class's range that holds Addr (for an IPv4-mapped or
	// NAT64 address, the IPv4 range).
	Range netip.Prefix
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("destination %s is blocked: %s address (%s), which Herald does not deliver to unless allowed (%s)",
		e.Addr, e.Class.Name, e.Range, e.Hint())
}

// Hint says how to allow the address: the flags that would. For loopback
// and private addresses it names --allow-private-destinations and the
// class's range; for the others, which that flag does not allow, the one
// address (allowing all of 169.254.0.0/16 would allow the metadata address).
func (e *BlockedError) Hint() string {
	return hint(e.Class.Private, e.allowRange().String())
}

// allowRange is the range Hint names: the class's range for loopback and
// private addresses, else the one address (its IPv4 address when it
// carries one).
func (e *BlockedError) allowRange() netip.Prefix {
	if e.Class.Private {
		return e.Range
	}
	a := e.Addr
	if v4, ok := embeddedIPv4(a); ok {
		a = v4
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// hint names the flags that allow ranges: --allow-private-destinations too
// when private says that flag would.
func hint(private bool, ranges string) string {
	if private {
		return "start Herald with --allow-private-destinations or --allow-destinations " + ranges
	}
	return "start Herald with --allow-destinations " + ranges
}

// Allowed returns nil when the policy allows delivering to a, else a
// *BlockedError naming the class that refused it.
func (p Policy) Allowed(a netip.Addr) error {
	a = a.WithZone("")
	c, r := Classify(a)
	if c == Public || c.Private && p.AllowPrivate {
		return nil
	}
	v4, mapped := embeddedIPv4(a)
	for _, pf := range p.Allow {
		if pf.Contains(a) || mapped && pf.Contains(v4) {
			return nil
		}
	}
	return &BlockedError{Addr: a, Class: c, Range: r}
}

// IsBlocked reports whether err is, or wraps, a *BlockedError or a
// *NameBlockedError.
func IsBlocked(err error) bool {
	_, ok := RefusalOf(err)
	return ok
}

// Refusal is what the log says of a destination the policy refused (see
// RefusalOf): the address or name, the class of the address ("" for a
// name refused as a whole), and how to allow it.
type Refusal struct {
	Destination, Class, Hint string
}

// RefusalOf returns the refusal err is or wraps: a *BlockedError (an
// address) or a *NameBlockedError (a name, which has no one class). ok is
// false for any other error.
func RefusalOf(err error) (r Refusal, ok bool) {
	var b *BlockedError
	var n *NameBlockedError
	switch {
	case errors.As(err, &b):
		return Refusal{Destination: b.Addr.String(), Class: b.Class.Name, Hint: b.Hint()}, true
	case errors.As(err, &n):
		return Refusal{Destination: n.Name, Hint: n.Hint()}, true
	}
	return Refusal{}, false
}

// allowsNonPublic reports whether the policy allows any address that is
// not public: then a local network's names may be looked up (see Guard).
func (p Policy) allowsNonPublic() bool { return p.AllowPrivate || len(p.Allow) > 0 }

// ParsePrefixes reads --allow-destinations: ranges in CIDR notation (or
// single addresses) separated by commas, spaces around them ignored. The
// empty string is no range. A range must be written with its host bits
// zero (10.0.0.0/8, not 10.1.2.3/8), so that it says what it allows.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("%q: an empty range between commas", s)
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not an address or a range in CIDR notation such as 10.0.0.0/8", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a range in CIDR notation such as 10.0.0.0/8 or fd00::/8", f)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("%q has host bits set: write %s", f, p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
}

// FormatPrefixes writes ranges as ParsePrefixes reads them.
func FormatPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
