package bench

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/uuid"
)

func TestEventNumber(t *testing.T) {
	for id, want := range map[string]int{"p.main.3-0": 0, "p.main.3-42": 42, "p.main.3-": -1, "p.main.4-1": -1, "p.main.3-x": -1, "p.main.3--1": -1, "": -1} {
		got, ok := eventNumber(id, "p.main.3-", false)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("eventNumber(%q) = %d, want %d", id, got, want)
		}
		if want >= 0 && string(appendEventID(nil, "p.main.3-", want, false)) != id {
			t.Errorf("appendEventID(%d) is not %q", want, id)
		}
	}
}

// TestUUIDEventIDs checks that --uuid-ids gives RFC 9562 version-4 UUIDs
// (as the uuid library parses them) whose order is not the events', that
// each names its event for the phase it belongs to and no other, and that
// the same event always gets the same id (a retried request repeats it).
func TestUUIDEventIDs(t *testing.T) {
	const prefix, n = "x.steady-batch.main.1-", 10_000
	var ids []string
	seen := map[string]bool{}
	for i := range n {
		id := string(appendEventID(nil, prefix, i, true))
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("event %d: %q is not a canonical UUIDv4 (%v)", i, id, err)
		}
		if seen[id] {
			t.Fatalf("event %d: id %q repeats", i, id)
		}
		seen[id] = true
		if again := string(appendEventID(nil, prefix, i, true)); again != id {
			t.Fatalf("event %d: %q then %q", i, id, again)
		}
		if got, ok := eventNumber(id, prefix, true); !ok || got != i {
			t.Fatalf("eventNumber(%q) = %d, %v; want %d", id, got, ok, i)
		}
		if _, ok := eventNumber([]byte(id), "x.steady-batch.main.2-", true); ok {
			t.Fatalf("%q counted for another phase", id)
		}
		if _, ok := eventNumber(id, prefix, false); ok {
			t.Fatalf("%q counted as a sequential id", id)
		}
		ids = append(ids, id)
	}
	// In publish order, consecutive ids should sort in order about half
	// the time (random), not nearly always (sequential).
	ordered := 0
	for i := 1; i < n; i++ {
		if ids[i-1] < ids[i] {
			ordered++
		}
	}
	if ordered < n*4/10 || ordered > n*6/10 {
		t.Errorf("%d of %d consecutive ids in order, want about half", ordered, n-1)
	}
	if slices.IsSorted(ids) {
		t.Error("ids sort in publish order")
	}
	for _, bad := range []string{"", ids[0][:35], ids[0][:24] + "zzzzzzzzzzzz", ids[0][:24] + strconv.FormatInt(1<<47, 16)} {
		if _, ok := eventNumber(bad, prefix, true); ok {
			t.Errorf("eventNumber(%q) took it", bad)
		}
	}
}
