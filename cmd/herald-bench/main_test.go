package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/bench"
)

// TestMain lets this test binary stand in for herald-bench as the baseline
// forwarder: herald bench --baseline starts its own executable (this one,
// under go test) with the hidden command forwarder.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == bench.ForwarderCommand {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "herald-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	heraldBuild.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, 0, "steady-batch"},
		{[]string{"-h"}, 0, "max_events_per_batch"},
		{[]string{"-h"}, 0, "fanout-filtered"},
		{[]string{"--scenario", "nope"}, 2, `unknown scenario "nope"`},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--batch", "0", "--herald", "/nonexistent/herald"}, 2, "--herald"},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"--serve-env", "GOGC"}, 2, `"GOGC" is not KEY=VALUE`},
		{[]string{"-h"}, 0, "-baseline"},
		{[]string{"-h"}, 0, "-runs"},
		{[]string{"-h"}, 0, "soak"},
		{[]string{"-h"}, 0, `not in "all"`},
		{[]string{"-h"}, 0, "-console-deliveries"},
		{[]string{"--runs", "0"}, 2, "--runs 0: must be from 1 to 100"},
		{[]string{"--runs", "101"}, 2, "--runs 101"},
		{[]string{"--soak-retention", "30s", "--herald", "/nonexistent/herald"}, 2, "--herald"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := benchMain(context.Background(), tt.args, &stdout, &stderr)
		out := &stderr // a usage error; help asked for goes to stdout
		if tt.code == 0 {
			out = &stdout
		}
		if code != tt.code || !strings.Contains(out.String(), tt.want) {
			t.Errorf("herald bench %v: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d and %q", tt.args, code, stdout.String(), stderr.String(), tt.code, tt.want)
		}
	}
}

