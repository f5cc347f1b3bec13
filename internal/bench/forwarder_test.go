package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forwarderChildEnv makes this test binary run as the baseline forwarder
// (what `herald-bench forwarder` runs), for the tests that start it as a
// child process the way the bench does.
const forwarderChildEnv = "HERALD_BENCH_TEST_FORWARDER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(forwarderChildEnv) == "1" {
		fs := flag.NewFlagSet("forwarder", flag.ContinueOnError)
		o := ForwarderFlags(fs)
		if err := fs.Parse(os.Args[1:]); err != nil {
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := RunForwarder(ctx, *o, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startTestForwarder serves a Forwarder on 127.0.0.1 in this process.
func startTestForwarder(t *testing.T) (*Forwarder, *client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := NewForwarder(DefaultForwarderOptions())
	srv := &http.Server{Handler: f}
	go func() { _ = srv.Serve(ln) }()
	c := newClient("http://"+ln.Addr().String(), "ignored", 8)
	t.Cleanup(func() {
		c.close()
		_ = srv.Close()
		f.Close()
	})
	return f, c
}

// waitCounted waits (polling, bounded) until every track has counted want
// events.
func waitCounted(t *testing.T, want map[*track]int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for tr, n := range want {
			if tr.unique.Load() < n {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			for tr, n := range want {
				t.Errorf("%s: counted %d of %d", tr.prefix, tr.unique.Load(), n)
			}
			t.FailNow()
		}
		<-tick.C
	}
}

// TestForwarderDeliversByType: the forwarder delivers every event of a
// steady-batch-shaped load (batches) and of a steady-single-shaped one (one
// event a request) to the receivers subscribed to its type, and to them
// only; the receivers count the forwarder's pushes by id, with latencies.
func TestForwarderDeliversByType(t *testing.T) {
	f, c := startTestForwarder(t)
	ctx := context.Background()
	const types = 3
	rs := make([]*Receiver, types)
	for k := range rs {
		r, err := startReceiver(fmt.Sprintf("/hook/%d", k), false)
		if err != nil {
			t.Fatal(err)
		}
		defer r.close()
		rs[k] = r
		if _, err := c.createSubscription(ctx, subscription{Name: fmt.Sprint(k), URL: r.URL, EventTypes: []string{typeName(k)}}); err != nil {
			t.Fatal(err)
		}
	}
	// One more receiver takes types 0 and 2: those events go to two.
	both, err := startReceiver("/hook/both", false)
	if err != nil {
		t.Fatal(err)
	}
	defer both.close()
	if _, err := c.createSubscription(ctx, subscription{Name: "both", URL: both.URL, EventTypes: []string{typeName(0), typeName(2)}}); err != nil {
		t.Fatal(err)
	}

	for _, shape := range []struct {
		name              string
		events, batch, np int
	}{{"batch", 900, 50, 3}, {"single", 150, 1, 8}} {
		l := &load{prefix: prefix("fwd", shape.name), events: shape.events, batch: shape.batch, publishers: shape.np, data: eventData(200),
			typeOf: func(n int) string { return typeName(n % types) }}
		lats := map[*Receiver]*recorder{}
		want := map[*track]int64{}
		tracks := map[*Receiver]*track{}
		for k, r := range rs {
			lats[r] = &recorder{}
			tracks[r] = newTrack(l.prefix, false, l.events, lats[r])
			want[tracks[r]] = int64(count(l.events, func(n int) bool { return n%types == k }))
			r.setTrack(tracks[r])
		}
		lats[both] = &recorder{}
		tracks[both] = newTrack(l.prefix, false, l.events, lats[both])
		want[tracks[both]] = int64(count(l.events, func(n int) bool { return n%types != 1 }))
		both.setTrack(tracks[both])

		res, err := l.run(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", shape.name, err)
		}
		var wantDels int64
		for _, n := range want {
			wantDels += n
		}
		if res.Accepted != int64(shape.events) || res.Deliveries != wantDels {
			t.Errorf("%s: accepted %d, deliveries answered %d; want %d and %d", shape.name, res.Accepted, res.Deliveries, shape.events, wantDels)
		}
		waitCounted(t, want)
		for k, r := range rs {
			tr := tracks[r]
			// Every event of the receiver's type, each once, none other.
			for n := range l.events {
				got := tr.seen[n/64]&(1<<(n%64)) != 0
				if got != (n%types == k) {
					t.Fatalf("%s: receiver %d, event %d: received %v", shape.name, k, n, got)
				}
			}
			if tr.dups.Load() != 0 || r.stale.Load() != 0 {
				t.Errorf("%s: receiver %d: %d duplicates, %d stale", shape.name, k, tr.dups.Load(), r.stale.Load())
			}
			if n := lats[r].summary().Count; n != want[tr] {
				t.Errorf("%s: receiver %d: %d latencies, want %d (benchsent kept)", shape.name, k, n, want[tr])
			}
		}
		if got := tracks[both].unique.Load(); got != want[tracks[both]] {
			t.Errorf("%s: the two-type receiver counted %d, want %d", shape.name, got, want[tracks[both]])
		}
	}
	// The receivers count before their answers reach the forwarder.
	st := f.Stats()
	for deadline := time.Now().Add(10 * time.Second); st.Sent+st.Failed < st.Queued && time.Now().Before(deadline); st = f.Stats() {
		time.Sleep(time.Millisecond)
	}
	if st.Accepted != 1050 || st.Failed != 0 || st.Sent != st.Queued || st.Routes != 4 {
		t.Errorf("stats %+v", st)
	}
	if got, err := c.forwarderStats(ctx); err != nil || got != f.Stats() {
		t.Errorf("GET /forwarder/stats: %+v, %v", got, err)
	}
}

// TestForwarderRefuses: what the forwarder does not do is refused, not
// ignored; an event of no routed type is accepted with no delivery.
func TestForwarderRefuses(t *testing.T) {
	_, c := startTestForwarder(t)
	ctx := context.Background()
	for _, sub := range []subscription{
		{Name: "retry", URL: "http://127.0.0.1:1/x", EventTypes: []string{"a"}, RetryPolicy: json.RawMessage(quickRetry)},
		{Name: "pull", DeliveryMode: "pull", EventTypes: []string{"a"}},
		{Name: "filters", URL: "http://127.0.0.1:1/x", EventTypes: []string{"a"}, AdvancedFilters: json.RawMessage(`[]`)},
		{Name: "batch", URL: "http://127.0.0.1:1/x", EventTypes: []string{"a"}, MaxEventsPerBatch: 10},
		{Name: "no types", URL: "http://127.0.0.1:1/x"},
	} {
		if _, err := c.createSubscription(ctx, sub); err == nil || !strings.Contains(err.Error(), "400") {
			t.Errorf("subscription %s: %v, want refused with 400", sub.Name, err)
		}
	}
	code, body, err := c.do(ctx, http.MethodPost, "/v1/events", "application/cloudevents+json", []byte(`{"id":"x","type":"nobody"}`))
	if err != nil || code != http.StatusAccepted || !bytes.Contains(body, []byte(`"deliveries":0`)) {
		t.Errorf("unrouted event: %d %s %v", code, body, err)
	}
	code, _, err = c.do(ctx, http.MethodPost, "/v1/events", "application/cloudevents-batch+json", []byte(`{"not":"an array"}`))
	if err != nil || code != http.StatusBadRequest {
		t.Errorf("a batch that is not an array: %d %v", code, err)
	}
	code, _, err = c.do(ctx, http.MethodPost, "/v1/events", "application/cloudevents+json", []byte(`{"id":`))
	if err != nil || code != http.StatusBadRequest {
		t.Errorf("bad JSON: %d %v", code, err)
	}
}

func TestForwarderOptions(t *testing.T) {
	if err := DefaultForwarderOptions().Check(); err != nil || DefaultForwarderOptions().Workers != 16 {
		t.Errorf("defaults: %+v, %v", DefaultForwarderOptions(), err)
	}
	for _, tt := range []struct {
		set  func(*ForwarderOptions)
		want string
	}{
		{func(o *ForwarderOptions) { o.Listen = "nocolon" }, "--listen"},
		{func(o *ForwarderOptions) { o.Workers = 0 }, "--workers"},
		{func(o *ForwarderOptions) { o.Queue = 0 }, "--queue"},
		{func(o *ForwarderOptions) { o.Timeout = time.Millisecond }, "--timeout"},
	} {
		o := DefaultForwarderOptions()
		tt.set(&o)
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v", tt.want, err)
		}
	}
}

// testForwarderConfig is a Config whose forwarder is this test binary run
// as a child (TestMain).
func testForwarderConfig(t *testing.T) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(forwarderChildEnv, "1")
	s := DefaultSizes()
	s.Endpoints, s.Events, s.Batch, s.Publishers = 3, 1200, 40, 2
	s.SingleEvents, s.SinglePubs = 300, 6
	s.FanoutEvents, s.Fanout = 200, 4
	return Config{Forwarder: []string{exe}, Sizes: s, TempDir: t.TempDir(), Timeout: time.Minute}
}

