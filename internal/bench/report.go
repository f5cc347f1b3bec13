package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of a `herald bench` run.
type Report struct {
	Machine Machine `json:"machine"`
	// Herald is the herald binary measured (Config.Herald, --herald).
	Herald  string    `json:"herald"`
	Sizes   Sizes     `json:"sizes"`
	Started time.Time `json:"started"`
	// Runs is how many times each scenario was run (--runs); Baseline
	// whether the scenarios that can were also run on the baseline
	// forwarder (--baseline).
	Runs     int      `json:"runs"`
	Baseline bool     `json:"baseline"`
	Results  []Result `json:"results"`
	// Comparisons are the herald/baseline pairs, one per scenario and run;
	// Medians, with several runs, their medians by scenario.
	Comparisons []Comparison `json:"baseline_comparisons,omitempty"`
	Medians     []Comparison `json:"baseline_median,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemoryMiB int64  `json:"memory_mib"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Kernel    string `json:"kernel,omitempty"`
}

// Result is one scenario's outcome.
type Result struct {
	Scenario string `json:"scenario"`
	// Target is what the scenario ran against: "herald" (herald serve) or
	// "baseline" (the baseline forwarder, --baseline).
	Target string `json:"target"`
	// Run is the run's number, from 1 (--runs).
	Run   int    `json:"run"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Notes say what the figures cannot (a scenario without a baseline, a
	// figure not measured on this store).
	Notes []string `json:"notes,omitempty"`
	// Phases are the scenario's measured stretches (one for most).
	Phases []PhaseResult `json:"phases"`
	// ServeFlags are the flags given to herald serve beyond --addr, --data,
	// --log-level and --allow-private-destinations.
	ServeFlags []string `json:"serve_flags,omitempty"`
	// ServeEnv are the variables added to its environment.
	ServeEnv []string `json:"serve_env,omitempty"`
	// PeakRSSMiB is the server's peak resident memory (VmHWM) over the whole
	// scenario, start-up included.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// CPUSeconds is the server's CPU time (user + system) from the first
	// subscription to the end of the scenario.
	CPUSeconds float64 `json:"server_cpu_seconds"`
	// BenchCPUSeconds is this process's CPU time over the scenario: the load
	// generator and receivers share the machine with the server.
	BenchCPUSeconds float64 `json:"bench_cpu_seconds"`
	Seconds         float64 `json:"seconds"`
	// OtherCPUCores is the CPU time other processes used during the
	// scenario, in cores (machine busy time minus server and bench, per
	// second of wall time): the noise in the figures.
	OtherCPUCores float64    `json:"other_cpu_cores"`
	LoadStart     [3]float64 `json:"loadavg_start"`
	LoadEnd       [3]float64 `json:"loadavg_end"`
	Figures       []Figure   `json:"figures,omitempty"`
	Budget        []Check    `json:"budget,omitempty"`
}

// PhaseResult is one measured stretch of a scenario.
type PhaseResult struct {
	Name string `json:"name,omitempty"`
	// Events is the number of events accepted (202) and EventsPerSec their
	// rate from the first publish request to the last answer.
	Events         int64   `json:"events"`
	EventsPerSec   float64 `json:"events_per_sec"`
	PublishSeconds float64 `json:"publish_seconds"`
	// Deliveries is the number of distinct (endpoint, event) receipts
	// counted, of Expected; DeliveriesPerSec their rate from the first
	// publish request to the last receipt.
	Deliveries       int64   `json:"deliveries"`
	Expected         int64   `json:"expected"`
	DeliveriesPerSec float64 `json:"deliveries_per_sec"`
	DeliverSeconds   float64 `json:"deliver_seconds"`
	// Duplicates are receipts of an event the endpoint already had.
	Duplicates int64   `json:"duplicates"`
	Latency    Latency `json:"latency"`
	// PeakRSSMiB is the largest server VmRSS sampled during the phase.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// CPUSeconds is the server's CPU time during the phase; CPUPer1000 the
	// same per 1,000 deliveries counted.
	CPUSeconds float64 `json:"server_cpu_seconds"`
	CPUPer1000 float64 `json:"server_cpu_seconds_per_1000"`
	// SettleSeconds is how long after the last receipt the server still
	// listed a pending delivery (its outcomes being committed).
	SettleSeconds float64 `json:"settle_seconds,omitempty"`
	// Load1 is the machine's 1-minute load average when the phase began.
	Load1 float64 `json:"loadavg1"`
}

// Figure is a scenario-specific measurement.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// Check is one line of the performance budget (docs/benchmarks.md) against
// its measurement.
type Check struct {
	Line     string `json:"line"`
	Budget   string `json:"budget"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
	// NotMeasured: what the line compares with was not measured in this
	// run (Measured says why); the line is neither met nor missed.
	NotMeasured bool `json:"not_measured,omitempty"`
}

