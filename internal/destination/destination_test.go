package destination

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// classTable is every class of address with examples, in IPv4, IPv6 and
// IPv4-mapped IPv6 where the class has them.
var classTable = []struct {
	addr  string
	class Class
}{
	{"8.8.8.8", Public},
	{"1.1.1.1", Public},
	{"93.184.216.34", Public},
	{"2606:4700::1111", Public},
	{"2001:4860:4860::8888", Public},
	{"::ffff:8.8.8.8", Public},
	{"64:ff9b::8.8.8.8", Public}, // NAT64 of a public address
	{"100.63.255.255", Public},   // just below CGNAT
	{"100.128.0.0", Public},      // just above
	{"172.15.255.255", Public},
	{"172.32.0.0", Public},
	{"198.17.255.255", Public},
	{"198.20.0.0", Public},
	{"223.255.255.255", Public},

	{"127.0.0.1", Loopback},
	{"127.255.255.254", Loopback},
	{"::1", Loopback},
	{"::ffff:127.0.0.1", Loopback},
	{"64:ff9b::127.0.0.1", Loopback},

	{"10.0.0.1", Private},
	{"10.255.255.255", Private},
	{"172.16.0.1", Private},
	{"172.31.255.255", Private},
	{"192.168.1.1", Private},
	{"::ffff:10.0.0.1", Private},
	{"::ffff:192.168.0.1", Private},
	{"fc00::1", Private},
	{"fd12:3456::1", Private},

	{"169.254.169.254", Metadata},
	{"::ffff:169.254.169.254", Metadata},
	{"64:ff9b::169.254.169.254", Metadata},
	{"fd00:ec2::254", Metadata},

	{"169.254.0.1", LinkLocal},
	{"169.254.170.2", LinkLocal},
	{"::ffff:169.254.1.1", LinkLocal},
	{"fe80::1", LinkLocal},
	{"fe80::1%eth0", LinkLocal},
	{"febf::1", LinkLocal},

	{"100.64.0.1", CGNAT},
	{"100.100.100.200", CGNAT},
	{"100.127.255.255", CGNAT},
	{"::ffff:100.64.0.1", CGNAT},

	{"0.0.0.0", Unspecified},
	{"0.1.2.3", Unspecified},
	{"::", Unspecified},
	{"::ffff:0.0.0.0", Unspecified},

	{"224.0.0.1", Multicast},
	{"239.255.255.250", Multicast},
	{"ff02::1", Multicast},
	{"ff05::1:3", Multicast},
	{"::ffff:224.0.0.251", Multicast},

	{"255.255.255.255", Broadcast},
	{"::ffff:255.255.255.255", Broadcast},

	{"192.0.2.1", Documentation},
	{"198.51.100.7", Documentation},
	{"203.0.113.9", Documentation},
	{"2001:db8::1", Documentation},
	{"3fff::1", Documentation},
	{"::ffff:192.0.2.1", Documentation},

	{"198.18.0.1", Benchmarking},
	{"198.19.255.255", Benchmarking},
	{"::ffff:198.18.0.1", Benchmarking},

	{"240.0.0.1", Reserved},
	{"254.255.255.255", Reserved},
	{"192.0.0.8", Reserved},
	{"192.0.0.170", Reserved},
	{"192.88.99.1", Reserved},
	{"::ffff:240.0.0.1", Reserved},
	{"::127.0.0.1", Reserved}, // IPv4-compatible, deprecated
	{"100::1", Reserved},
	{"2001::1", Reserved},       // Teredo
	{"2001:2::1", Reserved},     // benchmarking
	{"2001:20::1", Reserved},    // ORCHIDv2
	{"2002:a00:1::1", Reserved}, // 6to4 of 10.0.0.1
	{"64:ff9b:1::a00:1", Reserved},
	{"fec0::1", Reserved},
	{"4000::1", Reserved}, // outside 2000::/3
	{"1::1", Reserved},
}

func TestClassify(t *testing.T) {
	for _, c := range classTable {
		a := netip.MustParseAddr(c.addr)
		got, r := Classify(a)
		if got != c.class {
			t.Errorf("Classify(%s) = %q (%s), want %q", c.addr, got.Name, r, c.class.Name)
		}
		if got != Public && !r.IsValid() {
			t.Errorf("Classify(%s): no range", c.addr)
		}
	}
}

