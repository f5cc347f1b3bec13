package server_test

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
)

// TestRetentionCleansAWholeBacklog checks that one clean-up deletes every
// finished event older than the retention, however many rounds that
// takes: 2,500 events published, rounds of 10 (250 rounds), the clock
// moved past the retention and the next clean-up, and then each of them is
// new again when published once more (the dedup forgot it with the event).
// Before, a clean-up stopped after 100 rounds whatever the backlog, so a
// publisher faster than that grew the store for ever.
func TestRetentionCleansAWholeBacklog(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.DedupRetention = time.Minute; c.CleanupBatch = 10 })
	const n = 2500
	for i := 0; i < n; i += 500 {
		if d := publishRange(b, "old", "nobody.listens", i, i+500); d != 0 {
			t.Fatalf("%d duplicates on first publish", d)
		}
	}
	if d := publishRange(b, "old", "nobody.listens", 0, 10); d != 10 {
		t.Fatalf("republished before the clean-up: %d duplicates, want 10", d)
	}
	b.clk.Advance(2 * time.Minute) // past the retention and the clean-up's minute
	// Events published in the same millisecond go in no set order: probe
	// some from each end and the middle, each until it is new once (a
	// probe found new is stored again, so it is not probed twice).
	left := map[int]bool{0: true, 999: true, 1000: true, 1999: true, 2000: true, n - 1: true}
	eventually(t, "every old event cleaned", func() bool {
		for i := range left {
			if isNew(b, "old", i) {
				delete(left, i)
			}
		}
		return len(left) == 0
	})
}

// isNew publishes prefix-i again and reports whether it was new (not a
// duplicate).
func isNew(b *bundle, prefix string, i int) bool {
	return publishRange(b, prefix, "nobody.listens", i, i+1) == 0
}
