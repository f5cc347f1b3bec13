package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestBacklogPlan pins CountBacklog's plan: each count walks its partial
// indexes alone (covering: no row of the table is read) and every walk
// stops at the limit: in the statement's program, each loop over an index
// (from the cursor's Next back to where it jumps) holds a DecrJumpZero,
// the LIMIT's counter, which leaves the loop when the limit is reached.
func TestBacklogPlan(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	p := plan(t, s, queries["CountBacklog"])
	for _, w := range []string{
		"SCAN d USING COVERING INDEX deliveries_fresh\n",
		"SEARCH d USING COVERING INDEX deliveries_leased (status=?)",
		"SCAN d USING COVERING INDEX deliveries_retry\n",
		"SCAN d USING COVERING INDEX deliveries_queued\n",
	} {
		if !strings.Contains(p, w) {
			t.Errorf("CountBacklog: plan lacks %q:\n%s", w, p)
		}
	}
	if strings.Contains(p, "SCAN d\n") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("CountBacklog: scans the table or sorts:\n%s", p)
	}
	if loops := limitedLoops(t, "CountBacklog", program(t, s, queries["CountBacklog"], int64(10_001))); loops != 5 {
		t.Errorf("CountBacklog: %d index loops, want 5 (two per lane, one queued)", loops)
	}
}

// limitedLoops returns how many loops over an index (a Next, back to
// where it jumps) prog holds, failing t for each whose body holds no
// DecrJumpZero (the LIMIT's counter, which leaves the loop when the limit
// is reached).
func limitedLoops(t *testing.T, name string, prog []instruction) int {
	t.Helper()
	loops := 0
	for addr, in := range prog {
		if in.op != "Next" {
			continue
		}
		loops++
		limited := false
		for _, body := range prog[in.p2:addr] {
			limited = limited || body.op == "DecrJumpZero"
		}
		if !limited {
			t.Errorf("%s: the index loop %d..%d has no LIMIT counter", name, in.p2, addr)
		}
	}
	return loops
}

// instruction is one instruction of an SQLite program (EXPLAIN): its
// opcode and its second operand (for Next, where its loop begins).
type instruction struct {
	op string
	p2 int
}

// program returns the instructions of q's program, by address.
func program(t *testing.T, s *Store, q string, args ...any) []instruction {
	t.Helper()
	rows, err := s.readDB.QueryContext(context.Background(), "EXPLAIN "+q, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", firstLine(q), err)
	}
	defer rows.Close()
	var out []instruction
	for rows.Next() {
		var addr, p1, p2, p3, p5 int
		var p4, comment any
		var in instruction
		if err := rows.Scan(&addr, &in.op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
			t.Fatal(err)
		}
		in.p2 = p2
		if addr != len(out) {
			t.Fatalf("explain %s: address %d after %d instructions", firstLine(q), addr, len(out))
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
