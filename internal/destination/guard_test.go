package destination

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// askedResolver answers every name with addrs and records the names it is
// asked; with t set, being asked fails the test.
type askedResolver struct {
	t     *testing.T
	addrs []netip.Addr
	asked []string
}

func (r *askedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if r.t != nil {
		r.t.Errorf("the resolver was asked %q", host)
	}
	r.asked = append(r.asked, host)
	return r.addrs, nil
}

func TestSpecialNames(t *testing.T) {
	for host, want := range map[string]nameKind{
		"localhost": loopbackName, "LOCALHOST.": loopbackName, "foo.localhost": loopbackName,
		"a.b.LocalHost.": loopbackName, "localhost.example": ordinaryName, "notlocalhost": ordinaryName,
		"printer.local": localNetworkName, "local": localNetworkName, "PRINTER.LOCAL.": localNetworkName,
		"locale.example": ordinaryName, "router.home.arpa": localNetworkName, "home.arpa": localNetworkName,
		"in-addr.arpa": ordinaryName, "build.internal": localNetworkName, "international": ordinaryName,
		"x.invalid": unresolvableName, "INVALID.": unresolvableName, "abc.onion": unresolvableName,
		"host.test": ordinaryName, "example.com": ordinaryName, "example": ordinaryName,
	} {
		if got := special(host).kind; got != want {
			t.Errorf("special(%q) = %v, want %v", host, got, want)
		}
	}
	if NeverResolves("x.invalid") == "" || NeverResolves("localhost") != "" || NeverResolves("example.com") != "" {
		t.Error("NeverResolves: want a reason for x.invalid only")
	}
}

// TestLookupAnswersSpecialNames: loopback names mean 127.0.0.1 and ::1 (as
// the network asks), invalid and onion names are not found, and a local
// network's names are refused under a public-only policy, all without
// asking the resolver; once the policy allows a non-public range a local
// network's name is looked up.
func TestLookupAnswersSpecialNames(t *testing.T) {
	g := Guard{Resolver: &askedResolver{t: t}}
	v4, v6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")
	for _, host := range []string{"localhost", "localhost.", "LOCALHOST.", "foo.localhost", "Foo.LocalHost."} {
		for network, want := range map[string][]netip.Addr{"tcp": {v4, v6}, "tcp4": {v4}, "tcp6": {v6}} {
			if got, err := g.Lookup(context.Background(), network, host); err != nil || !slices.Equal(got, want) {
				t.Errorf("Lookup(%s, %q) = %v, %v; want %v", network, host, got, err, want)
			}
		}
	}
	for _, host := range []string{"receiver.invalid", "INVALID.", "abc.onion"} {
		_, err := g.Lookup(context.Background(), "tcp", host)
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Errorf("Lookup(%q): %v, want not found", host, err)
		}
	}
	for _, host := range []string{"printer.local", "router.home.arpa.", "build.INTERNAL"} {
		_, err := g.Lookup(context.Background(), "tcp", host)
		var nb *NameBlockedError
		if !errors.As(err, &nb) || nb.Name != host || nb.Why == "" || len(nb.Blocked) != 0 ||
			!strings.Contains(nb.Error(), "does not look up") || !strings.Contains(nb.Hint(), "--allow-private-destinations") {
			t.Errorf("Lookup(%q) under a public-only policy: %v, want a NameBlockedError", host, err)
		}
	}
	for _, p := range []Policy{{AllowPrivate: true}, {Allow: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10")}}} {
		r := &askedResolver{addrs: []netip.Addr{netip.MustParseAddr("192.168.1.20")}}
		got, err := Guard{Policy: p, Resolver: r}.Lookup(context.Background(), "tcp", "printer.local")
		if err != nil || len(got) != 1 || !slices.Equal(r.asked, []string{"printer.local"}) {
			t.Errorf("%+v: Lookup(printer.local) = %v, %v, asked %q; want it looked up", p, got, err, r.asked)
		}
	}
}

