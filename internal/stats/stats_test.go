package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBucket: the bucket bounds are powers of two of a millisecond, under
// 1 ms in bucket 0 and 16.384 s or more in the last.
func TestBucket(t *testing.T) {
	for d, want := range map[time.Duration]int{
		0: 0, 999 * time.Microsecond: 0, time.Millisecond: 1, 1999 * time.Microsecond: 1,
		2 * time.Millisecond: 2, 3 * time.Millisecond: 2, 4 * time.Millisecond: 3,
		16383 * time.Millisecond: Buckets - 2, 16384 * time.Millisecond: Buckets - 1, time.Hour: Buckets - 1,
	} {
		if got := Bucket(d); got != want {
			t.Errorf("Bucket(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestPercentileWithinRoot2: for random latencies from 1 ms to 16 s, p50
// and p99 of the histogram are within a factor of √2 of the exact ones.
func TestPercentileWithinRoot2(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var r Row
		var ds []float64
		for range 1 + rng.IntN(500) {
			ms := math.Exp(rng.Float64() * math.Log(16000)) // 1 ms … 16 s, log-uniform
			ds = append(ds, math.Floor(ms))
			r.Latency[Bucket(time.Duration(ms*float64(time.Millisecond)))]++
		}
		slices.Sort(ds)
		for _, p := range []float64{0.5, 0.99} {
			exact := ds[int(math.Ceil(p*float64(len(ds))))-1]
			if got := r.Percentile(p); got < exact/math.Sqrt2-0.1 || got > exact*math.Sqrt2+0.1 {
				t.Fatalf("p%v of %d = %v, exact %v: not within √2", p*100, len(ds), got, exact)
			}
		}
	}
	if got := (&Row{}).Percentile(0.5); got != 0 {
		t.Fatalf("no attempts: p50 %v, want 0", got)
	}
}

// TestFill: a window's range holds Span/Step steps ending with the one
// holding now; Fill puts zero rows where the store had none.
func TestFill(t *testing.T) {
	w, _ := WindowNamed("1h")
	now := time.Date(2026, 1, 5, 9, 30, 15, 0, time.UTC)
	from, until := w.Range(now)
	if !from.Equal(time.Date(2026, 1, 5, 8, 31, 0, 0, time.UTC)) || !until.Equal(time.Date(2026, 1, 5, 9, 31, 0, 0, time.UTC)) {
		t.Fatalf("Range = %v, %v", from, until)
	}
	got := Fill([]Row{{At: from, Delivered: 1}, {At: until.Add(-time.Minute), Failed: 2}}, from, until, w.Step)
	if len(got) != 60 || got[0].Delivered != 1 || got[59].Failed != 2 || got[30] != (Row{At: from.Add(30 * time.Minute)}) {
		t.Fatalf("Fill: %d rows, first %+v, last %+v", len(got), got[0], got[59])
	}
}
