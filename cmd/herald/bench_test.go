package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := benchMain(context.Background(), tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("herald bench %v: exit %d, stderr:\n%s\nwant exit %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}

// TestBenchSteadyBatch builds herald and runs a tiny steady-batch against
// it. It asserts what was counted, never how fast.
func TestBenchSteadyBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := benchMain(ctx, []string{"--herald", bin, "--scenario", "steady-batch", "--events", "1500", "--endpoints", "3",
		"--batch", "50", "--publishers", "2", "--json", "--tmp", dir, "--timeout", "2m"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
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
			PeakRSS float64 `json:"peak_rss_mib"`
			Budget  []struct {
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
	bin := filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
	bin := filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
