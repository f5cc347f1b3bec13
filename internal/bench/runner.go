package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// Bounds of the waits between phases.
const (
	pollEvery     = 20 * time.Millisecond  // receipt counts
	pendingEvery  = 100 * time.Millisecond // GET /v1/deliveries?status=pending
	sampleEvery   = 250 * time.Millisecond // server RSS
	stallAfterPub = 15 * time.Second       // backlog: no new first attempt for this long ends the wait
)

// Run runs cfg's scenarios one after another, each against its own server,
// and returns the report. It fails only on a bad configuration; a scenario
// that fails is reported as such and the next one runs.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Herald == "" {
		return nil, errors.New("no herald binary")
	}
	if _, err := os.Stat(cfg.Herald); err != nil {
		return nil, fmt.Errorf("herald binary: %w", err)
	}
	if err := cfg.Sizes.check(); err != nil {
		return nil, err
	}
	if cfg.Runs < 0 || cfg.Runs > maxRuns {
		return nil, fmt.Errorf("--runs %d: must be from 1 to %d", cfg.Runs, maxRuns)
	}
	if len(cfg.Scenarios) == 0 {
		cfg.Scenarios = AllScenarios()
	}
	for _, s := range cfg.Scenarios {
		if scenarioFuncs[s] == nil {
			return nil, fmt.Errorf("unknown scenario %q", s)
		}
	}
	runs := max(cfg.Runs, 1)
	if cfg.Baseline && len(cfg.Forwarder) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("the baseline forwarder's binary: %w", err)
		}
		cfg.Forwarder = []string{exe, ForwarderCommand}
	}
	rep := &Report{Machine: machine(), Herald: cfg.Herald, Sizes: cfg.Sizes, Started: time.Now().UTC(), Runs: runs, Baseline: cfg.Baseline}
	prog := newProgress(cfg.Progress, cfg.ProgressTTY)
	defer prog.stop()
	// Run after run, each scenario on Herald and, with Baseline, at once
	// on the forwarder with the same load: the pairs alternate, so that the
	// machine's drift over the invocation hits both alike.
	for run := 1; run <= runs; run++ {
		for _, name := range cfg.Scenarios {
			targets := []string{targetHerald}
			if cfg.Baseline && baselineScenarios[name] {
				targets = append(targets, targetBaseline)
			}
			for _, target := range targets {
				if ctx.Err() != nil {
					rep.Results = append(rep.Results, Result{Scenario: name, Target: target, Run: run, Error: "not run: " + ctx.Err().Error()})
					continue
				}
				res, refused := runScenario(ctx, &cfg, name, target, run, prog)
				if refused != nil {
					return nil, fmt.Errorf("--serve-flags, --serve-env: %w", refused)
				}
				if cfg.Baseline && !baselineScenarios[name] {
					res.Notes = append(res.Notes, "run on Herald alone: the baseline forwarder runs "+baselineList())
				}
				rep.Results = append(rep.Results, res)
				status := "ok"
				if !res.OK {
					status = "FAILED: " + firstLineOf(res.Error)
				}
				prog.printf("%s: %s (%.1fs, load %.2f → %.2f, other processes %.2f cores)\n", res.label("", runs), status, res.Seconds, res.LoadStart[0], res.LoadEnd[0], res.OtherCPUCores)
			}
		}
	}
	comparePullPush(rep.Results, isPostgres(cfg.Store))
	compareNATSPush(rep.Results)
	compareBaseline(rep, isPostgres(cfg.Store))
	return rep, nil
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, Kernel: kernel()}
	m.MemoryMiB = memTotal() >> 20
	return m
}

// env is one scenario's world: its current server, API client and
// receivers. Its launcher starts the servers; usage sums what they used.
type env struct {
	cfg  *Config
	name string
	// baseline: the scenario runs against the baseline forwarder instead
	// of herald serve.
	baseline bool
	dir      string
	prog     *progress
	launch   *launcher
	usage    serverUsage

	srv  *server
	api  *client
	recv []*Receiver
	// cleanups run when the environment closes (a source scenario's
	// stream).
	cleanups []func()
}