// TestBaselineScenariosOnForwarderChild runs steady-batch, steady-single
// and fanout on the forwarder started as a child process, as --baseline
// does: every delivery arrives, counted by id, and the forwarder's CPU and
// memory are read from its /proc entry.
func TestBaselineScenariosOnForwarderChild(t *testing.T) {
	cfg := testForwarderConfig(t)
	s := cfg.Sizes
	for _, tt := range []struct {
		name string
		want int64
	}{{"steady-batch", int64(s.Events)}, {"steady-single", int64(s.SingleEvents)}, {"fanout", int64(s.FanoutEvents * s.Fanout)}} {
		res, _ := runScenario(context.Background(), &cfg, tt.name, targetBaseline, 1, newProgress(nil, false))
		if !res.OK || len(res.Phases) != 1 {
			t.Fatalf("%s: %+v", tt.name, res)
		}
		p := res.Phases[0]
		if p.Deliveries != tt.want || p.Expected != tt.want || p.Duplicates != 0 || p.Latency.Count != tt.want || p.DeliveriesPerSec <= 0 {
			t.Errorf("%s: deliveries %d/%d, duplicates %d, latencies %d, %.0f/s; want %d", tt.name, p.Deliveries, p.Expected, p.Duplicates, p.Latency.Count, p.DeliveriesPerSec, tt.want)
		}
		f := map[string]float64{}
		for _, x := range res.Figures {
			f[x.Name] = x.Value
		}
		if f["forwarder: POSTs answered 2xx"] != float64(tt.want) || f["forwarder: POSTs failed (dropped: no retries)"] != 0 {
			t.Errorf("%s: figures %v", tt.name, f)
		}
		if len(res.Budget) != 0 {
			t.Errorf("%s: the baseline got budget lines: %+v", tt.name, res.Budget)
		}
		if res.Target != targetBaseline || res.PeakRSSMiB <= 0 {
			t.Errorf("%s: target %q, peak RSS %.1f MiB", tt.name, res.Target, res.PeakRSSMiB)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(cfg.TempDir, "herald-bench-*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}

// TestUUIDIDsCounted: with --uuid-ids, the load's events carry UUIDv4 ids
// and the receivers still count every one of them, once.
func TestUUIDIDsCounted(t *testing.T) {
	cfg := testForwarderConfig(t)
	cfg.Sizes.UUIDIDs = true
	res, _ := runScenario(context.Background(), &cfg, "steady-batch", targetBaseline, 1, newProgress(nil, false))
	if !res.OK || len(res.Phases) != 1 {
		t.Fatalf("%+v", res)
	}
	want := int64(cfg.Sizes.Events)
	if p := res.Phases[0]; p.Deliveries != want || p.Duplicates != 0 || p.Latency.Count != want {
		t.Errorf("deliveries %d, duplicates %d, latencies %d; want %d", p.Deliveries, p.Duplicates, p.Latency.Count, want)
	}
}

// TestBaselineForwarderDrops: a failed POST is not retried, and the phase
// says so instead of waiting for its deadline.
func TestBaselineForwarderDrops(t *testing.T) {
	cfg := testForwarderConfig(t)
	cfg.Sizes.Events, cfg.Sizes.Endpoints = 200, 2
	e := newEnv(&cfg, "steady-batch", true, t.TempDir(), newProgress(nil, false))
	defer e.close()
	if _, err := e.serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs, err := e.endpoints(context.Background(), "ep", 2, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	rs[1].mode.Store(modeFail)
	l := &load{prefix: prefix(e.name, "drop"), events: 200, batch: 20, publishers: 2, data: eventData(10)}
	p, _ := spread("", l, rs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = e.run(ctx, p)
	if err == nil || !strings.Contains(err.Error(), "dropped") || ctx.Err() != nil {
		t.Errorf("run: %v (ctx %v); want the forwarder's drops reported", err, ctx.Err())
	}
}

func rowsResult(scenario, target string, run int, ok bool, rate, cpu float64) Result {
	r := Result{Scenario: scenario, Target: target, Run: run, OK: ok}
	if ok {
		r.Phases = []PhaseResult{{DeliveriesPerSec: rate, CPUPer1000: cpu}}
	}
	return r
}

// TestCompareBaseline: each pair's ratios are Herald's row divided by the
// baseline's, the second-stage bar is checked on Herald's result, and the
// medians are the rows' medians.
func TestCompareBaseline(t *testing.T) {
	rep := &Report{Runs: 3, Baseline: true, Results: []Result{
		rowsResult("steady-batch", targetHerald, 1, true, 7000, 0.19),
		rowsResult("steady-batch", targetBaseline, 1, true, 10000, 0.07),
		rowsResult("steady-single", targetHerald, 1, true, 5000, 0.22),
		rowsResult("steady-single", targetBaseline, 1, true, 8000, 0.10),
		rowsResult("pull", targetHerald, 1, true, 9000, 0.1),
		rowsResult("steady-batch", targetHerald, 2, true, 5000, 0.21),
		rowsResult("steady-batch", targetBaseline, 2, true, 10000, 0.08),
		rowsResult("steady-single", targetHerald, 2, false, 0, 0),
		rowsResult("steady-single", targetBaseline, 2, true, 8000, 0.10),
		rowsResult("steady-batch", targetHerald, 3, true, 6600, 0.20),
		rowsResult("steady-batch", targetBaseline, 3, true, 11000, 0.075),
	}}
	compareBaseline(rep, false)
	if len(rep.Comparisons) != 5 {
		t.Fatalf("comparisons: %+v", rep.Comparisons)
	}
	herald, batchRatios := checkComparisons(t, rep)
	if r := herald[[2]any{"steady-single", 2}]; len(r.Budget) != 1 || !r.Budget[0].NotMeasured {
		t.Errorf("failed Herald run: budget %+v", r.Budget)
	}
	if r := herald[[2]any{"pull", 1}]; len(r.Budget) != 0 {
		t.Errorf("pull got a baseline line: %+v", r.Budget)
	}
	// Medians: steady-batch over 3 pairs; steady-single has one measured
	// pair, so none.
	if len(rep.Medians) != 1 || rep.Medians[0].Scenario != "steady-batch" || rep.Medians[0].Pairs != 3 ||
		!near(rep.Medians[0].DeliveriesRatio, median(batchRatios)) || rep.Medians[0].HeraldDeliveriesPerSec != 6600 {
		t.Errorf("medians %+v (ratios %v)", rep.Medians, batchRatios)
	}
	checkComparisonOutput(t, rep)
	checkCompareBaselineOnPostgres(t)
}

// near reports whether a and b are equal but for rounding.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// checkComparisons checks each of rep's comparisons against its rows:
// Herald's figures divided by the baseline's (none when Herald's run
// failed), and the budget line on Herald's result met as the ratio meets
// the bar. It returns Herald's results by (scenario, run) and the
// steady-batch ratios.
func checkComparisons(t *testing.T, rep *Report) (herald map[[2]any]*Result, batchRatios []float64) {
	t.Helper()
	herald = map[[2]any]*Result{}
	base := map[[2]any]*Result{}
	for i := range rep.Results {
		r := &rep.Results[i]
		k := [2]any{r.Scenario, r.Run}
		if r.Target == targetBaseline {
			base[k] = r
		} else {
			herald[k] = r
		}
	}
	for _, c := range rep.Comparisons {
		k := [2]any{c.Scenario, c.Run}
		h, b := herald[k], base[k]
		if !h.OK {
			if c.NotMeasured == "" || c.DeliveriesRatio != 0 {
				t.Errorf("%v: Herald failed, comparison %+v", k, c)
			}
			continue
		}
		hp, bp := h.Phases[0], b.Phases[0]
		if c.HeraldDeliveriesPerSec != hp.DeliveriesPerSec || c.BaselineDeliveriesPerSec != bp.DeliveriesPerSec ||
			!near(c.DeliveriesRatio, hp.DeliveriesPerSec/bp.DeliveriesPerSec) || !near(c.CPURatio, hp.CPUPer1000/bp.CPUPer1000) {
			t.Errorf("%v: %+v from rows %+v and %+v", k, c, hp, bp)
		}
		if c.Scenario == "steady-batch" {
			batchRatios = append(batchRatios, c.DeliveriesRatio)
		}
		// The bar, on Herald's result.
		bar := map[string]float64{"steady-batch": budgetVsBaselineBatch, "steady-single": budgetVsBaselineSingle}[c.Scenario]
		var line *Check
		for i := range h.Budget {
			if strings.Contains(h.Budget[i].Line, "baseline") {
				line = &h.Budget[i]
			}
		}
		if line == nil || line.Met != (c.DeliveriesRatio >= bar) || !strings.Contains(line.Measured, fmt.Sprintf("%.2f×", c.DeliveriesRatio)) {
			t.Errorf("%v: budget line %+v for ratio %.3f against %.1f", k, line, c.DeliveriesRatio, bar)
		}
	}
	return herald, batchRatios
}

// checkComparisonOutput checks that the table and the JSON of
// TestCompareBaseline's report show the comparisons, the medians and the
// budget line.
func checkComparisonOutput(t *testing.T, rep *Report) {
	t.Helper()
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	flat := squeeze(out.String())
	for _, want := range []string{
		"steady-batch (baseline) #2",
		"Herald vs. the baseline forwarder",
		"steady-batch 1 7,000 10,000 0.70× 0.190 0.070 2.71×",
		"steady-single 2 - - - - - - Herald's run did not finish",
		"steady-batch median of 3 6,600 10,000 0.60×",
		"budget MISSED: Herald's deliveries/s vs. the baseline forwarder's, 100 events a request, embedded store — ≥ 0.6× the baseline's: 0.50× (5,000/s vs. 10,000/s)",
	} {
		if !strings.Contains(flat, squeeze(want)) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"baseline_comparisons"`, `"deliveries_per_sec_ratio": 0.7`, `"baseline_median"`, `"target": "baseline"`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
}

// checkCompareBaselineOnPostgres: on PostgreSQL, steady-batch is held to
// 0.5 and steady-single has no line.
func checkCompareBaselineOnPostgres(t *testing.T) {
	t.Helper()
	pg := &Report{Results: []Result{
		rowsResult("steady-batch", targetHerald, 1, true, 5500, 0.1), rowsResult("steady-batch", targetBaseline, 1, true, 10000, 0.05),
		rowsResult("steady-single", targetHerald, 1, true, 3000, 0.1), rowsResult("steady-single", targetBaseline, 1, true, 8000, 0.05),
	}}
	compareBaseline(pg, true)
	if b := pg.Results[0].Budget; len(b) != 1 || !b[0].Met || !strings.Contains(b[0].Line, "PostgreSQL") || !strings.Contains(b[0].Budget, "0.5×") {
		t.Errorf("PostgreSQL steady-batch: %+v", b)
	}
	if b := pg.Results[2].Budget; len(b) != 0 {
		t.Errorf("PostgreSQL steady-single: %+v", b)
	}
}

func squeeze(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

func TestComparePullPushByRun(t *testing.T) {
	rs := []Result{
		rowsResult("steady-batch", targetHerald, 1, true, 10000, 0),
		rowsResult("steady-batch", targetBaseline, 1, true, 30000, 0),
		rowsResult("pull", targetHerald, 1, true, 12000, 0),
		rowsResult("steady-batch", targetHerald, 2, true, 6000, 0),
		rowsResult("pull", targetHerald, 2, true, 12000, 0),
	}
	comparePullPush(rs, false)
	if b := rs[2].Budget; len(b) != 1 || !strings.Contains(b[0].Measured, "12,000/s vs. 10,000/s") {
		t.Errorf("run 1: %+v", b)
	}
	if b := rs[4].Budget; len(b) != 1 || !strings.Contains(b[0].Measured, "12,000/s vs. 6,000/s") {
		t.Errorf("run 2: %+v", b)
	}
}

func TestRunsChecked(t *testing.T) {
	exe, _ := os.Executable()
	for _, runs := range []int{-1, maxRuns + 1} {
		if _, err := Run(context.Background(), Config{Herald: exe, Sizes: DefaultSizes(), Runs: runs}); err == nil || !strings.Contains(err.Error(), "--runs") {
			t.Errorf("Runs %d: %v", runs, err)
		}
	}
}
