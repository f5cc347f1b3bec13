package logline

import (
	"testing"
	"time"
)

// TestCoalesced: the first line at once; within the interval none, each
// counted; the first after it stands for them all and says since when;
// Forget drops the count but not the time.
func TestCoalesced(t *testing.T) {
	var c Coalesced
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	if n, since, due := c.Add(t0, 10*time.Second); !due || n != 1 || since != 0 {
		t.Fatalf("first: %d %v %v", n, since, due)
	}
	for i := range 3 {
		if _, _, due := c.Add(t0.Add(time.Duration(i+1)*time.Second), 10*time.Second); due {
			t.Fatalf("within the interval: due")
		}
	}
	if n, since, due := c.Add(t0.Add(10*time.Second), 10*time.Second); !due || n != 4 || since != 10*time.Second {
		t.Fatalf("after the interval: %d %v %v; want 4, 10s, due", n, since, due)
	}
	c.Add(t0.Add(11*time.Second), 10*time.Second)
	c.Forget()
	if n, _, due := c.Add(t0.Add(20*time.Second), 10*time.Second); !due || n != 1 {
		t.Fatalf("after Forget: %d %v; want 1, due", n, due)
	}
}
