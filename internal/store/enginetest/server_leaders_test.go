package enginetest

import (
	"testing"
	"time"
)

// lead calls TryLead and fails the test unless it reports want.
func lead(b *bundle, name, owner string, now, until time.Time, want bool) {
	b.t.Helper()
	got, err := b.s.TryLead(b.ctx, name, owner, now, until)
	if err != nil || got != want {
		b.t.Fatalf("TryLead(%s, %s, now %v, until %v) = %v, %v; want %v", name, owner, now, until, got, err, want)
	}
}

func testTryLead(t *testing.T, b *bundle) {
	const role = "cleanup"
	// The first caller wins; the second loses while the term runs, up to
	// and including its last millisecond.
	lead(b, role, "node-a", b.now, b.at(30*time.Second), true)
	lead(b, role, "node-b", b.at(time.Second), b.at(31*time.Second), false)
	lead(b, role, "node-b", b.at(30*time.Second), b.at(60*time.Second), false)
	// The holder renews, before or after its term ended (nobody took it).
	lead(b, role, "node-a", b.at(20*time.Second), b.at(50*time.Second), true)
	lead(b, role, "node-b", b.at(40*time.Second), b.at(70*time.Second), false)
	lead(b, role, "node-a", b.at(55*time.Second), b.at(90*time.Second), true)
	// Once the term has ended, another caller takes over, and the former
	// holder loses.
	lead(b, role, "node-b", b.at(90*time.Second+time.Millisecond), b.at(120*time.Second), true)
	lead(b, role, "node-a", b.at(100*time.Second), b.at(130*time.Second), false)
	lead(b, role, "node-b", b.at(110*time.Second), b.at(140*time.Second), true)
}

func testTryLeadRoles(t *testing.T, b *bundle) {
	lead(b, "cleanup", "node-a", b.now, b.at(time.Minute), true)
	lead(b, "reaper", "node-b", b.now, b.at(time.Minute), true)
	lead(b, "cleanup", "node-b", b.now, b.at(time.Minute), false)
	lead(b, "reaper", "node-a", b.now, b.at(time.Minute), false)
}
