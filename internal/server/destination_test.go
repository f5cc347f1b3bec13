package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/server"
)

// nonPublic are addresses of every class the guard refuses by default, with
// the class's name as the attempt's error states it.
var nonPublic = []struct{ addr, class string }{
	{"127.0.0.1", "loopback"},
	{"127.0.0.3", "loopback"},
	{"::1", "loopback"},
	{"::ffff:127.0.0.1", "loopback"},
	{"10.0.0.1", "private"},
	{"172.16.0.1", "private"},
	{"192.168.1.1", "private"},
	{"::ffff:192.168.1.1", "private"},
	{"fd00::1", "private"},
	{"169.254.169.254", "cloud metadata"},
	{"::ffff:169.254.169.254", "cloud metadata"},
	{"fd00:ec2::254", "cloud metadata"},
	{"169.254.1.1", "link-local"},
	{"fe80::1", "link-local"},
	{"100.64.0.1", "carrier-grade NAT"},
	{"0.0.0.0", "unspecified"},
	{"::", "unspecified"},
	{"224.0.0.1", "multicast"},
	{"ff02::1", "multicast"},
	{"255.255.255.255", "broadcast"},
	{"192.0.2.1", "documentation"},
	{"2001:db8::1", "documentation"},
	{"198.18.0.1", "benchmarking"},
	{"240.0.0.1", "reserved"},
	{"64:ff9b::a00:1", "private"}, // NAT64 of 10.0.0.1
}

// dns is a resolver the test controls: each name answers its addresses of
// the moment.
type dns struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	lookups map[string]int
}

func newDNS() *dns { return &dns{answers: map[string][]netip.Addr{}, lookups: map[string]int{}} }

func (d *dns) set(name string, addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers[name] = nil
	for _, a := range addrs {
		d.answers[name] = append(d.answers[name], netip.MustParseAddr(a))
	}
}

func (d *dns) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups[host]++
	if a, ok := d.answers[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// guarded starts Herald with the default destination guard, 127.0.0.2
// allowed as if it were public (--allow-destinations 127.0.0.2/32), names
// resolved by d, and a receiver on 127.0.0.2 that counts requests by Host
// and closes every connection (so each attempt dials, and resolves, again).
func guarded(t *testing.T, d *dns, answer func(n int, r *http.Request, w http.ResponseWriter)) (*bundle, *receiver, string) {
	b := setup(t, func(c *server.Config) {
		c.Attempting.Destinations = destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
		c.Attempting.Resolver = d
	})
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone()})
		n := len(rc.got)
		rc.mu.Unlock()
		w.Header().Set("Connection", "close")
		rc.answer(n, r, w)
	}))
	rc.Listener.Close()
	rc.Listener = ln
	rc.Start()
	t.Cleanup(rc.Close)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return b, rc, port
}

