package destination

import (
	"net/netip"
	"strings"
)

// nameKind is how Herald treats a special-use domain name.
type nameKind int

const (
	// ordinaryName is looked up with the Resolver.
	ordinaryName nameKind = iota
	// loopbackName always names this host: it means 127.0.0.1 and ::1
	// without asking any resolver (RFC 6761 §6.3), and the policy judges
	// those addresses.
	loopbackName
	// localNetworkName is answered only by the local network (its DNS
	// server or multicast DNS), so its addresses are the network's own:
	// unless the policy allows some non-public range, it is refused
	// without asking any resolver; otherwise it is looked up and its
	// addresses judged.
	localNetworkName
	// unresolvableName never resolves for Herald: it is answered "no such
	// host" without asking any resolver.
	unresolvableName
)

// specialName is a special-use domain and what it is.
type specialName struct {
	domain string
	kind   nameKind
	// why says what a name under domain is, as the predicate of a
	// sentence whose subject is the name.
	why string
}

// specialNames are the special-use domains Herald answers itself (the list
// and the reasons are in docs/security.md). The other names of the IANA
// special-use registry (test, example, …) are looked up as any name: RFC
// 6761 asks resolvers not to treat them specially.
var specialNames = []specialName{
	{"localhost", loopbackName, "always names this host (RFC 6761)"},
	{"local", localNetworkName, "is a multicast DNS name of the local link (RFC 6762)"},
	{"home.arpa", localNetworkName, "is a name of a home network (RFC 8375)"},
	{"internal", localNetworkName, "is a private-use name of a local network (.internal, reserved by ICANN)"},
	{"invalid", unresolvableName, "never resolves (RFC 6761)"},
	{"onion", unresolvableName, "is a Tor onion service (RFC 7686), which Herald does not reach"},
}

// special returns the special-use domain host (a host name, in any case,
// with or without the trailing dot) is in or under; kind ordinaryName when
// none.
func special(host string) specialName {
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, s := range specialNames {
		if name == s.domain || strings.HasSuffix(name, "."+s.domain) {
			return s
		}
	}
	return specialName{}
}

// NeverResolves returns why host can never be delivered to whatever the
// policy (it is under invalid or onion, which Herald answers "no such
// host" without asking a resolver), or "" when it may be.
func NeverResolves(host string) string {
	if s := special(host); s.kind == unresolvableName {
		return s.why
	}
	return ""
}

// loopbackAddrs are the addresses of a loopback name for a dial's network
// ("tcp4": 127.0.0.1; "tcp6": ::1; otherwise both, IPv4 first).
func loopbackAddrs(network string) []netip.Addr {
	v4, v6 := netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()
	switch lookupNetwork(network) {
	case "ip4":
		return []netip.Addr{v4}
	case "ip6":
		return []netip.Addr{v6}
	}
	return []netip.Addr{v4, v6}
}

// lookupNetwork is the Resolver's network for a dial's.
func lookupNetwork(network string) string {
	switch network {
	case "tcp4", "udp4":
		return "ip4"
	case "tcp6", "udp6":
		return "ip6"
	}
	return "ip"
}
