package health

import (
	"encoding/json"
	"time"
)

// Buckets is how many slices the rolling window is cut into. Attempts are
// counted per slice, so the window slides in steps of Window/Buckets (one
// minute for the default hour) and costs a fixed 60 counters per endpoint
// however many attempts it sees.
const Buckets = 60

// Window counts attempts and failures in the last Window of time.
type Window struct {
	// Slices[i] covers the slice whose number (time / slice width) is
	// Slices[i].N; a slice whose N is stale counts nothing.
	Slices [Buckets]Slice
}

// Slice is one step of the window.
type Slice struct {
	N        int64 // slice number: unix nanoseconds / width
	Attempts int64
	Failures int64
}

func width(window time.Duration) int64 {
	w := int64(window) / Buckets
	if w <= 0 {
		w = 1
	}
	return w
}

// Add counts one attempt at t.
func (w *Window) Add(window time.Duration, t time.Time, success bool) {
	n := t.UnixNano() / width(window)
	s := &w.Slices[mod(n, Buckets)]
	if s.N != n {
		*s = Slice{N: n}
	}
	s.Attempts++
	if !success {
		s.Failures++
	}
}

// Counts returns the attempts and failures in the window ending at now: the
// current slice and the Buckets−1 before it.
func (w *Window) Counts(window time.Duration, now time.Time) (attempts, failures int64) {
	cur := now.UnixNano() / width(window)
	for _, s := range w.Slices {
		if s.N > cur-Buckets && s.N <= cur && s.Attempts > 0 {
			attempts += s.Attempts
			failures += s.Failures
		}
	}
	return attempts, failures
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// MarshalJSON writes the non-empty slices as [[slice, attempts, failures], ...],
// the form the stores keep.
func (w Window) MarshalJSON() ([]byte, error) {
	out := make([][3]int64, 0, Buckets)
	for _, s := range w.Slices {
		if s.Attempts > 0 {
			out = append(out, [3]int64{s.N, s.Attempts, s.Failures})
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (w *Window) UnmarshalJSON(b []byte) error {
	var in [][3]int64
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*w = Window{}
	for _, s := range in {
		w.Slices[mod(s[0], Buckets)] = Slice{N: s[0], Attempts: s[1], Failures: s[2]}
	}
	return nil
}