func (r *Result) figure(name string, v float64, unit string) {
	r.Figures = append(r.Figures, Figure{name, v, unit})
}

func (r *Result) check(line, budget, measured string, met bool) {
	r.Budget = append(r.Budget, Check{Line: line, Budget: budget, Measured: measured, Met: met})
}

// OK reports whether every scenario finished.
func (rep *Report) OK() bool {
	for _, r := range rep.Results {
		if !r.OK {
			return false
		}
	}
	return true
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable writes the report for a terminal: one row per scenario phase,
// then each scenario's figures, budget lines and errors.
func (rep *Report) WriteTable(w io.Writer) error {
	m := rep.Machine
	fmt.Fprintf(w, "herald bench — %d CPUs, %s MiB, %s, %s %s\n\n", m.CPUs, thousands(float64(m.MemoryMiB)), m.GoVersion, m.OS, m.Kernel)
	width := len("scenario")
	for _, r := range rep.Results {
		width = max(width, len(r.label("", rep.Runs)))
		for _, p := range r.Phases {
			width = max(width, len(r.label(p.Name, rep.Runs)))
		}
	}
	left := func(s string) string { return s + strings.Repeat(" ", max(width-len(s), 0)) }
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, left("scenario")+"\tevents/s\tdeliveries\tdeliveries/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tRSS MiB\tCPU s/1k\tload\t")
	for _, r := range rep.Results {
		if len(r.Phases) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%s\t-\t%.2f\t\n", left(r.label("", rep.Runs)), mibCell(r.PeakRSSMiB), r.LoadStart[0])
		}
		for _, p := range r.Phases {
			name := r.label(p.Name, rep.Runs)
			evs := "-"
			if p.Events > 0 {
				evs = thousands(p.EventsPerSec)
			}
			dels := thousands(float64(p.Deliveries))
			if p.Deliveries != p.Expected {
				dels += "/" + thousands(float64(p.Expected))
			}
			rate := "-"
			if p.DeliveriesPerSec > 0 {
				rate = thousands(p.DeliveriesPerSec)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t\n", left(name), evs, dels, rate,
				msCell(p.Latency.P50ms), msCell(p.Latency.P90ms), msCell(p.Latency.P99ms), msCell(p.Latency.MaxMs),
				mibCell(p.PeakRSSMiB), cpuCell(p.CPUPer1000), p.Load1)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Results {
		fmt.Fprintf(w, "\n%s: ", r.label("", rep.Runs))
		if r.OK {
			fmt.Fprintf(w, "ok in %.1fs", r.Seconds)
		} else {
			fmt.Fprintf(w, "FAILED after %.1fs", r.Seconds)
		}
		fmt.Fprintf(w, "; server peak RSS %.0f MiB, server CPU %.1fs, bench CPU %.1fs, other processes %.2f cores, load %.2f → %.2f\n",
			r.PeakRSSMiB, r.CPUSeconds, r.BenchCPUSeconds, r.OtherCPUCores, r.LoadStart[0], r.LoadEnd[0])
		if r.Target != targetBaseline && (len(r.ServeFlags) > 0 || len(r.ServeEnv) > 0) {
			fmt.Fprintf(w, "  %s\n", strings.TrimSpace(strings.Join(r.ServeEnv, " ")+" herald serve "+strings.Join(r.ServeFlags, " ")))
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, f := range r.Figures {
			fmt.Fprintf(w, "  %s: %s %s\n", f.Name, formatValue(f.Value), f.Unit)
		}
		for _, c := range r.Budget {
			verdict := "MET"
			switch {
			case c.NotMeasured:
				verdict = "NOT MEASURED"
			case !c.Met:
				verdict = "MISSED"
			}
			fmt.Fprintf(w, "  budget %s: %s — %s: %s\n", verdict, c.Line, c.Budget, c.Measured)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", strings.ReplaceAll(r.Error, "\n", "\n    "))
		}
	}
	return rep.writeComparisons(w)
}

// thousands formats v rounded to an integer with comma separators.
func thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	n := int64(math.Round(v))
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return thousands(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func msCell(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return thousands(v)
}

func mibCell(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func cpuCell(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// fmtMs formats a duration in milliseconds.
func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(ms(d), 'f', 1, 64) + " ms"
}
