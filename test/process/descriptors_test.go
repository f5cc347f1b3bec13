package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
)

// underLimit is the wrapper that runs the binary with at most n open
// file descriptors (soft and hard).
func underLimit(n int) []string {
	return []string{"/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, n), "sh"}
}

// TestIdleFloodUnderLowDescriptorLimit runs Herald with 512 file
// descriptors and --max-in-flight 16, and floods it with 600 connections
// that each send GET /healthz and then idle, held open by the test: more
// than the whole limit. Herald lowers --max-connections from its default
// to what the limit leaves after pushes and the store (and says so), and
// makes room for each new connection by closing the oldest idle one: every
// flood connection is answered, a new client's /healthz answers, and
// pushes to a receiver on loopback all go through at their first attempt,
// the endpoint staying enabled. Without the cap the flood took every
// descriptor: accepts and pushes failed with "too many open files", and
// the failed pushes counted against the endpoint.
func TestIdleFloodUnderLowDescriptorLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	const limit, flood, events = 512, 600, 50
	rcv := newReceiver(t, 0, false)
	h := startHeraldUnder(t, underLimit(limit), "herald", t.TempDir(), "--max-in-flight", "16")
	subID := h.createSubscription(t, "flooded", rcv.URL())
	if log, err := os.ReadFile(h.errPath); err != nil || !strings.Contains(string(log), "--max-connections lowered") {
		t.Errorf("no warning that --max-connections was lowered under a limit of %d (%v)", limit, err)
	}

	addr := strings.TrimPrefix(h.base, "http://")
	for i := range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n"); err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("flood connection %d: no answer: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("flood connection %d: %d", i, resp.StatusCode)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code, err := h.do(ctx, http.MethodGet, "/healthz", "", nil, nil); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz after the flood: %d, %v", code, err)
	}
	ids := make([]string, events)
	for i := range ids {
		ids[i] = fmt.Sprintf("flood-%03d", i)
	}
	if err := h.publish(ctx, ids); err != nil {
		t.Fatal(err)
	}
	checkSettled(t, h, subID, rcv, ids)
	ds, err := h.deliveries(ctx, url.Values{"subscription_id": {subID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Status != "delivered" || d.Attempts != 1 {
			t.Errorf("delivery %s: %s after %d attempts; want delivered at the first", d.ID, d.Status, d.Attempts)
		}
	}
	var eps struct {
		Data []struct {
			State               string `json:"state"`
			ConsecutiveFailures int    `json:"consecutive_failures"`
		} `json:"data"`
	}
	if _, err := h.do(ctx, http.MethodGet, "/v1/endpoints", "", nil, &eps); err != nil || len(eps.Data) != 1 {
		t.Fatalf("endpoints: %+v, %v", eps, err)
	}
	if e := eps.Data[0]; e.State != "enabled" || e.ConsecutiveFailures != 0 {
		t.Errorf("the receiver's endpoint: %+v; want enabled, no failure", e)
	}
}

// TestDescriptorLimitTooLowExits: under a limit that leaves no room for
// connections after pushes and the store, herald serve exits 2 naming
// --max-connections and --max-in-flight, before it opens anything.
func TestDescriptorLimitTooLowExits(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: runs the herald binary")
	}
	args := append(underLimit(100), heraldBin, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir())
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("herald serve under ulimit -n 100: %v, want exit status 2\n%s", err, out)
	}
	for _, flag := range []string{"--max-connections", "--max-in-flight", "100"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("the message does not name %s:\n%s", flag, out)
		}
	}
}

// TestDefaultFlagsUnderDescriptorLimit1024: herald serve with its default
// --max-in-flight and --max-connections, which need far more descriptors,
// starts under ulimit -n 1024 (a limit small containers still set): it
// lowers both to fit (the figures server.Config.FitDescriptors makes of
// the limit), says so in one warning naming both, and delivers. Before,
// it exited 2.
func TestDefaultFlagsUnderDescriptorLimit1024(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: runs the herald binary")
	}
	const limit = 1024
	fit, err := server.DefaultConfig().FitDescriptors(limit)
	if err != nil || !fit.Lowered {
		t.Fatalf("the defaults under %d descriptors: %+v, %v; want them lowered to fit", limit, fit, err)
	}
	rcv := newReceiver(t, 0, false)
	h := startHeraldUnder(t, underLimit(limit), "herald", t.TempDir())
	subID := h.createSubscription(t, "small", rcv.URL())
	log, err := os.ReadFile(h.errPath)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for line := range strings.Lines(string(log)) {
		if strings.Contains(line, "lowered") {
			warnings = append(warnings, line)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("%d lines say what was lowered; want one:\n%s", len(warnings), strings.Join(warnings, ""))
	}
	for _, want := range []string{"level=WARN", "--max-in-flight", "--max-connections",
		fmt.Sprintf("max_in_flight=%d ", fit.MaxInFlight), fmt.Sprintf("max_connections=%d ", fit.MaxConnections), fmt.Sprintf("descriptor_limit=%d", limit)} {
		if !strings.Contains(warnings[0], want) {
			t.Errorf("the warning lacks %q: %s", want, warnings[0])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := []string{"small-1", "small-2", "small-3"}
	if err := h.publish(ctx, ids); err != nil {
		t.Fatal(err)
	}
	checkSettled(t, h, subID, rcv, ids)
}