// newEnv is the world of scenario name in dir, before its first server.
func newEnv(cfg *Config, name string, baseline bool, dir string, prog *progress) *env {
	return &env{cfg: cfg, name: name, baseline: baseline, dir: dir, prog: prog,
		launch: newLauncher(cfg, name, baseline, dir, prog)}
}

// scenarioFuncs run the scenarios; each fills res.Phases, res.Figures and
// res.Budget and returns an error when it could not finish.
var scenarioFuncs = map[string]func(ctx context.Context, e *env, res *Result) error{
	"steady-batch":    steadyBatch,
	"steady-single":   steadySingle,
	"latency":         latencyScenario,
	"fanout":          fanoutScenario,
	"failing":         failingScenario,
	"blackhole":       blackholeScenario,
	"backlog":         backlogScenario,
	"pull":            pullScenario,
	"nats":            natsScenario,
	"batch":           batchScenario,
	"fanout-filtered": filteredScenario,
	"schema-enforced": schemaEnforcedScenario,
	"transformed":     transformedScenario,
	"source":          sourceScenario,
	"rate-limited":    rateLimitedScenario,
	"ordered":         orderedScenario,
	"soak":            soakScenario,
	"console":         consoleScenario,
}

// runScenario runs one scenario on a server of its own: herald serve, or
// with target "baseline" the baseline forwarder. refused is the error of a
// server that refused its flags (errRefused), which ends the run.
func runScenario(ctx context.Context, cfg *Config, name, target string, run int, prog *progress) (res Result, refused error) {
	res.Scenario, res.Target, res.Run = name, target, run
	m := startMeasure()
	res.LoadStart = m.load
	var serverCPU time.Duration
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout(name, cfg.Sizes)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var e *env
	defer func() {
		prog.set(nil)
		if e != nil {
			e.close()
			e.launch.dropSchemas()
		}
		m.finish(&res, serverCPU)
	}()

	tag := name
	if target == targetBaseline {
		tag += "-baseline"
	}
	dir, err := os.MkdirTemp(cfg.TempDir, "herald-bench-"+tag+"-")
	if err != nil {
		res.Error = err.Error()
		return res, nil
	}
	e = newEnv(cfg, name, target == targetBaseline, dir, prog)
	flags, err := e.serve(ctx)
	res.ServeFlags = flags
	res.ServeEnv = cfg.ServeEnv
	if err != nil {
		res.Error = err.Error()
		if errors.Is(err, errRefused) {
			return res, err
		}
		return res, nil
	}

	err = scenarioFuncs[name](ctx, e, &res)
	if e.baseline {
		e.forwarderFigures(&res)
		// The budget's lines are Herald's; the forwarder is measured only
		// to be compared with (compareBaseline).
		res.Budget = nil
	}

	serverCPU = e.usage.cpu(e.srv)
	res.CPUSeconds = serverCPU.Seconds()
	res.PeakRSSMiB = mib(e.usage.peak(e.srv))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("did not finish within %s: %w", timeout, err)
		}
		if e.srv != nil && !e.srv.alive() {
			err = fmt.Errorf("%w (%s exited: %v)\nlast lines of its log:\n%s", err, e.srv.what, e.srv.waitErr, e.srv.logTail(20))
		}
		res.Error = err.Error()
	}
	return res, nil
}

// measure is what runScenario reads of the machine as a scenario starts.
type measure struct {
	start     time.Time
	load      [3]float64
	benchCPU0 time.Duration
	busy0     time.Duration
}

// startMeasure reads the machine as a scenario starts.
func startMeasure() measure {
	m := measure{load: loadavg()}
	m.start = time.Now()
	m.benchCPU0, m.busy0 = procCPU(0), machineBusy()
	return m
}