// TestDestinationRebinding: a name that resolves to an allowed address for
// the first attempt and to a refused one for the retry (DNS rebinding) is
// refused on the retry, for every class of refused address: the attempt's
// outcome is destination_blocked, nothing reaches any receiver, the
// delivery is dead-lettered at once (DestinationBlocked) instead of
// retried, and the refusal does not count against the endpoint's health.
func TestDestinationRebinding(t *testing.T) {
	d := newDNS()
	b, rc, port := guarded(t, d, func(n int, r *http.Request, w http.ResponseWriter) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	subs := make([]string, len(nonPublic))
	for i, c := range nonPublic {
		name := fmt.Sprintf("rebind-%d.example", i)
		d.set(name, "127.0.0.2")
		subs[i] = b.subscribe(map[string]any{"name": name, "url": "http://" + name + ":" + port + "/hook",
			"retry_policy": map[string]any{"preset": "custom", "delays": []string{"10s"}, "max_attempts": 5}})
		_ = c
	}
	b.publish("evt-1", "x")
	for i := range nonPublic {
		b.waitDelivery(subs[i], "first attempt", func(d delivery) bool { return d.Attempts == 1 })
	}
	if rc.count() != len(nonPublic) {
		t.Fatalf("the receiver got %d first attempts, want %d", rc.count(), len(nonPublic))
	}
	for i, c := range nonPublic {
		d.set(fmt.Sprintf("rebind-%d.example", i), c.addr)
	}
	b.clk.Set(start.Add(10 * time.Second))
	for i, c := range nonPublic {
		dl := b.waitDelivery(subs[i], c.addr+": the retry", func(d delivery) bool { return d.Attempts == 2 })
		if dl.Status != "dead_lettered" || dl.DeadLetterReason == nil || *dl.DeadLetterReason != "DestinationBlocked" ||
			dl.LastOutcome == nil || *dl.LastOutcome != "destination_blocked" {
			t.Errorf("%s: %+v, want dead_lettered DestinationBlocked after destination_blocked", c.addr, dl)
			continue
		}
		as := b.attempts(dl.ID)
		var last attempt
		for _, a := range as {
			if a.Number == 2 {
				last = a
			}
		}
		if last.Outcome != "destination_blocked" || last.StatusCode != nil || last.Error == nil ||
			!strings.Contains(*last.Error, c.class) || !strings.Contains(*last.Error, "--allow-destinations") {
			t.Errorf("%s: second attempt %+v, want destination_blocked naming %q and the flag", c.addr, last, c.class)
		}
		// One failure (the 503); the refusal is not the endpoint's.
		if ep := b.endpoint(b.endpointOf(subs[i])); ep.ConsecutiveFailures != 1 || ep.State != "enabled" {
			t.Errorf("%s: endpoint %+v, want enabled with 1 consecutive failure", c.addr, ep)
		}
	}
	if rc.count() != len(nonPublic) {
		t.Errorf("the receiver got %d requests, want only the %d first attempts", rc.count(), len(nonPublic))
	}
	var dls struct{ Data []delivery }
	b.do("GET", "/v1/dead-letters?subscription_id="+subs[0], nil, &dls)
	if len(dls.Data) != 1 {
		t.Errorf("dead letters: %+v", dls.Data)
	}
}

// TestDestinationBlockedFirstAttempt: a name that did not resolve at create
// and resolves to a refused address at the first attempt is never sent
// to; without dead letters the delivery is dropped, reason
// DestinationBlocked. A name resolving to a refused and an allowed address
// is accepted at create and delivered to the allowed one.
func TestDestinationBlockedFirstAttempt(t *testing.T) {
	d := newDNS()
	b, rc, port := guarded(t, d, status(http.StatusOK))
	d.set("mixed.example", "10.0.0.1", "::1", "127.0.0.2")
	drop := b.subscribe(map[string]any{"name": "drop", "url": "http://metadata.example:" + port + "/latest/meta-data/",
		"dead_letter": false, "event_types": []string{"a"}})
	mixed := b.subscribe(map[string]any{"name": "mixed", "url": "http://mixed.example:" + port + "/hook", "event_types": []string{"b"}})
	d.set("metadata.example", "169.254.169.254")
	b.publish("evt-a", "a")
	b.publish("evt-b", "b")
	dl := b.waitDelivery(drop, "dropped", func(d delivery) bool { return d.Status != "pending" })
	if dl.Status != "dropped" || *dl.DeadLetterReason != "DestinationBlocked" || dl.Attempts != 1 || *dl.LastOutcome != "destination_blocked" {
		t.Errorf("metadata: %+v, want dropped DestinationBlocked after 1 attempt", dl)
	}
	if ep := b.endpoint(b.endpointOf(drop)); ep.ConsecutiveFailures != 0 || ep.State != "enabled" {
		t.Errorf("metadata endpoint %+v: a refusal counted against it", ep)
	}
	dm := b.waitDelivery(mixed, "delivered", func(d delivery) bool { return d.Status != "pending" })
	if dm.Status != "delivered" || rc.count() != 1 {
		t.Errorf("mixed: %+v, receiver got %d; want delivered to 127.0.0.2 once", dm, rc.count())
	}
}

// TestDestinationRefusedAtCreate: a literal refused address in a URL is
// refused at create and PATCH (422, field url, the detail naming the flags
// that allow it) and changes nothing; the allow flags let the same URLs
// through. (Names: TestDestinationNamesRefusedAtCreate.)
func TestDestinationRefusedAtCreate(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.Attempting.Destinations = destination.Policy{} })
	id := b.subscribe(map[string]any{"name": "public", "url": "https://93.184.216.34/hook"})
	hosts := []struct{ host, class, flag string }{
		{"127.0.0.1", "loopback", "--allow-private-destinations"},
		{"127.1.2.3", "loopback", "--allow-private-destinations"},
		{"[::1]", "loopback", "--allow-private-destinations"},
		{"[::ffff:127.0.0.1]", "loopback", "--allow-private-destinations"},
		{"[::ffff:7f00:1]", "loopback", "--allow-private-destinations"},
		{"10.1.2.3", "private", "--allow-private-destinations"},
		{"172.31.0.1", "private", "--allow-private-destinations"},
		{"192.168.0.10", "private", "--allow-private-destinations"},
		{"[::ffff:10.0.0.1]", "private", "--allow-private-destinations"},
		{"[fd12::1]", "private", "--allow-private-destinations"},
		{"169.254.169.254", "cloud metadata", "--allow-destinations 169.254.169.254/32"},
		{"[::ffff:169.254.169.254]", "cloud metadata", "--allow-destinations 169.254.169.254/32"},
		{"[fd00:ec2::254]", "cloud metadata", "--allow-destinations fd00:ec2::254/128"},
		{"169.254.10.1", "link-local", "--allow-destinations 169.254.10.1/32"},
		{"[fe80::1]", "link-local", "--allow-destinations fe80::1/128"},
		{"100.64.0.1", "carrier-grade NAT", "--allow-destinations 100.64.0.1/32"},
		{"0.1.2.3", "unspecified", "--allow-destinations 0.1.2.3/32"},
		{"192.0.2.1", "documentation", "--allow-destinations 192.0.2.1/32"},
		{"198.51.100.1", "documentation", "--allow-destinations"},
		{"203.0.113.1", "documentation", "--allow-destinations"},
		{"[2001:db8::1]", "documentation", "--allow-destinations"},
		{"198.18.0.1", "benchmarking", "--allow-destinations"},
		{"240.0.0.1", "reserved", "--allow-destinations"},
		{"192.0.0.8", "reserved", "--allow-destinations"},
		{"[64:ff9b::a00:1]", "private", "--allow-private-destinations"},
		{"[2002:a00:1::1]", "reserved", "--allow-destinations"},
	}
	var cases []refusal
	for _, h := range hosts {
		for _, rt := range subscriptionRoutes(id) {
			body := `{"url":"http://` + h.host + `:9000/hook"}`
			if rt.create {
				body = `{"name":"new","url":"http://` + h.host + `:9000/hook"}`
			}
			cases = append(cases, refusal{name: h.host, method: rt.method, path: rt.path, body: body,
				code: http.StatusUnprocessableEntity, field: "url", detail: h.class + " address"})
			cases = append(cases, refusal{name: h.host + " hint", method: rt.method, path: rt.path, body: body,
				code: http.StatusUnprocessableEntity, field: "url", detail: h.flag})
		}
	}
	// Never a destination, whatever the flags: 400 as before.
	for _, h := range []string{"0.0.0.0", "[::]", "224.0.0.1", "[ff02::1]", "255.255.255.255", "[::ffff:224.0.0.1]"} {
		cases = append(cases, refusal{name: h, method: "POST", path: "/v1/subscriptions",
			body: `{"name":"new","url":"http://` + h + `/hook"}`, field: "url", detail: "no connection can be made"})
	}
	refuseAll(t, b, cases)

	// A name that does not resolve (yet) is accepted; a PATCH of other
	// fields does not check the stored URL again.
	b.subscribe(map[string]any{"name": "named", "url": "http://not-yet.example:9000/hook"})
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+id, map[string]any{"name": "renamed"}, nil); code != 200 {
		t.Errorf("PATCH name: %d %s", code, raw)
	}

	// With the flags, the same URLs pass: loopback and private with
	// --allow-private-destinations, the rest with --allow-destinations.
	open := setup(t, func(c *server.Config) {
		c.Attempting.Destinations = destination.Policy{AllowPrivate: true, Allow: []netip.Prefix{
			netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fd00:ec2::254/128"), netip.MustParsePrefix("fe80::/10"),
			netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("192.0.0.0/8"),
			netip.MustParsePrefix("198.0.0.0/8"), netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32"),
			netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("2002::/16"),
		}}
	})
	privateOnly := setup(t) // the harness allows private destinations
	for i, h := range hosts {
		url := "http://" + h.host + ":9000/hook"
		if code, raw := open.do("POST", "/v1/subscriptions", map[string]any{"name": fmt.Sprint("s", i), "url": url}, nil); code != http.StatusCreated {
			t.Errorf("allowed %s: %d %s", h.host, code, raw)
		}
		code, raw := privateOnly.do("POST", "/v1/subscriptions", map[string]any{"name": fmt.Sprint("s", i), "url": url}, nil)
		if want := map[bool]int{true: http.StatusCreated, false: http.StatusUnprocessableEntity}[h.flag == "--allow-private-destinations"]; code != want {
			t.Errorf("--allow-private-destinations, %s: %d %s, want %d", h.host, code, raw, want)
		}
	}
}

