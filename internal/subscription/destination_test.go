package subscription_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// names is a resolver a test controls: each name in addrs answers its
// addresses, any other is not found. It records the names it is asked, and
// fails the test when asked a loopback name, which must never reach a
// resolver.
type names struct {
	t     *testing.T
	addrs map[string][]netip.Addr
	asked []string
}

func (n *names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		n.t.Errorf("the resolver was asked %q", host)
	}
	n.asked = append(n.asked, host)
	if a, ok := n.addrs[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// guardFor is a guard with p and a resolver answering table.
func guardFor(t *testing.T, p destination.Policy, table map[string][]netip.Addr) (destination.Guard, *names) {
	n := &names{t: t, addrs: table}
	return destination.Guard{Policy: p, Resolver: n}, n
}

// TestDestinationNamesRefused: a URL or dead-letter URL whose host is a
// loopback name (any case, trailing dot or not), a local network's name,
// or a name resolving only to refused addresses is refused at create and
// update (a DestinationError naming the field, the addresses and the flags
// that allow them); loopback names never reach the resolver, nor do local
// network names under a public-only policy.
func TestDestinationNamesRefused(t *testing.T) {
	table := map[string][]netip.Addr{
		"loop.example":   addrs("127.0.0.1"),
		"inside.example": addrs("10.0.0.1", "fd00::1"),
		"meta.example":   addrs("169.254.169.254"),
	}
	for _, c := range []struct{ host, detail, hint string }{
		{"localhost", "always names this host (RFC 6761): it resolves only to 127.0.0.1 (loopback, 127.0.0.0/8), ::1 (loopback, ::1/128)",
			"--allow-private-destinations or --allow-destinations 127.0.0.0/8,::1/128"},
		{"LOCALHOST.", "always names this host", "--allow-private-destinations"},
		{"foo.localhost", "always names this host", "--allow-private-destinations"},
		{"Foo.LocalHost.", "always names this host", "--allow-private-destinations"},
		{"printer.local", "multicast DNS name of the local link (RFC 6762)", "--allow-private-destinations"},
		{"router.home.arpa", "home network (RFC 8375)", "--allow-private-destinations"},
		{"build.internal", "private-use name", "--allow-private-destinations"},
		{"loop.example", "resolves only to 127.0.0.1 (loopback, 127.0.0.0/8)", "--allow-private-destinations or --allow-destinations 127.0.0.0/8"},
		{"inside.example", "resolves only to 10.0.0.1 (private, 10.0.0.0/8), fd00::1 (private, fc00::/7)",
			"--allow-private-destinations or --allow-destinations 10.0.0.0/8,fc00::/7"},
		{"meta.example", "resolves only to 169.254.169.254 (cloud metadata", "start Herald with --allow-destinations 169.254.169.254/32"},
	} {
		url := "http://" + c.host + ":9000/hook"
		for _, field := range []string{"url", "dead_letter_url"} {
			g, n := guardFor(t, destination.Policy{}, table)
			body := `{"name":"n","url":"` + url + `"}`
			if field == "dead_letter_url" {
				body = `{"name":"n","url":"https://public.example/","dead_letter_url":"` + url + `"}`
			}
			_, err := input(t, body).New(context.Background(), subscription.Creation{Destinations: g})
			checkRefused(t, "create "+c.host, err, field, c.detail, c.hint)
			sub := subscription.Subscription{URL: "https://public.example/", DeliveryMode: subscription.ModePush}
			patch := `{"` + field + `":"` + url + `"}`
			checkRefused(t, "update "+c.host, input(t, patch).Update(context.Background(), &sub, g), field, c.detail, c.hint)
			for _, a := range n.asked {
				if a == c.host && !strings.HasSuffix(c.host, ".example") {
					t.Errorf("%s: the resolver was asked it", c.host)
				}
			}
		}
	}
}

func checkRefused(t *testing.T, what string, err error, field, detail, hint string) {
	t.Helper()
	var de *subscription.DestinationError
	if !errors.As(err, &de) || de.Field != field || !strings.Contains(de.Detail, detail) || !strings.Contains(de.Detail, hint) {
		t.Errorf("%s, %s: %v; want a DestinationError naming %s with %q and %q", what, field, err, field, detail, hint)
	}
}

// TestDestinationNamesAllowed: the flags that allow a name's addresses let
// it through; a name that does not resolve yet, or that resolves to one
// allowed address among refused ones, is accepted; local network names are
// looked up once the policy allows some non-public range.
func TestDestinationNamesAllowed(t *testing.T) {
	table := map[string][]netip.Addr{
		"mixed.example":    addrs("10.0.0.1", "93.184.216.34"),
		"printer.local":    addrs("192.168.1.20"),
		"build.internal":   addrs("100.64.1.1"),
		"public.example":   addrs("93.184.216.34"),
		"loop.example":     addrs("127.0.0.1"),
		"metadata.example": addrs("169.254.169.254"),
	}
	private := destination.Policy{AllowPrivate: true}
	for _, c := range []struct {
		host   string
		policy destination.Policy
	}{
		{"localhost", private},
		{"LOCALHOST.", private},
		{"foo.localhost", destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}},
		{"localhost", destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("::1/128")}}},
		{"loop.example", private},
		{"printer.local", private},
		{"build.internal", destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10")}}},
		{"metadata.example", destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("169.254.169.254/32")}}},
		{"mixed.example", destination.Policy{}},
		{"public.example", destination.Policy{}},
		{"not-yet.example", destination.Policy{}},
	} {
		g, _ := guardFor(t, c.policy, table)
		url := "http://" + c.host + ":9000/hook"
		if _, err := input(t, `{"name":"n","url":"`+url+`","dead_letter_url":"`+url+`"}`).New(context.Background(),
			subscription.Creation{Destinations: g}); err != nil {
			t.Errorf("create %s under %+v: %v", c.host, c.policy, err)
		}
		sub := subscription.Subscription{URL: "https://public.example/", DeliveryMode: subscription.ModePush}
		if err := input(t, `{"url":"`+url+`"}`).Update(context.Background(), &sub, g); err != nil || sub.URL != url {
			t.Errorf("update %s under %+v: %v", c.host, c.policy, err)
		}
	}
	// A local network's name is looked up when the policy allows some
	// non-public range, and its addresses judged.
	g, n := guardFor(t, destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10")}}, table)
	_, err := input(t, `{"name":"n","url":"http://printer.local/"}`).New(context.Background(), subscription.Creation{Destinations: g})
	checkRefused(t, "printer.local under 100.64.0.0/10", err, "url", "resolves only to 192.168.1.20 (private, 192.168.0.0/16)", "--allow-private-destinations")
	if len(n.asked) != 1 || n.asked[0] != "printer.local" {
		t.Errorf("asked %q, want printer.local once", n.asked)
	}
}