// finish fills in res what the scenario took: its time, the load average,
// the bench's CPU and the cores other processes used meanwhile (all but
// the bench and the servers, whose CPU is serverCPU); with no error it
// marks res OK.
func (m measure) finish(res *Result, serverCPU time.Duration) {
	res.Seconds = time.Since(m.start).Seconds()
	res.LoadEnd = loadavg()
	bench := procCPU(0) - m.benchCPU0
	res.BenchCPUSeconds = bench.Seconds()
	if secs := time.Since(m.start).Seconds(); secs > 0 && m.busy0 > 0 {
		// Whatever else ran on the machine meanwhile: the figures are
		// only as good as this is small.
		others := machineBusy() - m.busy0 - bench - serverCPU
		res.OtherCPUCores = max(others.Seconds(), 0) / secs
	}
	if res.Error == "" {
		res.OK = true
	}
}

// serve starts a server for the scenario (see launcher) with an API client
// for it, and returns the flags it was given beyond the usual ones.
func (e *env) serve(ctx context.Context) ([]string, error) {
	srv, flags, err := e.launch.start(ctx)
	if err != nil {
		return flags, err
	}
	e.attach(srv)
	return flags, nil
}

// attach makes srv the scenario's server: its memory sampled, the API
// client pointed at it, its CPU counted from now.
func (e *env) attach(srv *server) {
	e.srv = srv
	srv.sampler = startSampler(srv.pid, sampleEvery)
	s := e.cfg.Sizes
	e.api = newClient(srv.url, e.launch.adminKey, max(s.Publishers, s.SinglePubs, s.RateWorkers)+s.Consumers)
	e.usage.begin(srv)
}

// restart replaces the scenario's server with a fresh one on an empty store,
// started as the first was. The receivers subscribed to the old server are
// closed (the caller subscribes new ones); the old server's CPU and peak
// memory stay in the scenario's figures, its store is removed (unless Keep).
func (e *env) restart(ctx context.Context) error {
	if e.srv != nil {
		e.usage.end(e.srv)
		e.srv.stop()
		if !e.cfg.Keep {
			_ = os.RemoveAll(filepath.Join(e.srv.dir, "data"))
		}
		e.srv = nil
	}
	if e.api != nil {
		e.api.close()
		e.api = nil
	}
	for _, r := range e.recv {
		r.close()
	}
	e.recv = nil
	_, err := e.serve(ctx)
	return err
}

// close kills the server, stops the receivers and removes the directory
// (unless Keep).
func (e *env) close() {
	if e.srv != nil {
		e.srv.stop()
	}
	if e.api != nil {
		e.api.close()
	}
	for _, r := range e.recv {
		r.close()
	}
	for _, f := range e.cleanups {
		f()
	}
	if e.dir != "" {
		if e.cfg.Keep {
			e.prog.printf("%s: kept %s\n", e.name, e.dir)
		} else {
			_ = os.RemoveAll(e.dir)
		}
	}
}

// receiver starts a receiver (a black hole when hole) and subscribes it:
// its subscription takes the given event types, retry policy (JSON) and
// timeout ("" for the defaults).
func (e *env) receiver(ctx context.Context, name string, types []string, policy, timeout string, hole bool) (*Receiver, error) {
	sub := subscription{Name: name, EventTypes: types, Timeout: timeout}
	if policy != "" {
		sub.RetryPolicy = json.RawMessage(policy)
	}
	return e.pushTo(ctx, sub, hole)
}

// pushTo starts a receiver (a black hole when hole) and creates sub with
// the receiver's URL.
func (e *env) pushTo(ctx context.Context, sub subscription, hole bool) (*Receiver, error) {
	r, err := startReceiver("/hook/"+sub.Name, hole)
	if err != nil {
		return nil, err
	}
	e.recv = append(e.recv, r)
	sub.URL = r.URL
	if _, err := e.api.createSubscription(ctx, sub); err != nil {
		return nil, err
	}
	return r, nil
}

