package console

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// The sign-in throttle. What takes a secret from a browser, the console's
// sign-in form (an API key) and the portal's one-time links, counts its
// failures by client address: a key Herald does not know, a link that
// opens nothing (unknown, used already or expired). After SignInFailures
// of them from one address within SignInWindow of its first, that address
// is refused (429 with Retry-After, right secret or wrong) until the
// window ends; one warn line says so, when the address reaches the limit.
// The console and the portal keep a count each, in memory, per node.
//
// An address is the connection's (RemoteAddr: Herald reads no
// X-Forwarded-For, so behind a proxy its clients share the proxy's); an
// IPv6 address counts by its /64, which one client usually holds whole.
// The table holds at most SignInAddresses addresses: a failure from
// another address when it is full first forgets the addresses whose window
// ended, then, if none did, the one whose window began first.
const (
	SignInFailures  = 10
	SignInWindow    = time.Minute
	SignInAddresses = 4096
)

// signInThrottle counts the sign-in failures of client addresses (see
// SignInFailures). Its methods are safe for concurrent use.
type signInThrottle struct {
	what  string // what it throttles, for its log line: "console sign-in"
	clock clock.Clock
	log   *slog.Logger

	mu    sync.Mutex
	addrs map[netip.Prefix]*failures
}

// failures are one address's failures in its window.
type failures struct {
	since time.Time // the window's start: its first failure
	n     int
}

func newSignInThrottle(what string, clk clock.Clock, log *slog.Logger) *signInThrottle {
	return &signInThrottle{what: what, clock: clk, log: log, addrs: make(map[netip.Prefix]*failures)}
}

// refuse answers 429 with Retry-After (through page, given the message)
// and returns true when r's address is refused now; else it returns false
// and answers nothing.
func (t *signInThrottle) refuse(w http.ResponseWriter, r *http.Request, page func(status int, message string)) bool {
	wait := t.wait(clientOf(r))
	if wait <= 0 {
		return false
	}
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	page(http.StatusTooManyRequests, "Too many failed attempts from your address: try again in "+strconv.Itoa(secs)+" seconds.")
	return true
}

// wait returns how long addr is refused still (0: it is not).
func (t *signInThrottle) wait(addr netip.Prefix) time.Duration {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.live(addr, now)
	if f == nil || f.n < SignInFailures {
		return 0
	}
	return f.since.Add(SignInWindow).Sub(now)
}

// failed counts a failure of r's address, and logs the one that brings it
// to SignInFailures.
func (t *signInThrottle) failed(r *http.Request) {
	addr, now := clientOf(r), t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.live(addr, now)
	if f == nil {
		t.makeRoom(now)
		f = &failures{since: now}
		t.addrs[addr] = f
	}
	f.n++
	if f.n == SignInFailures {
		t.log.LogAttrs(r.Context(), slog.LevelWarn, t.what+" throttled: too many failures from one address",
			slog.String("address", addressText(addr)), slog.Int("failures", f.n), slog.Duration("within", now.Sub(f.since)),
			slog.Time("refused_until", f.since.Add(SignInWindow)))
	}
}

// live returns addr's failures while their window lasts (deleting them
// once it ended), else nil. t.mu is held.
func (t *signInThrottle) live(addr netip.Prefix, now time.Time) *failures {
	f := t.addrs[addr]
	if f != nil && !now.Before(f.since.Add(SignInWindow)) {
		delete(t.addrs, addr)
		return nil
	}
	return f
}

// makeRoom makes room for one more address when the table is full:
// forgets the addresses whose window ended, or if none did the one whose
// window began first. t.mu is held.
func (t *signInThrottle) makeRoom(now time.Time) {
	if len(t.addrs) < SignInAddresses {
		return
	}
	var oldest netip.Prefix
	var first time.Time
	for a, f := range t.addrs {
		if !now.Before(f.since.Add(SignInWindow)) {
			delete(t.addrs, a)
			continue
		}
		if first.IsZero() || f.since.Before(first) {
			oldest, first = a, f.since
		}
	}
	if len(t.addrs) >= SignInAddresses {
		delete(t.addrs, oldest)
	}
}

// addressText is addr as a log line shows it: an IPv4 address alone, an
// IPv6 /64 as a prefix.
func addressText(addr netip.Prefix) string {
	if addr.IsValid() && addr.IsSingleIP() {
		return addr.Addr().String()
	}
	return addr.String()
}

// clientOf is the address r's failures count under: its connection's IP
// address, an IPv6 address's /64 (the zero Prefix when RemoteAddr holds
// none).
func clientOf(r *http.Request) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap()
	bits := ip.BitLen()
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.WithZone("").Prefix(bits)
	return p
}
