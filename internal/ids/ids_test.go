package ids

import (
	"strings"
	"testing"
	"time"
)

func TestNewSortsByTime(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	a := New("dlv_", t0)
	b := New("dlv_", t0.Add(time.Millisecond))
	if !strings.HasPrefix(a, "dlv_") || len(a) != 4+26 {
		t.Fatalf("bad id %q", a)
	}
	if !(a < b) {
		t.Fatalf("%q should sort before %q", a, b)
	}
	if New("x", t0) == New("x", t0) {
		t.Fatal("two ids in one millisecond are equal")
	}
}

func TestSequenceSortsInOrderMade(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	next := Sequence("dlv_", t0)
	prev := next()
	if !strings.HasPrefix(prev, "dlv_") || len(prev) != 4+26 || prev[:14] != New("dlv_", t0)[:14] {
		t.Fatalf("bad first id %q (its time must be New's)", prev)
	}
	for range 10_000 {
		id := next()
		if !(prev < id) {
			t.Fatalf("%q made after %q sorts before it", id, prev)
		}
		prev = id
	}
	if later := New("dlv_", t0.Add(time.Millisecond)); !(prev < later) {
		t.Fatalf("%q of the sequence sorts after %q of the next millisecond", prev, later)
	}
	if a, b := Sequence("x", t0)(), Sequence("x", t0)(); a == b {
		t.Fatal("two sequences in one millisecond start equal")
	}
}

func TestShapeFitsTheIDsMade(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	for _, s := range []Shape{Account, Key, Subscription, Delivery} {
		if id := New(s.Prefix, now); !s.Fits(id) {
			t.Errorf("%s does not fit %q, an id New made", s, id)
		}
	}
	id := New("sub_", now)
	for _, bad := range []string{"", "billing", "sub_", id[:len(id)-1], id + "0", "dlv_" + id[4:], "sub_" + strings.ToUpper(id[4:]), id[:len(id)-1] + "u"} {
		if Subscription.Fits(bad) {
			t.Errorf("Subscription fits %q", bad)
		}
	}
	if got := Endpoint.String(); got != "ep_ and 20 characters" {
		t.Errorf("Endpoint.String() = %q", got)
	}
}

func TestFloorBoundsTime(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	f := Floor("dlv_", t0)
	for range 100 {
		before, at, after := New("dlv_", t0.Add(-time.Millisecond)), New("dlv_", t0), New("dlv_", t0.Add(time.Millisecond))
		if !(before < f && f <= at && at < Floor("dlv_", t0.Add(time.Millisecond)) && f < after) {
			t.Fatalf("Floor %q does not lie between %q, %q and %q", f, before, at, after)
		}
	}
	if s := Sequence("dlv_", t0)(); s < f || !Delivery.Fits(f) {
		t.Fatalf("Floor %q: a sequence's first %q sorts before it, or it is not an ID's shape", f, s)
	}
}
