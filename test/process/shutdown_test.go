package process

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSIGTERMShutsDownCleanly: SIGTERM while deliveries are in flight makes
// Herald stop accepting, let the attempts in flight finish, release the rest,
// and exit 0; after a restart every event is delivered and none was left
// leased (a clean stop hands its unattempted work back at once instead of
// leaving it behind a lease).
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	const total = 500
	dataDir := t.TempDir()
	rcv := newReceiver(t, 5*time.Millisecond, true)
	h1 := startHerald(t, "herald-1", dataDir, serveFlags...)
	subID := h1.createSubscription(t, "process-sigterm", rcv.URL())
	ids := make([]string, total)
	for i := range ids {
		ids[i] = fmt.Sprintf("term-%04d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < total; i += 100 {
		if err := h1.publish(ctx, ids[i:i+100]); err != nil {
			t.Fatal(err)
		}
	}
	reached := rcv.reached(50)
	rcv.open()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("deliveries did not start")
	}
	if code := h1.terminate(40 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	log, _ := os.ReadFile(h1.errPath)
	if !strings.Contains(string(log), "stopped") {
		t.Fatalf("no clean stop in the log:\n%s", log)
	}
	// A push cut off by the exit ends at the receiver a moment later: wait
	// for every push to end before counting the aborted ones.
	rcv.waitIdle(t, 5*time.Second)
	atStop := rcv.stats()
	if atStop.Aborted != 0 {
		t.Errorf("%d pushes were cut off: attempts in flight should have finished", atStop.Aborted)
	}

	h2 := startHerald(t, "herald-2", dataDir, serveFlags...)
	waitFor(t, 45*time.Second, "every event after the restart", func() (bool, string) {
		m := rcv.missing(ids)
		return len(m) == 0, fmt.Sprintf("%d missing", len(m))
	})
	checkSettled(t, h2, subID, rcv, ids)
	st := rcv.stats()
	t.Logf("stopped after %d of %d; %d duplicate receipts", atStop.Distinct, total, st.Duplicates)
	if st.Duplicates != 0 {
		t.Errorf("%d duplicates: a clean shutdown records every attempt it made", st.Duplicates)
	}
}
