package server

import (
	"fmt"

	"github.com/herald-events/herald/internal/api"
)

// File descriptors. The API's inbound connections are capped
// (MaxConnections) so that they can never take the descriptors Herald
// needs for everything else, pushes first: an inbound flood must not turn
// into attempts failing with "too many open files". Under a descriptor
// limit too low for both caps, herald serve lowers both (FitDescriptors).

// MinConnections and MinInFlight are the fewest inbound connections and
// attempts in flight FitDescriptors leaves (or what the Config asks, when
// fewer): below them the descriptor limit is too low for Herald to run.
const (
	MinConnections = 16
	MinInFlight    = 16
)

// otherDescriptors are the descriptors Herald holds besides connections,
// attempts and the store: standard input, output and error, the API and
// pprof listeners, the network poller's, the connection an API listener
// holds while it waits for room under MaxConnections, and slack for
// whatever a library opens (a DNS configuration file, a log file).
const otherDescriptors = 64

// fixedDescriptors are the descriptors Herald keeps whatever its caps: the
// one a validation handshake uses (they run one at a time), the store's
// (its connection pool and files: sqlite.Options.Descriptors,
// postgres.Options.Descriptors), the API's reserve connections
// (api.ReserveConns, which answer the probes over MaxConnections) and
// otherDescriptors.
func (c Config) fixedDescriptors() int {
	return 1 + c.storeDescriptors() + api.ReserveConns + otherDescriptors
}

// ReservedDescriptors is how many file descriptors Herald keeps for what
// is not an inbound API connection: three per attempt in flight
// (Scheduling.MaxInFlight: its connection, or the two sockets of the DNS
// lookup before it; and one idle connection kept for reuse, of which the
// attempting stage's client keeps at most MaxInFlight) and
// fixedDescriptors. Call it on a Config as herald serve gives it (before
// New fills defaults): a zero MaxInFlight counts as the default.
func (c Config) ReservedDescriptors() int {
	return 3*c.maxInFlight() + c.fixedDescriptors()
}

// maxInFlight is Scheduling.MaxInFlight, the default for zero.
func (c Config) maxInFlight() int {
	if c.Scheduling.MaxInFlight <= 0 {
		return DefaultConfig().Scheduling.MaxInFlight
	}
	return c.Scheduling.MaxInFlight
}

// maxConnections is MaxConnections, the default for zero.
func (c Config) maxConnections() int {
	if c.MaxConnections <= 0 {
		return DefaultConfig().MaxConnections
	}
	return c.MaxConnections
}

// DescriptorFit is what a file descriptor limit leaves: the attempts in
// flight and the inbound connections Herald may hold at once.
type DescriptorFit struct {
	MaxInFlight, MaxConnections int
	// Lowered says that either is less than the Config asks: the caller
	// says so.
	Lowered bool
}

// FitDescriptors returns the attempts in flight and inbound connections
// Herald may hold under a limit of limit file descriptors (the process's
// RLIMIT_NOFILE; 0: unknown, nothing is checked). They are
// Scheduling.MaxInFlight and MaxConnections when three descriptors per
// attempt, one per connection and fixedDescriptors fit. Otherwise both are
// lowered in proportion to what they ask, attempts to no fewer than
// MinInFlight and connections to no fewer than MinConnections (or to what
// the Config asks, when fewer), so that together they fill what the limit
// leaves. It fails when not even those fewest fit: raise the limit.
func (c Config) FitDescriptors(limit uint64) (DescriptorFit, error) {
	inFlight, conns := c.maxInFlight(), c.maxConnections()
	fit := DescriptorFit{MaxInFlight: inFlight, MaxConnections: conns}
	if limit == 0 {
		return fit, nil
	}
	fixed := c.fixedDescriptors()
	fewestIn, fewestConns := min(inFlight, MinInFlight), min(conns, MinConnections)
	if least := fixed + 3*fewestIn + fewestConns; limit < uint64(least) {
		return fit, fmt.Errorf("--max-in-flight and --max-connections: the file descriptor limit (ulimit -n) is %d, and Herald needs at least %d: "+
			"%d for the store and the process, three per attempt in flight for %d attempts (--max-in-flight %d) and one per connection for %d connections (--max-connections %d); "+
			"raise the limit",
			limit, least, fixed, fewestIn, inFlight, fewestConns, conns)
	}
	room := int(min(limit-uint64(fixed), 1<<40))
	need := 3*inFlight + conns
	if need <= room {
		return fit, nil
	}
	in := min(max(inFlight*room/need, fewestIn), inFlight)
	cn := min(conns, room-3*in)
	if cn < fewestConns {
		cn = fewestConns
		in = min(inFlight, (room-cn)/3)
	}
	return DescriptorFit{MaxInFlight: in, MaxConnections: cn, Lowered: true}, nil
}