// phase is one load and the receipts it must produce.
type phase struct {
	name   string
	load   *load
	expect map[*Receiver]int // events each receiver must count
	lat    map[*Receiver]*recorder
	// settle waits, once every receipt is in, until the server lists no
	// pending delivery.
	settle bool
	// allowStall ends the wait without error when the load is done and no
	// receipt arrived for stallAfterPub (backlog).
	allowStall bool
	// during runs alongside the load (failing: recovery), with the load's
	// start time.
	during func(ctx context.Context, start time.Time)
	// split, when set, divides each receiver's latencies at the time it
	// holds: those of events sent later go to latAfter[r].
	split    *atomic.Int64
	latAfter map[*Receiver]*recorder
}

// phaseRun is what a phase produced.
type phaseRun struct {
	load    loadResult
	tracks  map[*Receiver]*track
	cpu     time.Duration
	peakRSS int64
	settle  time.Duration
	stalled bool
	loadAvg [3]float64
}

// run publishes p's load and waits for its receipts.
func (e *env) run(ctx context.Context, p *phase) (*phaseRun, error) {
	pr := &phaseRun{tracks: map[*Receiver]*track{}, loadAvg: loadavg()}
	p.load.uuids = e.cfg.Sizes.UUIDIDs
	expected := pr.track(p)
	e.srv.sampler.resetPeak()
	cpu0 := procCPU(e.srv.pid)
	started := time.Now()
	label := e.name
	if p.name != "" {
		label += "/" + p.name
	}
	if e.baseline {
		label += " (baseline)"
	}
	e.prog.set(func() string {
		return fmt.Sprintf("%s: published %d/%d  received %d/%d  %.0fs  server rss %.0f MiB",
			label, p.load.accepted.Load(), p.load.events, pr.received(), expected,
			time.Since(started).Seconds(), mib(e.srv.sampler.current().RSS))
	})
	defer e.prog.set(nil)

	done := make(chan loadDone, 1)
	loadStart := time.Now()
	go func() {
		r, err := p.load.run(ctx, e.api)
		done <- loadDone{r, err}
	}()
	if p.during != nil {
		go p.during(ctx, loadStart)
	}
	if err := pr.await(ctx, e, p, expected, done); err != nil {
		return pr, fmt.Errorf("%s: %w", label, err)
	}
	// The forwarder keeps nothing to settle: what it has not POSTed yet it
	// never will.
	if p.settle && !e.baseline {
		e.prog.set(func() string { return label + ": waiting until no delivery is pending" })
		t0 := time.Now()
		if err := e.waitNoPending(ctx); err != nil {
			return pr, fmt.Errorf("%s: %w", label, err)
		}
		pr.settle = time.Since(t0)
	}
	pr.cpu = procCPU(e.srv.pid) - cpu0
	pr.peakRSS = e.srv.sampler.windowPeak()
	return pr, nil
}

// track gives each receiver p expects events at a new track of the phase's
// events, and returns how many receipts p expects in all.
func (pr *phaseRun) track(p *phase) (expected int64) {
	for r, n := range p.expect {
		lat := p.lat[r]
		if lat == nil {
			lat = &recorder{}
		}
		t := newTrack(p.load.prefix, p.load.uuids, p.load.events, lat)
		if p.split != nil {
			t.split, t.latAfter = p.split, p.latAfter[r]
		}
		pr.tracks[r] = t
		r.setTrack(t)
		expected += int64(n)
	}
	return expected
}

// received is how many of the phase's events its receivers have counted
// (each once).
func (pr *phaseRun) received() int64 {
	var n int64
	for _, t := range pr.tracks {
		n += t.unique.Load()
	}
	return n
}

// loadDone is how a phase's load ended.
type loadDone struct {
	res loadResult
	err error
}

