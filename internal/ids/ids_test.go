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
