package storetest

import (
	"testing"
	"time"
)

var leaderTests = []test{
	{"TryLead", testTryLead},
	{"TryLeadRolesIndependent", testTryLeadRoles},
}

// lead calls TryLead and fails the test unless it reports want.
func (b *bundle) lead(name, owner string, now, until time.Time, want bool) {
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
	b.lead(role, "node-a", b.now, b.at(30*time.Second), true)
	b.lead(role, "node-b", b.at(time.Second), b.at(31*time.Second), false)
	b.lead(role, "node-b", b.at(30*time.Second), b.at(60*time.Second), false)
	// The holder renews, before or after its term ended (nobody took it).
	b.lead(role, "node-a", b.at(20*time.Second), b.at(50*time.Second), true)
	b.lead(role, "node-b", b.at(40*time.Second), b.at(70*time.Second), false)
	b.lead(role, "node-a", b.at(55*time.Second), b.at(90*time.Second), true)
	// Once the term has ended, another caller takes over, and the former
	// holder loses.
	b.lead(role, "node-b", b.at(90*time.Second+time.Millisecond), b.at(120*time.Second), true)
	b.lead(role, "node-a", b.at(100*time.Second), b.at(130*time.Second), false)
	b.lead(role, "node-b", b.at(110*time.Second), b.at(140*time.Second), true)
}

func testTryLeadRoles(t *testing.T, b *bundle) {
	b.lead("cleanup", "node-a", b.now, b.at(time.Minute), true)
	b.lead("reaper", "node-b", b.now, b.at(time.Minute), true)
	b.lead("cleanup", "node-b", b.now, b.at(time.Minute), false)
	b.lead("reaper", "node-a", b.now, b.at(time.Minute), false)
}