// TestDestinationNamesRefusedAtCreate: on a guarded server, a URL or
// dead-letter URL whose host is a loopback name (localhost, LOCALHOST.,
// foo.localhost) or a name that resolves only to a refused address is
// refused at create and PATCH (422 naming the field, the addresses and the
// flag that allows them) and changes nothing; the loopback names never
// reach the resolver.
func TestDestinationNamesRefusedAtCreate(t *testing.T) {
	d := newDNS()
	d.set("loop.example", "127.0.0.1")
	d.set("inside.example", "10.0.0.1", "fd00::1")
	d.set("public.example", "93.184.216.34")
	b := setup(t, func(c *server.Config) {
		c.Attempting.Destinations = destination.Policy{}
		c.Attempting.Resolver = d
	})
	id := b.subscribe(map[string]any{"name": "public", "url": "https://public.example/hook"})
	hosts := []struct{ host, detail string }{
		{"localhost", "always names this host (RFC 6761): it resolves only to 127.0.0.1 (loopback, 127.0.0.0/8)"},
		{"LOCALHOST.", "always names this host"},
		{"foo.localhost", "always names this host"},
		{"loop.example", "resolves only to 127.0.0.1 (loopback, 127.0.0.0/8)"},
		{"inside.example", "resolves only to 10.0.0.1 (private, 10.0.0.0/8), fd00::1 (private, fc00::/7)"},
	}
	var cases []refusal
	for _, h := range hosts {
		url := "http://" + h.host + ":9000/hook"
		for _, rt := range subscriptionRoutes(id) {
			for _, field := range []string{"url", "dead_letter_url"} {
				body := rt.body(`"` + field + `":"` + url + `"`)
				for _, part := range []string{h.detail, "--allow-private-destinations"} {
					cases = append(cases, refusal{name: h.host + " in " + field, method: rt.method, path: rt.path, body: body,
						code: http.StatusUnprocessableEntity, field: field, detail: part})
				}
			}
		}
	}
	refuseAll(t, b, cases)
	d.mu.Lock()
	defer d.mu.Unlock()
	for name := range d.lookups {
		if strings.Contains(strings.ToLower(name), "localhost") {
			t.Errorf("the resolver was asked %q", name)
		}
	}
	if d.lookups["loop.example"] == 0 {
		t.Error("loop.example was not looked up at create")
	}
}

