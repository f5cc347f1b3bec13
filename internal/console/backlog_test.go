package console

import (
	"reflect"
	"testing"

	"github.com/herald-events/herald/internal/store"
)

// TestBacklogView: each count in digits up to backlogCap, "over 10000"
// past it; pending is both lanes together, over the cap when either lane
// is.
func TestBacklogView(t *testing.T) {
	for _, c := range []struct {
		in   store.Backlog
		want backlogView
	}{
		{store.Backlog{}, backlogView{"0", "0", "0", nil}},
		{store.Backlog{Fresh: 3, Retry: 2, Queued: 7}, backlogView{"5", "2", "7", nil}},
		{store.Backlog{Fresh: 10_000, Retry: 10_000, Queued: 10_000}, backlogView{"20000", "10000", "10000", nil}},
		{store.Backlog{Fresh: 10_001, Retry: 5, Queued: 10_001}, backlogView{"over 10000", "5", "over 10000", nil}},
		{store.Backlog{Fresh: 5, Retry: 10_001}, backlogView{"over 10000", "over 10000", "0", nil}},
	} {
		if got := *newBacklogView(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("newBacklogView(%+v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// TestHeldWords: a held count in digits, "over 10000" past backlogCap
// (whether or not every endpoint was counted), "at least" before it when
// not every endpoint was.
func TestHeldWords(t *testing.T) {
	for _, c := range []struct {
		n       int64
		partial bool
		want    string
	}{
		{11, false, "11"}, {10_000, false, "10000"}, {10_001, false, "over 10000"},
		{11, true, "at least 11"}, {10_001, true, "over 10000"},
	} {
		if got := heldWords(c.n, c.partial); got != c.want {
			t.Errorf("heldWords(%d, %v) = %q, want %q", c.n, c.partial, got, c.want)
		}
	}
}
