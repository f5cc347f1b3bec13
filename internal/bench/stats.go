package bench

import (
	"slices"
	"sync"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest value such that at least p % of the
// values are less than or equal to it. It returns 0 for an empty slice;
// p ≤ 0 gives the minimum and p > 100 the maximum.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	// rank = ceil(p/100 × n), computed in integers where possible to avoid
	// 0.99 × 100 = 98.99999… style surprises.
	r := p / 100 * float64(n)
	rank := int(r)
	if float64(rank) < r-1e-9 {
		rank++
	}
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Latency summarises a set of publish→receipt latencies.
type Latency struct {
	Count int64         `json:"count"`
	P50   time.Duration `json:"-"`
	P90   time.Duration `json:"-"`
	P99   time.Duration `json:"-"`
	Max   time.Duration `json:"-"`
	// The same in milliseconds, for JSON.
	P50ms float64 `json:"p50_ms"`
	P90ms float64 `json:"p90_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// Summarize sorts samples in place and returns their summary.
func Summarize(samples []time.Duration) Latency {
	slices.Sort(samples)
	l := Latency{
		Count: int64(len(samples)),
		P50:   Percentile(samples, 50),
		P90:   Percentile(samples, 90),
		P99:   Percentile(samples, 99),
	}
	if len(samples) > 0 {
		l.Max = samples[len(samples)-1]
	}
	l.P50ms, l.P90ms, l.P99ms, l.MaxMs = ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max)
	return l
}

func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// maxSamples bounds the latencies one recorder keeps (8 bytes each); later
// samples are counted in dropped and left out of the percentiles.
const maxSamples = 8 << 20

// recorder collects latencies from many goroutines.
type recorder struct {
	mu      sync.Mutex
	samples []time.Duration
	dropped int64
	// every, above 1, keeps one latency in every (the 1st, the every+1st,
	// ...): a systematic sample over the whole phase, for phases of
	// millions of deliveries (soak), which would otherwise keep maxSamples
	// of them from the start only.
	every int64
	added int64
}

func (r *recorder) add(d time.Duration) {
	if d < 0 {
		d = 0 // clocks of one machine; a negative value is rounding
	}
	r.mu.Lock()
	r.added++
	if r.every > 1 && (r.added-1)%r.every != 0 {
		r.mu.Unlock()
		return
	}
	if len(r.samples) < maxSamples {
		r.samples = append(r.samples, d)
	} else {
		r.dropped++
	}
	r.mu.Unlock()
}

// summary returns the summary of what was recorded so far.
func (r *recorder) summary() Latency {
	r.mu.Lock()
	s := slices.Clone(r.samples)
	r.mu.Unlock()
	return Summarize(s)
}

// merged returns the summary of several recorders' samples together.
func merged(rs ...*recorder) Latency {
	var all []time.Duration
	for _, r := range rs {
		r.mu.Lock()
		all = append(all, r.samples...)
		r.mu.Unlock()
	}
	return Summarize(all)
}
