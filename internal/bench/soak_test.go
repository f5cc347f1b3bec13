package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSoakRegistered(t *testing.T) {
	if !slices.Contains(Scenarios, "soak") || scenarioFuncs["soak"] == nil || !strings.Contains(ScenarioHelp(), "--soak-deliveries") {
		t.Error("soak is not listed, registered or described")
	}
	all, err := ParseScenarios("all")
	if err != nil || slices.Contains(all, "soak") || slices.Contains(all, "console") || len(all) != len(Scenarios)-2 {
		t.Errorf("all: %v, %v; want every scenario but soak and console", all, err)
	}
	if got, err := ParseScenarios("soak"); err != nil || len(got) != 1 {
		t.Errorf("soak by name: %v, %v", got, err)
	}
	// At least 2,000 deliveries/s at worst, and the start.
	if d := defaultTimeout("soak", DefaultSizes()); d < 10_000_000/2000*time.Second {
		t.Errorf("soak's deadline %v", d)
	}
	s := DefaultSizes()
	if s.SoakDeliveries != 10_000_000 || s.SoakRetention < time.Minute {
		t.Errorf("soak defaults: %d, %v", s.SoakDeliveries, s.SoakRetention)
	}
	for _, tt := range []struct {
		set  func(*Sizes)
		want string
	}{
		{func(s *Sizes) { s.SoakDeliveries = 0 }, "--soak-deliveries"},
		{func(s *Sizes) { s.SoakRetention = 59 * time.Second }, "--soak-retention"},
	} {
		s := DefaultSizes()
		tt.set(&s)
		if err := s.check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v", tt.want, err)
		}
	}
	b, _ := json.Marshal(DefaultSizes())
	if !strings.Contains(string(b), `"soak_deliveries":10000000`) || !strings.Contains(string(b), `"soak_retention":"30m0s"`) {
		t.Errorf("sizes JSON: %s", b)
	}
}

// TestSoakWindows: the windows' rates come from the samples: 1,000
// deliveries/s (0.1 s of CPU each 100) for the first 10 s, then 500/s;
// events published at the same pace.
func TestSoakWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var pts []soakPoint
	// A sample before the load started (the server's CPU time growing at
	// the same pace: interpolation at the start is exact).
	pts = append(pts, soakPoint{t: t0.Add(-50 * time.Millisecond), cpu: 5*time.Second - 50*time.Millisecond, rss: 10 << 20})
	n, cpu := int64(0), 5*time.Second
	for i := 1; i <= 300; i++ { // every 100 ms for 30 s
		rate := int64(100) // per 100 ms
		if i > 100 {
			rate = 50
		}
		n += rate
		cpu += time.Duration(rate) * time.Millisecond // 1 ms of CPU a delivery before, the same after
		if i > 100 {
			cpu += time.Duration(rate) * time.Millisecond // 2 ms after
		}
		pts = append(pts, soakPoint{t: t0.Add(time.Duration(i) * 100 * time.Millisecond), delivered: n, published: n, cpu: cpu, rss: int64(i) << 20})
	}
	total := n // 10,000 + 10,000 = 20,000
	lr := loadResult{Accepted: total, start: t0, end: t0.Add(30 * time.Second)}
	st := stats{unique: total, first: t0.Add(time.Millisecond), last: t0.Add(30 * time.Second)}
	first, last, ok := soakWindows(pts, lr, st, 0.5)
	if !ok {
		t.Fatal("no windows")
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }
	// First 10 % = 2,000 deliveries in 2 s; last 10 % in 4 s.
	if first.Deliveries != 2000 || !near(first.DeliveriesPerSec, 1000) || !near(first.EventsPerSec, 1000) || !near(first.CPUPer1000, 1) {
		t.Errorf("first window: %+v", first)
	}
	if last.Deliveries != 2000 || !near(last.DeliveriesPerSec, 500) || !near(last.EventsPerSec, 500) || !near(last.CPUPer1000, 2) {
		t.Errorf("last window: %+v", last)
	}
	if first.Name != "first-10%" || last.Name != "last-10%" || last.PeakRSSMiB < 299 || first.PeakRSSMiB > 22 {
		t.Errorf("names %q %q, RSS %.0f %.0f", first.Name, last.Name, first.PeakRSSMiB, last.PeakRSSMiB)
	}
	if _, _, ok := soakWindows(pts[:2], loadResult{Accepted: 5, start: t0}, stats{unique: 5, last: t0}, 0); ok {
		t.Error("windows from 5 deliveries")
	}
}

func TestRecorderEvery(t *testing.T) {
	r := &recorder{every: 10}
	for i := range 1000 {
		r.add(time.Duration(i))
	}
	s := r.summary()
	if s.Count != 100 || s.Max != 990 {
		t.Errorf("kept %d (max %v), want 100 evenly spread (max 990ns)", s.Count, s.Max)
	}
}

func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "b-wal"), make([]byte, 24), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := dirBytes(dir); err != nil || n != 1024 {
		t.Errorf("dirBytes = %d, %v; want 1024", n, err)
	}
	if _, err := dirBytes(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing directory: no error")
	}
}

func TestSchemaOf(t *testing.T) {
	if s := schemaOf("postgres://u@h/db?sslmode=disable&search_path=herald_bench_abc"); s != "herald_bench_abc" {
		t.Errorf("schemaOf = %q", s)
	}
}