// TestLocalhostDelivered: with --allow-private-destinations, or an
// allow-list holding 127.0.0.0/8, a URL on localhost is accepted and
// delivered to the receiver on 127.0.0.1, without asking the resolver.
func TestLocalhostDelivered(t *testing.T) {
	for name, policy := range map[string]destination.Policy{
		"--allow-private-destinations":     {AllowPrivate: true},
		"--allow-destinations 127.0.0.0/8": {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	} {
		t.Run(name, func(t *testing.T) {
			d := newDNS()
			b := setup(t, func(c *server.Config) {
				c.Attempting.Destinations = policy
				c.Attempting.Resolver = d
			})
			rc := newReceiver(t, status(http.StatusOK))
			_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
			if !strings.HasPrefix(rc.Listener.Addr().String(), "127.0.0.1:") {
				t.Skipf("the receiver listens on %s, not 127.0.0.1", rc.Listener.Addr())
			}
			sub := b.subscribe(map[string]any{"name": "local", "url": "http://LocalHost.:" + port + "/hook"})
			b.publish("evt-1", "x")
			if dl := b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status != "pending" }); dl.Status != "delivered" || rc.count() != 1 {
				t.Errorf("%+v, the receiver got %d; want delivered once", dl, rc.count())
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.lookups) != 0 {
				t.Errorf("the resolver was asked %v", d.lookups)
			}
		})
	}
}