// TestCheck: what a create refuses, and what it accepts: a literal refused
// address is a *BlockedError; a name whose every address is refused a
// *NameBlockedError listing at most four of them with the flags that allow
// them; a name with one allowed address, one that is not found, or one the
// resolver fails on is accepted.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	var b *BlockedError
	if err := (Guard{Resolver: &askedResolver{t: t}}).Check(ctx, "10.1.2.3"); !errors.As(err, &b) || b.Class != Private {
		t.Errorf("Check(10.1.2.3): %v, want a private BlockedError", err)
	}
	var many []netip.Addr
	for i := range 6 {
		many = append(many, netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}))
	}
	many = append(many, netip.MustParseAddr("169.254.169.254"))
	err := Guard{Resolver: &askedResolver{addrs: many}}.Check(ctx, "many.example")
	var nb *NameBlockedError
	if !errors.As(err, &nb) || len(nb.Blocked) != 7 {
		t.Fatalf("Check(many.example): %v, want a NameBlockedError with its 7 addresses", err)
	}
	want := "resolves only to 10.0.0.1 (private, 10.0.0.0/8), 10.0.0.2 (private, 10.0.0.0/8), 10.0.0.3 (private, 10.0.0.0/8), " +
		"10.0.0.4 (private, 10.0.0.0/8), and 3 more, which Herald does not deliver to by default"
	if nb.Reason() != want {
		t.Errorf("Reason() = %q\nwant %q", nb.Reason(), want)
	}
	if h := nb.Hint(); h != "start Herald with --allow-private-destinations or --allow-destinations 10.0.0.0/8,169.254.169.254/32" {
		t.Errorf("Hint() = %q", h)
	}
	if !IsBlocked(fmt.Errorf("wrapped: %w", err)) || !strings.HasPrefix(err.Error(), "destination many.example is blocked: it resolves only to") {
		t.Errorf("%v: want IsBlocked and an error naming the destination", err)
	}
	meta := Guard{Resolver: &askedResolver{addrs: []netip.Addr{netip.MustParseAddr("169.254.169.254")}}}.Check(ctx, "m.example")
	if !errors.As(meta, &nb) || nb.Hint() != "start Herald with --allow-destinations 169.254.169.254/32" {
		t.Errorf("Check(m.example): %v, want the hint of the one address", meta)
	}
	for name, r := range map[string]Resolver{
		"one allowed address": &askedResolver{addrs: []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("8.8.8.8")}},
		"no address":          &askedResolver{},
		"a failing resolver":  failingResolver{},
	} {
		if err := (Guard{Resolver: r}).Check(ctx, "svc.example"); err != nil {
			t.Errorf("%s: %v, want it accepted", name, err)
		}
	}
}

// failingResolver fails every lookup as a DNS server that does not answer.
type failingResolver struct{}

func (failingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
}

// TestDialerLoopbackName: a Dialer given a loopback name never asks its
// resolver: under a public-only policy the dial is refused as loopback;
// with --allow-private-destinations, or 127.0.0.0/8 allowed, it connects to
// 127.0.0.1. A local network's name is refused as a name.
func TestDialerLoopbackName(t *testing.T) {
	port := strconv.Itoa(listen(t))
	for _, host := range []string{"localhost.", "LOCALHOST", "hooks.localhost"} {
		d := &Dialer{Resolver: &askedResolver{t: t}}
		conn, err := d.DialContext(context.Background(), "tcp4", net.JoinHostPort(host, port))
		var b *BlockedError
		var op *net.OpError
		if conn != nil || !errors.As(err, &b) || b.Class != Loopback || !errors.As(err, &op) {
			t.Errorf("dial %s under a public-only policy: %v, want refused as loopback", host, err)
		}
		for _, p := range []Policy{{AllowPrivate: true}, {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}} {
			d := &Dialer{Policy: p, Resolver: &askedResolver{t: t}}
			conn, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort(host, port))
			if err != nil {
				t.Errorf("dial %s under %+v: %v", host, p, err)
				continue
			}
			if got := conn.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got != netip.MustParseAddr("127.0.0.1") {
				t.Errorf("dial %s: connected to %s", host, got)
			}
			conn.Close()
		}
	}
	d := &Dialer{Resolver: &askedResolver{t: t}}
	_, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("printer.local", port))
	var nb *NameBlockedError
	var op *net.OpError
	if !errors.As(err, &nb) || !errors.As(err, &op) || !IsBlocked(err) {
		t.Errorf("dial printer.local under a public-only policy: %v, want a NameBlockedError in a *net.OpError", err)
	}
}

// TestRefusalOf: both refusals, wrapped as a dial wraps them, give what
// the log says of them; any other error gives none.
func TestRefusalOf(t *testing.T) {
	g := Guard{Resolver: &askedResolver{t: t}}
	_, nameErr := g.Lookup(context.Background(), "tcp", "printer.local")
	addrErr := Policy{}.Allowed(netip.MustParseAddr("10.1.2.3"))
	for _, c := range []struct {
		err  error
		want Refusal
		ok   bool
	}{
		{fmt.Errorf("dial: %w", addrErr), Refusal{Destination: "10.1.2.3", Class: "private", Hint: addrErr.(*BlockedError).Hint()}, true},
		{fmt.Errorf("dial: %w", nameErr), Refusal{Destination: "printer.local", Hint: nameErr.(*NameBlockedError).Hint()}, true},
		{errors.New("connection refused"), Refusal{}, false},
	} {
		if got, ok := RefusalOf(c.err); got != c.want || ok != c.ok || IsBlocked(c.err) != c.ok {
			t.Errorf("RefusalOf(%v) = %+v, %v; want %+v, %v", c.err, got, ok, c.want, c.ok)
		}
	}
}
