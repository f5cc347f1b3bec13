// Package stats keeps the rules of Herald's delivery statistics: per-minute
// rollups per subscription and endpoint of delivered, failed and
// dead-lettered counts and a latency histogram, which the store writes in
// the outcomes' own group commit (internal/store/engine/record.go) and
// GET /v1/stats and the console's
// overview read.
//
// Latency is kept as a histogram of Buckets fixed log-scale buckets (powers
// of two of a millisecond), so rollups written by any node add up exactly
// and a percentile is answered within a factor of √2 (see Bucket and
// Percentile).
package stats

import (
	"math"
	"time"
)

// Buckets is how many latency buckets a rollup holds. Bucket 0 counts
// attempts under 1 ms; bucket k (1..Buckets-2) those from 2^(k-1) ms to
// under 2^k ms; the last those of 2^(Buckets-2) ms (16.384 s) or more.
const Buckets = 16

// Retention is how long rollups are kept: older minutes are deleted by the
// retention clean-up (internal/server/background.go).
const Retention = 7 * 24 * time.Hour

// Minute is the rollups' step: each row counts one minute.
const Minute = time.Minute

// Bucket returns the latency bucket of an attempt that took d.
func Bucket(d time.Duration) int {
	ms := d.Milliseconds()
	if ms < 1 {
		return 0
	}
	k := 1
	for ms >= 2 && k < Buckets-1 {
		ms >>= 1
		k++
	}
	return k
}

// bucketValue is the latency reported for bucket k, in milliseconds: the
// geometric middle of its range (within √2 of any latency in it), 1 for
// bucket 0 (under 1 ms) and the lower bound, 16384, for the last (16.384 s
// or more: a percentile there reads "at least").
func bucketValue(k int) float64 {
	switch {
	case k <= 0:
		return 1
	case k >= Buckets-1:
		return math.Ldexp(1, Buckets-2)
	}
	return math.Ldexp(math.Sqrt2, k-1)
}

// Row is one step's counts: the rollups of every minute in [At, At+step)
// added up (a subscription's, an endpoint's or an account's).
type Row struct {
	At           time.Time
	Delivered    int64 // deliveries that ended delivered (pushed, or acknowledged by a pull consumer)
	Failed       int64 // attempts that failed (a retry, a queued or dead-lettered end followed)
	DeadLettered int64 // deliveries that ended dead-lettered
	// Latency counts attempts by their duration's Bucket.
	Latency [Buckets]int64
}

// Add adds o's counts to r's.
func (r *Row) Add(o *Row) {
	r.Delivered += o.Delivered
	r.Failed += o.Failed
	r.DeadLettered += o.DeadLettered
	for i := range r.Latency {
		r.Latency[i] += o.Latency[i]
	}
}

// Percentile returns the latency in milliseconds below which a fraction p
// (0 < p <= 1) of the row's attempts fell, as the value of the bucket
// holding it (bucketValue: within a factor of √2 of the true percentile
// from 1 ms to 16.384 s), and 0 when the row holds no attempt.
func (r *Row) Percentile(p float64) float64 {
	var total int64
	for _, n := range r.Latency {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(p * float64(total)))
	var seen int64
	for k, n := range r.Latency {
		seen += n
		if seen >= rank {
			return math.Round(bucketValue(k)*10) / 10
		}
	}
	return bucketValue(Buckets - 1)
}

// Window is a span GET /v1/stats answers for and the step of its series.
type Window struct {
	Name string
	Span time.Duration
	// Step is each point's span: one minute for the last hour, coarser
	// for longer windows, so that a series holds at most a few hundred
	// points (288 for a day, 168 for a week).
	Step time.Duration
}

// Windows are the windows GET /v1/stats accepts.
var Windows = []Window{
	{"1h", time.Hour, time.Minute},
	{"24h", 24 * time.Hour, 5 * time.Minute},
	{"7d", 7 * 24 * time.Hour, time.Hour},
}

// WindowNamed returns the window called name.
func WindowNamed(name string) (Window, bool) {
	for _, w := range Windows {
		if w.Name == name {
			return w, true
		}
	}
	return Window{}, false
}

// Range returns the window's steps ending at now: from the start of the
// step holding now-Span (exclusive of it: the series holds Span/Step
// points) to the step holding now, which is included (still filling).
func (w Window) Range(now time.Time) (from, until time.Time) {
	until = now.Truncate(w.Step).Add(w.Step)
	return until.Add(-w.Span), until
}

// Fill returns one row per step from `from` to `until` (exclusive): rows
// (sorted by At, each on a step) where they are, zero rows for the steps
// with nothing, so charts are continuous.
func Fill(rows []Row, from, until time.Time, step time.Duration) []Row {
	out := make([]Row, 0, until.Sub(from)/step)
	i := 0
	for at := from; at.Before(until); at = at.Add(step) {
		for i < len(rows) && rows[i].At.Before(at) {
			i++
		}
		if i < len(rows) && rows[i].At.Equal(at) {
			out = append(out, rows[i])
			continue
		}
		out = append(out, Row{At: at})
	}
	return out
}
