package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// What a scenario runs against (Result.Target).
const (
	targetHerald   = "herald"   // herald serve
	targetBaseline = "baseline" // the baseline forwarder (forwarder.go)
)

// maxRuns bounds Config.Runs (--runs).
const maxRuns = 100

// forwarderCheckEvery is how often a phase on the forwarder asks it whether
// a POST failed.
const forwarderCheckEvery = time.Second

// baselineScenarios are the scenarios --baseline also runs on the
// forwarder: those whose subscriptions are a URL and event types only and
// which read nothing from the server but its publish answers. The others
// (retry policies, black holes, pull, batches, filters, a store) ask for
// what the forwarder does not do, and run on Herald alone.
var baselineScenarios = map[string]bool{
	"steady-batch":  true,
	"steady-single": true,
	"latency":       true,
	"fanout":        true,
}

// baselineList names the scenarios that have a baseline, in Scenarios'
// order.
func baselineList() string {
	var out []string
	for _, s := range Scenarios {
		if baselineScenarios[s] {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ") + " only"
}

// The second-stage bar (Herald's deliveries/s against the baseline
// forwarder's, same load, same machine, same invocation).
const (
	budgetVsBaselineBatch    = 0.6 // steady-batch, SQLite
	budgetVsBaselineSingle   = 0.7 // steady-single, SQLite
	budgetVsBaselinePostgres = 0.5 // steady-batch, PostgreSQL
)

// baselineBar returns the second-stage bar's line for a scenario, or ok
// false when the scenario has none on this store.
func baselineBar(scenario string, postgres bool) (line string, bar float64, ok bool) {
	switch {
	case scenario == "steady-batch" && postgres:
		return "Herald's deliveries/s vs. the baseline forwarder's, 100 events a request, PostgreSQL store", budgetVsBaselinePostgres, true
	case scenario == "steady-batch":
		return "Herald's deliveries/s vs. the baseline forwarder's, 100 events a request, embedded store", budgetVsBaselineBatch, true
	case scenario == "steady-single" && !postgres:
		return "Herald's deliveries/s vs. the baseline forwarder's, one event a request, embedded store", budgetVsBaselineSingle, true
	}
	return "", 0, false
}

// Comparison is one herald/baseline pair: the same scenario, the same load,
// run back to back. The ratios are Herald's figure divided by the
// forwarder's: deliveries/s (higher is better for Herald, 1 is parity) and
// server CPU per delivery (lower is better, 1 is parity).
type Comparison struct {
	Scenario                 string  `json:"scenario"`
	Run                      int     `json:"run,omitempty"` // 0 in baseline_median
	HeraldDeliveriesPerSec   float64 `json:"herald_deliveries_per_sec"`
	BaselineDeliveriesPerSec float64 `json:"baseline_deliveries_per_sec"`
	DeliveriesRatio          float64 `json:"deliveries_per_sec_ratio"`
	HeraldCPUPer1000         float64 `json:"herald_server_cpu_seconds_per_1000"`
	BaselineCPUPer1000       float64 `json:"baseline_server_cpu_seconds_per_1000"`
	CPURatio                 float64 `json:"server_cpu_per_delivery_ratio"`
	// NotMeasured says why there are no ratios (one of the two did not
	// finish).
	NotMeasured string `json:"not_measured,omitempty"`
	// Pairs is, in baseline_median, how many pairs the medians are of.
	Pairs int `json:"pairs,omitempty"`
}

// compareBaseline pairs each baseline result with the Herald result of the
// same scenario and run, adds the comparisons (and, over several runs, their
// medians) to the report, and gives the Herald result its second-stage
// budget line where the scenario has one.
func compareBaseline(rep *Report, postgres bool) {
	rep.Comparisons, rep.Medians = nil, nil
	for i := range rep.Results {
		b := &rep.Results[i]
		if b.Target != targetBaseline {
			continue
		}
		var h *Result
		for j := range rep.Results {
			r := &rep.Results[j]
			if r.Target != targetBaseline && r.Scenario == b.Scenario && r.Run == b.Run {
				h = r
				break
			}
		}
		c := Comparison{Scenario: b.Scenario, Run: b.Run}
		switch {
		case h == nil:
			c.NotMeasured = "no Herald run to compare with"
		case !h.OK || len(h.Phases) == 0 || h.Phases[0].DeliveriesPerSec <= 0:
			c.NotMeasured = "Herald's run did not finish"
		case !b.OK || len(b.Phases) == 0 || b.Phases[0].DeliveriesPerSec <= 0:
			c.NotMeasured = "the baseline's run did not finish"
		}
		if c.NotMeasured == "" {
			hp, bp := h.Phases[0], b.Phases[0]
			c.HeraldDeliveriesPerSec, c.BaselineDeliveriesPerSec = hp.DeliveriesPerSec, bp.DeliveriesPerSec
			c.DeliveriesRatio = hp.DeliveriesPerSec / bp.DeliveriesPerSec
			c.HeraldCPUPer1000, c.BaselineCPUPer1000 = hp.CPUPer1000, bp.CPUPer1000
			if bp.CPUPer1000 > 0 {
				c.CPURatio = hp.CPUPer1000 / bp.CPUPer1000
			}
		}
		rep.Comparisons = append(rep.Comparisons, c)
		if h == nil {
			continue
		}
		if line, bar, ok := baselineBar(b.Scenario, postgres); ok {
			budget := fmt.Sprintf("≥ %.1f× the baseline's", bar)
			if c.NotMeasured != "" {
				h.Budget = append(h.Budget, Check{Line: line, Budget: budget, NotMeasured: true, Measured: "not measured: " + c.NotMeasured})
			} else {
				h.check(line, budget, fmt.Sprintf("%.2f× (%s/s vs. %s/s)", c.DeliveriesRatio,
					thousands(c.HeraldDeliveriesPerSec), thousands(c.BaselineDeliveriesPerSec)), c.DeliveriesRatio >= bar)
			}
		}
	}
	// Medians over the runs, scenario by scenario, of the measured pairs.
	var order []string
	by := map[string][]Comparison{}
	for _, c := range rep.Comparisons {
		if c.NotMeasured != "" {
			continue
		}
		if by[c.Scenario] == nil {
			order = append(order, c.Scenario)
		}
		by[c.Scenario] = append(by[c.Scenario], c)
	}
	for _, s := range order {
		cs := by[s]
		if len(cs) < 2 {
			continue
		}
		med := func(f func(Comparison) float64) float64 {
			v := make([]float64, len(cs))
			for i, c := range cs {
				v[i] = f(c)
			}
			return median(v)
		}
		rep.Medians = append(rep.Medians, Comparison{
			Scenario:                 s,
			Pairs:                    len(cs),
			HeraldDeliveriesPerSec:   med(func(c Comparison) float64 { return c.HeraldDeliveriesPerSec }),
			BaselineDeliveriesPerSec: med(func(c Comparison) float64 { return c.BaselineDeliveriesPerSec }),
			DeliveriesRatio:          med(func(c Comparison) float64 { return c.DeliveriesRatio }),
			HeraldCPUPer1000:         med(func(c Comparison) float64 { return c.HeraldCPUPer1000 }),
			BaselineCPUPer1000:       med(func(c Comparison) float64 { return c.BaselineCPUPer1000 }),
			CPURatio:                 med(func(c Comparison) float64 { return c.CPURatio }),
		})
	}
}

// median returns the median of v (the mean of the middle two for an even
// count), sorting v.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// writeComparisons writes the herald/baseline section of the table.
func (rep *Report) writeComparisons(w io.Writer) error {
	if len(rep.Comparisons) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nHerald vs. the baseline forwarder (same load, run back to back; ratio = Herald ÷ baseline):\n")
	width := len("scenario")
	for _, c := range rep.Comparisons {
		width = max(width, len(c.Scenario))
	}
	left := func(s string) string { return "  " + s + strings.Repeat(" ", max(width-len(s), 0)) }
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, left("scenario")+"\trun\therald deliveries/s\tbaseline deliveries/s\tratio\therald CPU s/1k\tbaseline CPU s/1k\tratio\t")
	row := func(c Comparison, run string) {
		if c.NotMeasured != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t  %s\n", left(c.Scenario), run, c.NotMeasured)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", left(c.Scenario), run,
			thousands(c.HeraldDeliveriesPerSec), thousands(c.BaselineDeliveriesPerSec), ratioCell(c.DeliveriesRatio),
			cpuCell(c.HeraldCPUPer1000), cpuCell(c.BaselineCPUPer1000), ratioCell(c.CPURatio))
	}
	for _, c := range rep.Comparisons {
		row(c, fmt.Sprint(c.Run))
	}
	for _, c := range rep.Medians {
		row(c, fmt.Sprintf("median of %d", c.Pairs))
	}
	return tw.Flush()
}

