package sourcing

import (
	"context"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/source"
)

// askedResolver answers every name with 127.0.0.1 and keeps the names it
// was asked.
type askedResolver struct {
	mu    sync.Mutex
	names []string
}

func (r *askedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, host)
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestNATSSourceResolvesThroughGuard: a NATS source's server name is
// resolved by the destination guard's resolver (the one whose answers the
// guard judges), not first by nats.go with the system's resolver, which
// handed the guard only addresses.
func TestNATSSourceResolvesThroughGuard(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := net.LookupHost(host); err != nil {
		t.Skipf("the system resolver does not know this machine's name %q (nats.go would hand the name on anyway): %v", host, err)
	}
	res := &askedResolver{}
	c := &consumer{svc: &Service{cfg: Config{Destinations: destination.Guard{Policy: destination.Policy{AllowPrivate: true}, Resolver: res}}},
		src: source.Source{ID: "src_nats_name", Type: source.TypeNATS, Config: source.Config{Conn: broker.Settings{URL: "nats://" + host + ":4222"}}}}
	nc, err := c.connectNATS()
	if err != nil {
		t.Fatalf("connecting to NATS as %s (the guard's resolver answers 127.0.0.1): %v", host, err)
	}
	nc.Close()
	res.mu.Lock()
	defer res.mu.Unlock()
	if !slices.Contains(res.names, host) {
		t.Fatalf("the guard's resolver was asked %q; want %q (nats.go resolved it itself)", res.names, host)
	}
}