// stalled is a resolver that answers only when its context is done, and
// records the context's deadline.
type stalled struct{ deadline time.Time }

func (s *stalled) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	s.deadline, _ = ctx.Deadline()
	<-ctx.Done()
	return nil, &net.DNSError{Err: ctx.Err().Error(), Name: host, IsTimeout: true}
}

// TestDestinationLookupBounded: the lookup at create is bounded by
// destination.CheckTimeout, and a name that has not resolved by then is
// accepted. The test's own context ends the wait at once.
func TestDestinationLookupBounded(t *testing.T) {
	r := &stalled{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := time.Now()
	_, err := input(t, `{"name":"n","url":"https://slow.example/"}`).New(ctx,
		subscription.Creation{Destinations: destination.Guard{Resolver: r}})
	if err != nil {
		t.Fatalf("a name that did not resolve: %v, want it accepted", err)
	}
	if r.deadline.IsZero() || r.deadline.Before(before) || r.deadline.After(time.Now().Add(destination.CheckTimeout)) {
		t.Errorf("the lookup's deadline %v: want one within %v of the create", r.deadline, destination.CheckTimeout)
	}
}

// TestURLNeedsScheme: a URL written without its scheme is refused naming
// the field, with the URL written with http:// and https:// (its password
// hidden); a scheme url.Parse cannot read is said plainly; Go's own wording
// does not reach the client. Names that never resolve are refused whatever
// the policy.
func TestURLNeedsScheme(t *testing.T) {
	for _, c := range []struct{ url, detail string }{
		{"localhost:9000/hook", `needs http:// or https:// at its start: "http://localhost:9000/hook" or "https://localhost:9000/hook"`},
		{"example.com/hook", `"https://example.com/hook"`},
		{"example.com:443", `"https://example.com:443"`},
		{"127.0.0.1:9000/hook", `"http://127.0.0.1:9000/hook"`},
		{"[::1]:9000/hook", `"http://[::1]:9000/hook"`},
		{"//example.com/hook", `"https://example.com/hook"`},
		{"//admin:s3cret@example.com/hook", `"https://admin:xxxxx@example.com/hook"`},
		{"admin:s3cret@example.com/hook", "absolute http or https URL"},
		{"1http://example.com/", "its scheme is not valid: it must begin with http:// or https://"},
		{"ftp://example.com/", "absolute http or https URL"},
		{"mailto:a@example.com", "absolute http or https URL"},
		{"http://receiver.invalid/", `"receiver.invalid" never resolves (RFC 6761): no connection can be made to it`},
		{"http://INVALID./", "never resolves"},
		{"http://abc.onion/", "Tor onion service"},
	} {
		for _, field := range []string{"url", "dead_letter_url"} {
			body := `{"name":"n","url":"` + c.url + `"}`
			if field == "dead_letter_url" {
				body = `{"name":"n","url":"https://public.example/","dead_letter_url":"` + c.url + `"}`
			}
			g, _ := guardFor(t, destination.Policy{AllowPrivate: true}, nil)
			_, err := input(t, body).New(context.Background(), subscription.Creation{Destinations: g})
			var fe *strictjson.Error
			if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(fe.Detail, c.detail) ||
				strings.Contains(fe.Detail, "s3cret") || strings.Contains(fe.Detail, "first path segment") {
				t.Errorf("%s in %s: %v; want a problem naming %s with %q", c.url, field, err, field, c.detail)
			}
		}
	}
}