// await waits until the load is done (its result in pr.load) and the
// receivers have counted expected receipts, or, with p.allowStall, until
// none arrived for stallAfterPub after the load (pr.stalled). It fails when
// the load fails, the server exits, the baseline forwarder drops a POST or
// ctx ends.
func (pr *phaseRun) await(ctx context.Context, e *env, p *phase, expected int64, done <-chan loadDone) error {
	loading := true
	lastCount, lastChange := int64(-1), time.Now()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	nextCheck := time.Now().Add(forwarderCheckEvery)
	for {
		n := pr.received()
		if n >= expected && !loading {
			return nil
		}
		if n != lastCount {
			lastCount, lastChange = n, time.Now()
		}
		if !loading && p.allowStall && time.Since(lastChange) > stallAfterPub {
			pr.stalled = true
			return nil
		}
		select {
		case d := <-done:
			loading = false
			pr.load = d.res
			if d.err != nil {
				return d.err
			}
		case <-tick.C:
			if !e.srv.alive() {
				return errExited
			}
			if e.baseline && time.Now().After(nextCheck) {
				// No retries: one failed POST and the receipts can never
				// all arrive; say so instead of waiting for the deadline.
				nextCheck = time.Now().Add(forwarderCheckEvery)
				if st, err := e.api.forwarderStats(ctx); err == nil && st.Failed > 0 {
					return fmt.Errorf("received %d of %d deliveries: %w: %d POSTs failed", n, expected, errForwarderDropped, st.Failed)
				}
			}
		case <-ctx.Done():
			return fmt.Errorf("received %d of %d deliveries: %w", n, expected, ctx.Err())
		}
	}
}

// waitNoPending polls until the server lists no pending delivery.
func (e *env) waitNoPending(ctx context.Context) error {
	for {
		pending, err := e.api.anyPending(ctx)
		if err != nil {
			return err
		}
		if !pending {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deliveries still pending: %w", ctx.Err())
		case <-time.After(pendingEvery):
		}
		if !e.srv.alive() {
			return errExited
		}
	}
}

// stats sums the receipts of the given receivers in a phase run.
type stats struct {
	unique, dups int64
	first, last  time.Time
}

func (pr *phaseRun) stats(rs []*Receiver) stats {
	var s stats
	var first, last int64
	for _, r := range rs {
		t := pr.tracks[r]
		if t == nil {
			continue
		}
		s.unique += t.unique.Load()
		s.dups += t.dups.Load()
		if f := t.first.Load(); f != 0 && (first == 0 || f < first) {
			first = f
		}
		last = max(last, t.last.Load())
	}
	if first != 0 {
		s.first, s.last = time.Unix(0, first), time.Unix(0, last)
	}
	return s
}

// result turns a phase run into a PhaseResult, counting receipts at rs and
// latencies from lats.
func (pr *phaseRun) result(name string, rs []*Receiver, expected int, lats ...*recorder) PhaseResult {
	s := pr.stats(rs)
	out := PhaseResult{
		Name: name, Events: pr.load.Accepted, Deliveries: s.unique, Expected: int64(expected), Duplicates: s.dups,
		Latency: merged(lats...), PeakRSSMiB: mib(pr.peakRSS), CPUSeconds: pr.cpu.Seconds(),
		SettleSeconds: pr.settle.Seconds(), Load1: pr.loadAvg[0],
	}
	if secs := pr.load.seconds(); secs > 0 {
		out.PublishSeconds = secs
		out.EventsPerSec = float64(pr.load.Accepted) / secs
	}
	if !s.last.IsZero() {
		secs := s.last.Sub(pr.load.start).Seconds()
		out.DeliverSeconds = secs
		if secs > 0 {
			out.DeliveriesPerSec = float64(s.unique) / secs
		}
	}
	if s.unique > 0 {
		out.CPUPer1000 = pr.cpu.Seconds() / float64(s.unique) * 1000
	}
	return out
}

// count returns how many n in [0, events) have f(n) true.
func count(events int, f func(n int) bool) int {
	c := 0
	for n := range events {
		if f(n) {
			c++
		}
	}
	return c
}

var runSeq atomic.Int64

// prefix returns an event id prefix unique in this process.
func prefix(scenario, phase string) string {
	return fmt.Sprintf("%s.%s.%d-", scenario, phase, runSeq.Add(1))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
