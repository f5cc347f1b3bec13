package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPendingOfPlan pins CountPendingOf's plan: each endpoint listed is a
// seek into each lane's covering partial index (never a scan of the table
// or a sort), the leased deliveries are read from deliveries_leased, and
// every walk stops at the limit: in the statement's program each loop
// over an index (from its Next back to where it jumps) holds a
// DecrJumpZero, the LIMIT's counter.
func TestPendingOfPlan(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	p := plan(t, s, queries["CountPendingOf"])
	for _, w := range []string{
		"SEARCH d USING COVERING INDEX deliveries_fresh (endpoint_id=?)",
		"SEARCH d USING COVERING INDEX deliveries_retry (endpoint_id=?)",
		"SEARCH d USING INDEX deliveries_leased (status=?)",
	} {
		if !strings.Contains(p, w) {
			t.Errorf("CountPendingOf: plan lacks %q:\n%s", w, p)
		}
	}
	if strings.Contains(p, "SCAN d\n") || strings.Contains(p, "SCAN d USING") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("CountPendingOf: scans the table or an index whole, or sorts:\n%s", p)
	}
	if loops := limitedLoops(t, "CountPendingOf", program(t, s, queries["CountPendingOf"], `["ep_1","ep_2"]`, int64(10_001))); loops != 3 {
		t.Errorf("CountPendingOf: %d index loops, want 3 (one per lane, one of leased deliveries)", loops)
	}
}
