package server

import (
	"fmt"
)

// File descriptors. The API's inbound connections are capped
// (MaxConnections) so that they can never take the descriptors Herald
// needs for everything else, pushes first: an inbound flood must not turn
// into attempts failing with "too many open files".

// MinConnections is the fewest inbound connections ConnectionCap leaves
// the API: below it the descriptor limit is too low for Herald to run.
const MinConnections = 16

// otherDescriptors are the descriptors Herald holds besides connections,
// attempts and the store: standard input, output and error, the API and
// pprof listeners, the network poller's, the connection an API listener
// holds while it waits for room under MaxConnections, and slack for
// whatever a library opens (a DNS configuration file, a log file).
const otherDescriptors = 64

// ReservedDescriptors is how many file descriptors Herald keeps for what
// is not an inbound API connection: three per attempt in flight
// (Scheduling.MaxInFlight: its connection, or the two sockets of the DNS
// lookup before it; and one idle connection kept for reuse, of which the
// attempting stage's client keeps at most MaxInFlight), the one a validation
// handshake uses (they run one at a time), the store's (its connection
// pool and files: sqlite.Options.Descriptors, postgres.Options.Descriptors)
// and otherDescriptors. Call it on a Config as herald serve gives it
// (before New fills defaults): a zero MaxInFlight counts as the default.
func (c Config) ReservedDescriptors() int {
	inFlight := c.Scheduling.MaxInFlight
	if inFlight <= 0 {
		inFlight = DefaultConfig().Scheduling.MaxInFlight
	}
	return 3*inFlight + 1 + c.storeDescriptors() + otherDescriptors
}

// ConnectionCap returns how many inbound connections the API may hold open
// under a limit of limit file descriptors (the process's RLIMIT_NOFILE;
// 0: unknown, nothing is checked): MaxConnections, or what the limit
// leaves after ReservedDescriptors when that is less (lowered is then
// true, and the caller says so). It fails when that leaves fewer than
// MinConnections: raise the limit, or lower --max-in-flight.
func (c Config) ConnectionCap(limit uint64) (n int, lowered bool, err error) {
	n = c.MaxConnections
	if n <= 0 {
		n = DefaultConfig().MaxConnections
	}
	if limit == 0 {
		return n, false, nil
	}
	reserved := uint64(c.ReservedDescriptors())
	if limit < reserved+MinConnections {
		return 0, false, fmt.Errorf("--max-connections: the file descriptor limit (ulimit -n) is %d, and pushes, the store and the process keep %d of them "+
			"(three per attempt in flight: --max-in-flight %d), which leaves fewer than %d for connections: raise the limit, or lower --max-in-flight",
			limit, reserved, c.Scheduling.MaxInFlight, MinConnections)
	}
	if room := limit - reserved; uint64(n) > room {
		return int(room), true, nil
	}
	return n, false, nil
}