// TestBenchSteadyBatch builds herald and runs a tiny steady-batch against
// it, with --serve-flags herald serve takes (the report names the binary
// and the flags it got). It asserts what was counted, never how fast.
func TestBenchSteadyBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	dir := t.TempDir()
	bin := buildHerald(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := benchMain(ctx, []string{"--herald", bin, "--scenario", "steady-batch", "--events", "1500", "--endpoints", "3",
		"--batch", "50", "--publishers", "2", "--json", "--tmp", dir, "--timeout", "2m", "--serve-flags", "--window 20000 --lease 10s"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
		Herald  string `json:"herald"`
		Results []struct {
			Scenario string `json:"scenario"`
			OK       bool   `json:"ok"`
			Phases   []struct {
				Events     int64 `json:"events"`
				Deliveries int64 `json:"deliveries"`
				Expected   int64 `json:"expected"`
				Latency    struct {
					Count int64 `json:"count"`
				} `json:"latency"`
			} `json:"phases"`
			PeakRSS    float64  `json:"peak_rss_mib"`
			ServeFlags []string `json:"serve_flags"`
			Budget     []struct {
				Line string `json:"line"`
			} `json:"budget"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(rep.Results) != 1 || !rep.Results[0].OK || len(rep.Results[0].Phases) != 1 {
		t.Fatalf("report: %s", stdout.String())
	}
	r := rep.Results[0]
	p := r.Phases[0]
	if p.Events != 1500 || p.Deliveries != 1500 || p.Expected != 1500 || p.Latency.Count != 1500 {
		t.Errorf("events %d deliveries %d/%d latencies %d, want 1500 each", p.Events, p.Deliveries, p.Expected, p.Latency.Count)
	}
	if len(r.Budget) != 1 {
		t.Errorf("budget lines: %+v", r.Budget)
	}
	if rep.Herald != bin || !strings.HasSuffix(strings.Join(r.ServeFlags, " "), "--window 20000 --lease 10s") {
		t.Errorf("herald %q with serve flags %q; want %s with --window 20000 --lease 10s", rep.Herald, r.ServeFlags, bin)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "herald-bench-*")); len(matches) != 0 {
		t.Errorf("scenario directory left behind: %v", matches)
	}
}

// TestBenchPull builds herald and runs a tiny steady-batch and pull: every
// event is acknowledged once, and the pull scenario compares its rate with
// steady-batch's. It asserts what was counted, never how fast.
func TestBenchPull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	dir := t.TempDir()
	bin := buildHerald(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := benchMain(ctx, []string{"--herald", bin, "--scenario", "steady-batch,pull", "--events", "1000", "--pull-events", "1500",
		"--endpoints", "2", "--batch", "50", "--publishers", "2", "--consumers", "3", "--pull-batch", "40",
		"--json", "--tmp", dir, "--timeout", "2m"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
		Results []struct {
			Scenario string `json:"scenario"`
			OK       bool   `json:"ok"`
			Phases   []struct {
				Events           int64   `json:"events"`
				Deliveries       int64   `json:"deliveries"`
				Expected         int64   `json:"expected"`
				DeliveriesPerSec float64 `json:"deliveries_per_sec"`
				Latency          struct {
					Count int64 `json:"count"`
				} `json:"latency"`
			} `json:"phases"`
			Figures []struct {
				Name  string  `json:"name"`
				Value float64 `json:"value"`
			} `json:"figures"`
			Budget []struct {
				Line        string `json:"line"`
				NotMeasured bool   `json:"not_measured"`
			} `json:"budget"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(rep.Results) != 2 || rep.Results[1].Scenario != "pull" || !rep.Results[1].OK || len(rep.Results[1].Phases) != 1 {
		t.Fatalf("report: %s", stdout.String())
	}
	r := rep.Results[1]
	p := r.Phases[0]
	if p.Events != 1500 || p.Deliveries != 1500 || p.Expected != 1500 || p.Latency.Count != 1500 || p.DeliveriesPerSec <= 0 {
		t.Errorf("events %d acknowledged %d/%d latencies %d (%.0f/s), want 1500 each", p.Events, p.Deliveries, p.Expected, p.Latency.Count, p.DeliveriesPerSec)
	}
	figures := map[string]float64{}
	for _, f := range r.Figures {
		figures[f.Name] = f.Value
	}
	if figures["distinct deliveries received"] != 1500 || figures["consumers"] != 3 || figures["pull deliveries/s vs. steady-batch's"] <= 0 {
		t.Errorf("figures: %+v", r.Figures)
	}
	if len(r.Budget) != 1 || r.Budget[0].NotMeasured || !strings.Contains(r.Budget[0].Line, "steady-batch") {
		t.Errorf("budget lines: %+v", r.Budget)
	}
}

// TestBenchBatch builds herald and runs a tiny batch scenario: both runs
// count every event once, the first gets one event a request, the second
// batch bodies (each event of a batch counted). It asserts what was
// counted, never how fast.
func TestBenchBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	dir := t.TempDir()
	bin := buildHerald(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := benchMain(ctx, []string{"--herald", bin, "--scenario", "batch", "--events", "1500", "--endpoints", "3",
		"--batch", "50", "--publishers", "2", "--json", "--tmp", dir, "--timeout", "2m"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
		Results []struct {
			Scenario string `json:"scenario"`
			OK       bool   `json:"ok"`
			Phases   []struct {
				Name             string  `json:"name"`
				Events           int64   `json:"events"`
				Deliveries       int64   `json:"deliveries"`
				Expected         int64   `json:"expected"`
				DeliveriesPerSec float64 `json:"deliveries_per_sec"`
				CPUPer1000       float64 `json:"server_cpu_seconds_per_1000"`
				Latency          struct {
					Count int64 `json:"count"`
				} `json:"latency"`
			} `json:"phases"`
			CPUSeconds float64 `json:"server_cpu_seconds"`
			Figures    []struct {
				Name  string  `json:"name"`
				Value float64 `json:"value"`
			} `json:"figures"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(rep.Results) != 1 || rep.Results[0].Scenario != "batch" || !rep.Results[0].OK || len(rep.Results[0].Phases) != 2 {
		t.Fatalf("report: %s", stdout.String())
	}
	r := rep.Results[0]
	for i, name := range []string{"max-1", "max-50"} {
		p := r.Phases[i]
		if p.Name != name || p.Events != 1500 || p.Deliveries != 1500 || p.Expected != 1500 || p.Latency.Count != 1500 ||
			p.DeliveriesPerSec <= 0 || p.CPUPer1000 <= 0 {
			t.Errorf("phase %d: %+v, want %s with 1500 events, deliveries and latencies", i, p, name)
		}
	}
	if r.CPUSeconds < r.Phases[0].CPUPer1000*1.5+r.Phases[1].CPUPer1000*1.5-0.01 {
		t.Errorf("server CPU %.2fs is less than its phases'", r.CPUSeconds)
	}
	f := map[string]float64{}
	for _, x := range r.Figures {
		f[x.Name] = x.Value
	}
	const ct = "application/cloudevents-batch+json"
	if f["max-1: requests received"] < 1500 || f["max-1: requests as "+ct] != 0 || f["max-1: events a request (mean)"] != 1 {
		t.Errorf("max-1 figures: %v", f)
	}
	if n := f["max-50: requests received"]; n < 1 || n > 1500 || f["max-50: requests as "+ct] != n ||
		f["max-50: events a request (mean)"] < 1 || f["max-50: max_events_per_batch"] != 50 {
		t.Errorf("max-50 figures: %v", f)
	}
	if f["deliveries/s, max-50 vs. max-1"] <= 0 || f["server CPU s/1k, max-50 vs. max-1"] <= 0 {
		t.Errorf("ratios: %v", f)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "herald-bench-*")); len(matches) != 0 {
		t.Errorf("scenario directory left behind: %v", matches)
	}
}

// TestBenchForwarderCommand: the baseline forwarder's command is hidden
// from the usage's command lines and refuses bad flags before it listens.
func TestBenchForwarderCommand(t *testing.T) {
	var stdout strings.Builder
	run(context.Background(), []string{"--help"}, &stdout, &stdout)
	usageLines, _, _ := strings.Cut(stdout.String(), "\n\n")
	if !strings.Contains(usageLines, "Usage: herald bench") || strings.Contains(usageLines, bench.ForwarderCommand) {
		t.Errorf("the usage's command lines list the hidden %s, or are not herald bench's:\n%s", bench.ForwarderCommand, usageLines)
	}
	for flagName, values := range map[string][]string{
		"listen":  {"bogus", "127.0.0.1:nope", ""},
		"workers": {"0", "1025", "x"},
		"queue":   {"0", "-1"},
		"timeout": {"1ms", "6m", "soon"},
		"pprof":   {"bogus", "127.0.0.1:nope"},
	} {
		for _, v := range values {
			checkRefused(t, bench.ForwarderCommand, []string{bench.ForwarderCommand, "--" + flagName + "=" + v}, "-"+flagName)
		}
	}
	checkRefused(t, bench.ForwarderCommand, []string{bench.ForwarderCommand, "extra"}, "extra")
}

// buildHerald returns the herald binary (cmd/herald), built once for all
// the tests of this binary (into a directory TestMain removes).
func buildHerald(t *testing.T) string {
	t.Helper()
	heraldBuild.once.Do(func() {
		heraldBuild.bin = filepath.Join(heraldBuild.dir, "herald")
		if out, err := exec.Command("go", "build", "-o", heraldBuild.bin, "../herald").CombinedOutput(); err != nil {
			heraldBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if heraldBuild.err != nil {
		t.Fatal(heraldBuild.err)
	}
	return heraldBuild.bin
}

// heraldBuild is buildHerald's one build.
var heraldBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// benchResult is what the tests read of one result of a JSON report.
type benchResult struct {
	Scenario string   `json:"scenario"`
	Target   string   `json:"target"`
	Run      int      `json:"run"`
	OK       bool     `json:"ok"`
	Notes    []string `json:"notes"`
	Phases   []struct {
		Name             string  `json:"name"`
		Events           int64   `json:"events"`
		EventsPerSec     float64 `json:"events_per_sec"`
		Deliveries       int64   `json:"deliveries"`
		Expected         int64   `json:"expected"`
		DeliveriesPerSec float64 `json:"deliveries_per_sec"`
		CPUPer1000       float64 `json:"server_cpu_seconds_per_1000"`
		Latency          struct {
			Count int64 `json:"count"`
		} `json:"latency"`
	} `json:"phases"`
	ServeFlags []string `json:"serve_flags"`
	Figures    []struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
	} `json:"figures"`
	Budget []struct {
		Line        string `json:"line"`
		Measured    string `json:"measured"`
		Met         bool   `json:"met"`
		NotMeasured bool   `json:"not_measured"`
	} `json:"budget"`
}

// benchReport is what the tests read of a JSON report.
type benchReport struct {
	Runs        int           `json:"runs"`
	Baseline    bool          `json:"baseline"`
	Results     []benchResult `json:"results"`
	Comparisons []struct {
		Scenario     string  `json:"scenario"`
		Run          int     `json:"run"`
		HeraldRate   float64 `json:"herald_deliveries_per_sec"`
		BaselineRate float64 `json:"baseline_deliveries_per_sec"`
		Ratio        float64 `json:"deliveries_per_sec_ratio"`
		HeraldCPU    float64 `json:"herald_server_cpu_seconds_per_1000"`
		BaselineCPU  float64 `json:"baseline_server_cpu_seconds_per_1000"`
		CPURatio     float64 `json:"server_cpu_per_delivery_ratio"`
		NotMeasured  string  `json:"not_measured"`
	} `json:"baseline_comparisons"`
	Medians []struct {
		Scenario string  `json:"scenario"`
		Pairs    int     `json:"pairs"`
		Ratio    float64 `json:"deliveries_per_sec_ratio"`
	} `json:"baseline_median"`
}

// TestBenchBaseline builds herald and runs a tiny steady-batch,
// steady-single and pull with --baseline --runs 2: Herald and the
// forwarder alternate, every event is delivered on both, the ratios are
// the rows' figures divided, and pull (no baseline) runs on Herald alone
// with a note. It asserts what was counted and computed, never how fast.
func TestBenchBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs servers")
	}
	dir := t.TempDir()
	rep, stdout := runBaselineBench(t, dir)
	want := []string{"steady-batch herald 1", "steady-batch baseline 1", "steady-single herald 1", "steady-single baseline 1", "pull herald 1",
		"steady-batch herald 2", "steady-batch baseline 2", "steady-single herald 2", "steady-single baseline 2", "pull herald 2"}
	if rep.Runs != 2 || !rep.Baseline || len(rep.Results) != len(want) {
		t.Fatalf("runs %d baseline %v, %d results:\n%s", rep.Runs, rep.Baseline, len(rep.Results), stdout)
	}
	rows := checkBaselineRows(t, rep, want)
	if len(rep.Comparisons) != 4 || len(rep.Medians) != 2 {
		t.Fatalf("comparisons %+v, medians %+v", rep.Comparisons, rep.Medians)
	}
	checkBaselineComparisons(t, rep, rows)
	// pull is compared with the steady-batch of its own run.
	for run := 1; run <= 2; run++ {
		pull := rep.Results[rows[runKey{"pull", run}][0]]
		push := rep.Results[rows[runKey{"steady-batch", run}][0]].Phases[0]
		if len(pull.Budget) != 1 || pull.Budget[0].NotMeasured || !strings.Contains(pull.Budget[0].Measured, "vs. "+commas(push.DeliveriesPerSec)+"/s") {
			t.Errorf("pull run %d: %+v (steady-batch %.0f/s)", run, pull.Budget, push.DeliveriesPerSec)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "herald-bench-*")); len(matches) != 0 {
		t.Errorf("scenario directories left behind: %v", matches)
	}
}

// runBaselineBench builds herald and runs TestBenchBaseline's bench with
// its scenario directories in dir; it returns the JSON report, read, and as
// written.
func runBaselineBench(t *testing.T, dir string) (*benchReport, string) {
	t.Helper()
	bin := buildHerald(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := benchMain(ctx, []string{"--herald", bin, "--baseline", "--runs", "2", "--scenario", "steady-batch,steady-single,pull",
		"--events", "1000", "--single-events", "300", "--single-publishers", "4", "--pull-events", "500", "--endpoints", "2",
		"--batch", "50", "--publishers", "2", "--json", "--tmp", dir, "--timeout", "2m"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var rep benchReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	return &rep, stdout.String()
}

// runKey names a scenario's run.
type runKey struct {
	scenario string
	run      int
}

// checkBaselineRows checks that the results come in the order of want,
// each finished with every event counted, the baseline's without budget
// lines and pull's with the note that it ran on Herald alone. It returns
// the indexes of Herald's and the baseline's result of each run.
func checkBaselineRows(t *testing.T, rep *benchReport, want []string) map[runKey][2]int {
	t.Helper()
	rows := map[runKey][2]int{} // indexes of Herald's and the baseline's results
	for i, r := range rep.Results {
		if got := r.Scenario + " " + r.Target + " " + string(rune('0'+r.Run)); got != want[i] {
			t.Errorf("result %d: %s, want %s", i, got, want[i])
		}
		if !r.OK || len(r.Phases) != 1 {
			t.Fatalf("result %d (%s %s): %+v", i, r.Scenario, r.Target, r)
		}
		p := r.Phases[0]
		n := map[string]int64{"steady-batch": 1000, "steady-single": 300, "pull": 500}[r.Scenario]
		if p.Events != n || p.Deliveries != n || p.Expected != n || p.Latency.Count != n || p.DeliveriesPerSec <= 0 {
			t.Errorf("%s %s run %d: events %d deliveries %d/%d latencies %d, want %d", r.Scenario, r.Target, r.Run, p.Events, p.Deliveries, p.Expected, p.Latency.Count, n)
		}
		k := runKey{r.Scenario, r.Run}
		ix := rows[k]
		if r.Target == "baseline" {
			ix[1] = i
			if len(r.Budget) != 0 {
				t.Errorf("the baseline has budget lines: %+v", r.Budget)
			}
		} else {
			ix[0] = i
		}
		rows[k] = ix
		if r.Scenario == "pull" && (len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "Herald alone")) {
			t.Errorf("pull's notes: %q", r.Notes)
		}
	}
	return rows
}

// checkBaselineComparisons checks each comparison against its pair of rows
// (and Herald's budget line against its ratio), and each median against
// the two ratios of its scenario.
func checkBaselineComparisons(t *testing.T, rep *benchReport, rows map[runKey][2]int) {
	t.Helper()
	for _, c := range rep.Comparisons {
		ix := rows[runKey{c.Scenario, c.Run}]
		h, b := rep.Results[ix[0]].Phases[0], rep.Results[ix[1]].Phases[0]
		if c.NotMeasured != "" || c.HeraldRate != h.DeliveriesPerSec || c.BaselineRate != b.DeliveriesPerSec ||
			!near2(c.Ratio, h.DeliveriesPerSec/b.DeliveriesPerSec) || c.HeraldCPU != h.CPUPer1000 || c.BaselineCPU != b.CPUPer1000 {
			t.Errorf("comparison %+v from rows %+v and %+v", c, h, b)
		}
		if b.CPUPer1000 > 0 && !near2(c.CPURatio, h.CPUPer1000/b.CPUPer1000) {
			t.Errorf("CPU ratio %v, rows %v / %v", c.CPURatio, h.CPUPer1000, b.CPUPer1000)
		}
		// Herald's result has the second-stage line, from this pair.
		var line string
		for _, l := range rep.Results[ix[0]].Budget {
			if strings.Contains(l.Line, "baseline forwarder") {
				line = l.Measured
			}
		}
		if !strings.HasPrefix(line, fmt.Sprintf("%.2f×", c.Ratio)) {
			t.Errorf("%s run %d: budget line %q, ratio %.4f", c.Scenario, c.Run, line, c.Ratio)
		}
	}
	for _, m := range rep.Medians {
		var rs []float64
		for _, c := range rep.Comparisons {
			if c.Scenario == m.Scenario {
				rs = append(rs, c.Ratio)
			}
		}
		if m.Pairs != 2 || !near2(m.Ratio, (rs[0]+rs[1])/2) {
			t.Errorf("median %+v of %v", m, rs)
		}
	}
}

// commas formats v as the report does: rounded, with thousands separators.
func commas(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestBenchSoak builds herald and runs a tiny soak: every delivery
// arrives, the first and last windows and their ratio are reported with
// the store's size and the budget line. It asserts what was counted, never
// how fast.
func TestBenchSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	r := benchOne(t, 3, "--scenario", "soak", "--soak-deliveries", "4000", "--soak-retention", "1m", "--endpoints", "2")
	whole, first, last := r.Phases[0], r.Phases[1], r.Phases[2]
	if whole.Events != 4000 || whole.Deliveries != 4000 || whole.Expected != 4000 || whole.Latency.Count != 4000 {
		t.Errorf("whole run: %+v", whole)
	}
	for _, w := range []struct {
		name string
		p    any
		n    int64
		rate float64
	}{{"first-10%", first.Name, first.Deliveries, first.DeliveriesPerSec}, {"last-10%", last.Name, last.Deliveries, last.DeliveriesPerSec}} {
		if w.p != w.name || w.n != 400 || w.rate <= 0 {
			t.Errorf("window %s: %v %d deliveries at %.0f/s", w.name, w.p, w.n, w.rate)
		}
	}
	f := map[string]float64{}
	for _, x := range r.Figures {
		f[x.Name] = x.Value
	}
	if !near2(f["deliveries/s, last 10 % vs. first 10 %"], last.DeliveriesPerSec/first.DeliveriesPerSec) ||
		f["store on disk at the end"] <= 0 || f["store on disk, peak"] < f["store on disk at the end"] || f["dedup retention (--soak-retention)"] != 1 {
		t.Errorf("figures: %v", f)
	}
	if len(r.Budget) != 1 || !strings.Contains(r.Budget[0].Line, "within 15 %") || r.Budget[0].Met != (last.DeliveriesPerSec >= 0.85*first.DeliveriesPerSec) {
		t.Errorf("budget: %+v", r.Budget)
	}
	if !strings.Contains(strings.Join(r.ServeFlags, " "), "--dedup-retention 1m0s") {
		t.Errorf("serve flags: %q", r.ServeFlags)
	}
}

// near2 reports whether a and b are equal but for rounding (relative to b
// when it is over 1).
func near2(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestBenchConsole runs a tiny console scenario: it asserts what was
// stored and that every page was timed and answered, never how fast.
func TestBenchConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	r := benchOne(t, 1, "--scenario", "console", "--console-deliveries", "2000")
	// One event in 20 goes to the pull subscription and stays queued; the
	// others reach a receiver (one in 20 answered 500 and dead-lettered).
	if fill := r.Phases[0]; fill.Events != 2000 || fill.Deliveries != 1900 || fill.Expected != 1900 {
		t.Errorf("fill: %+v", fill)
	}
	f := map[string]float64{}
	for _, x := range r.Figures {
		f[x.Name] = x.Value
	}
	var slowest float64
	for _, page := range []string{"/console/", "/console/deliveries?status=dead_lettered", "/console/deliveries?since={since}&before={before}",
		"/console/deliveries/{id}", "/console/endpoints", "/v1/deliveries?subscription_id={sub}", "/v1/deliveries?subscription_id={sub}&status=dead_lettered",
		"/v1/deliveries?status=queued", "/v1/dead-letters", "/v1/endpoints"} {
		med, p99 := f["GET "+page+" median"], f["GET "+page+" p99"]
		if med <= 0 || p99 < med {
			t.Errorf("%s: median %v, p99 %v", page, med, p99)
		}
	}
	for name, v := range f {
		if strings.HasSuffix(name, " median") {
			slowest = max(slowest, v)
		}
	}
	if f["deliveries stored"] != 2000 || len(f) != 1+2*20 {
		t.Errorf("figures: %v", f)
	}
	if len(r.Budget) != 1 || !strings.Contains(r.Budget[0].Line, "a page answers with 2,000 deliveries stored") || r.Budget[0].Met != (slowest < 100) {
		t.Errorf("budget: %+v (slowest median %v ms)", r.Budget, slowest)
	}
}

// benchOne runs herald bench with args (one scenario, 50 events a request
// from 2 publishers, a 2-minute deadline) against a fresh build and returns
// its one result, which must be OK with phases phases.
func benchOne(t *testing.T, phases int, args ...string) benchResult {
	t.Helper()
	r, code, out := benchRun(t, phases, args...)
	if code != 0 || !r.OK {
		t.Fatalf("exit %d, report: %s", code, out)
	}
	return r
}

// benchRun is benchOne without asking that the scenario's lines be met (a
// tiny run's figures are noise): it returns the one result, the exit code
// and the output, failing the test unless the report holds one result of
// phases phases.
func benchRun(t *testing.T, phases int, args ...string) (benchResult, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args = append([]string{"--herald", buildHerald(t), "--batch", "50", "--publishers", "2", "--json", "--tmp", t.TempDir(), "--timeout", "2m"}, args...)
	code := benchMain(ctx, args, &stdout, &stderr)
	var rep benchReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d: %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	if len(rep.Results) != 1 || len(rep.Results[0].Phases) != phases {
		t.Fatalf("exit %d, report: %s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	return rep.Results[0], code, stdout.String()
}

// TestBenchSchemaEnforced builds herald and runs a tiny schema-enforced:
// both runs deliver every event (none refused by the catalog's schema),
// the comparison's figure and line are reported. It asserts what was
// counted, never how fast.
func TestBenchSchemaEnforced(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	r, _, out := benchRun(t, 2, "--scenario", "schema-enforced", "--events", "600", "--endpoints", "3")
	if r.Scenario != "schema-enforced" {
		t.Fatalf("report: %s", out)
	}
	for i, name := range []string{"schema-enforced", "unchecked"} {
		p := r.Phases[i]
		if p.Name != name || p.Events != 600 || p.Deliveries != 600 || p.Expected != 600 || p.DeliveriesPerSec <= 0 {
			t.Errorf("phase %d: %+v, want %s with 600 events and deliveries", i, p, name)
		}
	}
	f := map[string]float64{}
	for _, x := range r.Figures {
		f[x.Name] = x.Value
	}
	if f["deliveries/s, schema-enforced vs. unchecked"] <= 0 || f["schema bytes"] < 1800 || len(r.Budget) != 1 {
		t.Errorf("figures %v, budget %+v", f, r.Budget)
	}
}

// TestBenchTransformed builds herald and runs a tiny transformed: both
// runs deliver every event (a transform that failed on the bench's
// invoices would dead-letter them, one that gave null would filter them),
// and the comparison's figure and line are reported. It asserts what was
// counted, never how fast.
func TestBenchTransformed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	r, _, out := benchRun(t, 2, "--scenario", "transformed", "--events", "600", "--endpoints", "3")
	if r.Scenario != "transformed" {
		t.Fatalf("report: %s", out)
	}
	for i, name := range []string{"transformed", "untransformed"} {
		p := r.Phases[i]
		if p.Name != name || p.Events != 600 || p.Deliveries != 600 || p.Expected != 600 || p.DeliveriesPerSec <= 0 {
			t.Errorf("phase %d: %+v, want %s with 600 events and deliveries", i, p, name)
		}
	}
	if len(r.Figures) != 1 || r.Figures[0].Name != "deliveries/s, transformed vs. untransformed" || r.Figures[0].Value <= 0 || len(r.Budget) != 1 {
		t.Errorf("figures %+v, budget %+v", r.Figures, r.Budget)
	}
}

// TestBenchSource builds herald and runs a tiny source scenario (it needs
// the NATS with JetStream the project's machines run): both runs deliver
// every event, the NATS one through a source, and the ratio's figure is
// reported. It asserts what was counted, never how fast.
func TestBenchSource(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	r, _, out := benchRun(t, 2, "--scenario", "source", "--events", "600", "--endpoints", "3")
	for i, name := range []string{"nats-source", "http"} {
		p := r.Phases[i]
		if p.Name != name || p.Events != 600 || p.Deliveries != 600 || p.Expected != 600 || p.DeliveriesPerSec <= 0 {
			t.Errorf("phase %d: %+v, want %s with 600 events delivered", i, p, name)
		}
	}
	f := map[string]float64{}
	for _, x := range r.Figures {
		f[x.Name] = x.Value
	}
	if f["deliveries/s, NATS source vs. HTTP steady-batch"] <= 0 {
		t.Errorf("figures %v; report: %s", f, out)
	}
}