// TestPolicy: the zero policy allows only public addresses;
// AllowPrivate adds loopback and private ones, nothing else; Allow adds
// its ranges whatever their class, IPv4 ranges also IPv4-mapped.
func TestPolicy(t *testing.T) {
	allowAll := Policy{AllowPrivate: true, Allow: []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	for _, c := range classTable {
		a := netip.MustParseAddr(c.addr)
		err := Policy{}.Allowed(a)
		if (err == nil) != (c.class == Public) {
			t.Errorf("default policy, %s (%s): %v", c.addr, c.class.Name, err)
		}
		if err != nil {
			var b *BlockedError
			if !errors.As(err, &b) || b.Class != c.class || !strings.Contains(err.Error(), c.class.Name) || !strings.Contains(err.Error(), "--allow-destinations") {
				t.Errorf("default policy, %s: error %v, want a BlockedError of class %q naming --allow-destinations", c.addr, err, c.class.Name)
			}
			if c.class.Private != strings.Contains(b.Hint(), "--allow-private-destinations") {
				t.Errorf("%s: hint %q", c.addr, b.Hint())
			}
		}
		err = Policy{AllowPrivate: true}.Allowed(a)
		if want := c.class == Public || c.class == Loopback || c.class == Private; (err == nil) != want {
			t.Errorf("AllowPrivate, %s (%s): %v, want allowed %v", c.addr, c.class.Name, err, want)
		}
		if err := allowAll.Allowed(a); err != nil {
			t.Errorf("everything allowed, %s: %v", c.addr, err)
		}
		// The class's own range allows it (the hint's advice works).
		if c.class != Public {
			_, r := Classify(a)
			if err := (Policy{Allow: []netip.Prefix{r}}).Allowed(a); err != nil {
				t.Errorf("allowing %s, %s: %v", r, c.addr, err)
			}
			var b *BlockedError
			errors.As(Policy{}.Allowed(a), &b)
			hinted := b.Hint()[strings.LastIndex(b.Hint(), " ")+1:]
			if err := (Policy{Allow: []netip.Prefix{netip.MustParsePrefix(hinted)}}).Allowed(a); err != nil {
				t.Errorf("allowing the hinted %s, %s: %v", hinted, c.addr, err)
			}
		}
	}
	p := Policy{AllowPrivate: true, Allow: []netip.Prefix{netip.MustParsePrefix("169.254.169.254/32"), netip.MustParsePrefix("100.64.0.0/10")}}
	for addr, want := range map[string]bool{
		"169.254.169.254": true, "::ffff:169.254.169.254": true, "169.254.169.253": false, "fe80::1": false,
		"100.100.1.1": true, "::ffff:100.64.0.1": true, "10.0.0.1": true, "198.18.0.1": false, "0.0.0.0": false,
	} {
		if err := p.Allowed(netip.MustParseAddr(addr)); (err == nil) != want {
			t.Errorf("%+v, %s: %v, want allowed %v", p, addr, err, want)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "",
		"  ":                                 "",
		"10.0.0.0/8":                         "10.0.0.0/8",
		" 10.0.0.0/8 , fd00::/8 ":            "10.0.0.0/8,fd00::/8",
		"169.254.169.254":                    "169.254.169.254/32",
		"::1":                                "::1/128",
		"0.0.0.0/0,::/0":                     "0.0.0.0/0,::/0",
		"100.64.0.0/10,127.0.0.2/32,::1/128": "100.64.0.0/10,127.0.0.2/32,::1/128",
	} {
		ps, err := ParsePrefixes(in)
		if err != nil || FormatPrefixes(ps) != want {
			t.Errorf("ParsePrefixes(%q) = %q, %v; want %q", in, FormatPrefixes(ps), err, want)
		}
	}
	for _, in := range []string{"nope", "10.0.0.0/33", "10.1.2.3/8", "10.0.0.0/8,", ",10.0.0.0/8", "fe80::1%eth0", "example.com", "10.0.0.0/-1", "::/129"} {
		if ps, err := ParsePrefixes(in); err == nil {
			t.Errorf("ParsePrefixes(%q) = %v, want an error", in, ps)
		}
	}
}

// fakeResolver answers every name with addrs.
type fakeResolver struct{ addrs []netip.Addr }

func (f fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f.addrs, nil
}

// listen listens on 127.0.0.1 until the test ends, closing every
// connection it accepts, and returns its port.
func listen(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestDialerRefuses: the dialer refuses every non-public class, given as a
// literal or as the only address a name resolves to, before connecting;
// and with a public and a refused address it goes only to the allowed one.
func TestDialerRefuses(t *testing.T) {
	port := listen(t)
	for _, c := range classTable {
		if c.class == Public {
			continue
		}
		a := netip.MustParseAddr(c.addr)
		for _, d := range []*Dialer{
			{Resolver: fakeResolver{[]netip.Addr{a}}},
			{Resolver: fakeResolver{[]netip.Addr{a, a}}},
		} {
			for _, target := range []string{"name.example:80", net.JoinHostPort(c.addr, "80")} {
				conn, err := d.DialContext(context.Background(), "tcp", target)
				if conn != nil {
					conn.Close()
				}
				var b *BlockedError
				if !errors.As(err, &b) || b.Class != c.class {
					t.Errorf("dial %s (%s): %v, want blocked as %s", target, c.addr, err, c.class.Name)
				}
				var op *net.OpError
				if !errors.As(err, &op) {
					t.Errorf("dial %s: %T, want a *net.OpError", target, err)
				}
			}
		}
	}
	// 127.0.0.1 allowed as if public: the dialer connects, skipping the
	// refused addresses before it.
	d := &Dialer{
		Policy:   Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Resolver: fakeResolver{[]netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("127.0.0.1")}},
	}
	conn, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("svc.example", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("dial with one allowed address: %v", err)
	}
	if got := conn.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("connected to %s", got)
	}
	conn.Close()
	// The last check (Control) holds even for the address dialled.
	nd := d.netDialer()
	d.Policy = Policy{}
	if _, err := nd.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); !IsBlocked(err) {
		t.Errorf("Control let 127.0.0.1 through: %v", err)
	}
}