func ratioCell(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", v)
}

// label names a result (and one of its phases) in the table: the scenario,
// "(baseline)" for the forwarder's run, and the run's number when there
// are several.
func (r *Result) label(phase string, runs int) string {
	s := r.Scenario
	if phase != "" {
		s += "/" + phase
	}
	if r.Target == targetBaseline {
		s += " (baseline)"
	}
	if runs > 1 && r.Run > 0 {
		s += fmt.Sprintf(" #%d", r.Run)
	}
	return s
}

// forwarderFigures adds the forwarder's counters to a baseline result.
func (e *env) forwarderFigures(res *Result) {
	if e.srv == nil || !e.srv.alive() || e.api == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A receiver counts an event before its answer reaches the forwarder:
	// wait (briefly) for the POSTs in flight to be answered.
	var st ForwarderStats
	for deadline := time.Now().Add(2 * time.Second); ; {
		var err error
		if st, err = e.api.forwarderStats(ctx); err != nil {
			return
		}
		if st.Sent+st.Failed >= st.Queued || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	res.figure("forwarder: events decoded", float64(st.Accepted), "")
	res.figure("forwarder: POSTs answered 2xx", float64(st.Sent), "")
	res.figure("forwarder: POSTs failed (dropped: no retries)", float64(st.Failed), "")
}
