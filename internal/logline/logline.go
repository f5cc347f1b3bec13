// Package logline coalesces the warn lines of something that may recur
// without bound (requests refused while the store is away, a cap reached,
// events that break their schema), so that a flood of it writes a line per
// interval, not a line each time, and the line says how many it stands for.
package logline

import "time"

// Coalesced decides when the coalesced line of one kind of recurrence is
// due: the first after a quiet interval at once, and then at most one line
// per interval, counting the recurrences since the last line. Its zero
// value is ready; guard it with a mutex of its own.
type Coalesced struct {
	last    time.Time // of the last line (zero: none yet)
	pending int       // recurrences since the last line, not in one yet
}

// Add counts one recurrence at now and reports whether a line is due (no
// line in the last every), with the recurrences it stands for (this one
// and those since the last line) and the time since the last line (0: the
// first).
func (c *Coalesced) Add(now time.Time, every time.Duration) (n int, since time.Duration, due bool) {
	c.pending++
	if !c.last.IsZero() && now.Sub(c.last) < every {
		return 0, 0, false
	}
	if !c.last.IsZero() {
		since = now.Sub(c.last)
	}
	n, c.last, c.pending = c.pending, now, 0
	return n, since, true
}

// Forget drops the recurrences counted since the last line (another line
// told of them), keeping when it was.
func (c *Coalesced) Forget() { c.pending = 0 }
