package console

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// TestSignInThrottleBounded: the table holds at most SignInAddresses
// addresses. A failure from a new address when it is full forgets those
// whose window ended, or else the one whose window began first (which is
// then no longer refused); an IPv6 client counts by its /64.
func TestSignInThrottleBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	th := newSignInThrottle("test", clk, slog.New(slog.DiscardHandler))
	fail := func(addr string, times int) {
		r := httptest.NewRequest("POST", "/console/login", nil)
		r.RemoteAddr = addr
		for range times {
			th.failed(r)
		}
	}
	refused := func(addr string) bool {
		r := httptest.NewRequest("POST", "/console/login", nil)
		r.RemoteAddr = addr
		return th.wait(clientOf(r)) > 0
	}
	fail("10.0.0.1:1000", SignInFailures) // the first window: refused
	clk.Advance(time.Second)
	for i := range SignInAddresses - 1 {
		fail(fmt.Sprintf("10.1.%d.%d:1000", i/256, i%256), 1)
	}
	if n := len(th.addrs); n != SignInAddresses || !refused("10.0.0.1:2000") {
		t.Fatalf("%d addresses, 10.0.0.1 refused %v; want %d, refused", n, refused("10.0.0.1:2000"), SignInAddresses)
	}
	fail("10.2.0.0:1000", 1) // full: the oldest window goes
	if n := len(th.addrs); n != SignInAddresses || refused("10.0.0.1:2000") {
		t.Fatalf("%d addresses, 10.0.0.1 refused %v; want %d, the oldest forgotten", n, refused("10.0.0.1:2000"), SignInAddresses)
	}
	clk.Advance(SignInWindow)
	fail("10.3.0.0:1000", 1) // full again: every ended window goes
	if n := len(th.addrs); n != 1 {
		t.Fatalf("%d addresses after every window ended; want 1, the new one", n)
	}

	// An IPv6 client's addresses in one /64 count together; another /64 is
	// another client.
	for i := range SignInFailures {
		fail(fmt.Sprintf("[2001:db8:1:2::%x]:1000", i+1), 1)
	}
	if !refused("[2001:db8:1:2:ffff::1]:1000") || refused("[2001:db8:1:3::1]:1000") || refused("10.0.0.9:1000") {
		t.Fatal("the /64's failures did not count together, or counted for another address")
	}
}
