package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
		cfg.Forwarder = []string{exe, "bench-forwarder"}
	}
	rep := &Report{Machine: machine(), Sizes: cfg.Sizes, Started: time.Now().UTC(), Runs: runs, Baseline: cfg.Baseline}
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
				res := runScenario(ctx, &cfg, name, target, run, prog)
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

// env is one scenario's world: its server, API client and receivers.
type env struct {
	cfg  *Config
	name string
	// baseline: the scenario runs against the baseline forwarder instead
	// of herald serve.
	baseline bool
	dir      string
	srv      *server
	api      *client
	recv     []*Receiver
	prog     *progress
	phase    string

	// What every server of the scenario is started with: flags before and
	// after --store (when the store is PostgreSQL), environment, admin key.
	flagsPre, flagsPost []string
	serveEnv            []string
	adminKey            string
	servers             int           // servers started
	cpu0                time.Duration // the current server's CPU when it was ready
	cpuDone             time.Duration // CPU of the scenario's servers already stopped
	peakDone            int64         // their largest VmHWM
	drops               []func()      // drop the PostgreSQL schemas, after the servers
	pgSchema            string        // the current server's PostgreSQL schema ("" on SQLite)
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
	"batch":           batchScenario,
	"fanout-filtered": filteredScenario,
	"soak":            soakScenario,
}

// runScenario runs one scenario on a server of its own: herald serve, or
// with target "baseline" the baseline forwarder.
func runScenario(ctx context.Context, cfg *Config, name, target string, run int, prog *progress) (res Result) {
	res.Scenario, res.Target, res.Run = name, target, run
	res.LoadStart = loadavg()
	start := time.Now()
	benchCPU0 := procCPU(0)
	busy0 := machineBusy()
	var serverCPU time.Duration
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout(name, cfg.Sizes)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	e := &env{cfg: cfg, name: name, prog: prog, baseline: target == targetBaseline}
	defer func() {
		prog.set(nil)
		e.close()
		for _, drop := range e.drops {
			drop()
		}
		res.Seconds = time.Since(start).Seconds()
		res.LoadEnd = loadavg()
		bench := procCPU(0) - benchCPU0
		res.BenchCPUSeconds = bench.Seconds()
		if secs := time.Since(start).Seconds(); secs > 0 && busy0 > 0 {
			// Whatever else ran on the machine meanwhile: the figures are
			// only as good as this is small.
			others := machineBusy() - busy0 - bench - serverCPU
			res.OtherCPUCores = max(others.Seconds(), 0) / secs
		}
		if res.Error == "" {
			res.OK = true
		}
	}()

	tag := name
	if e.baseline {
		tag += "-baseline"
	}
	dir, err := os.MkdirTemp(cfg.TempDir, "herald-bench-"+tag+"-")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	e.dir = dir
	if name == "backlog" {
		// The backlog's endpoints fail every first attempt on purpose; the
		// endpoint circuit would put them on probation or disable them and
		// stop the first attempts. Its thresholds go out of reach so the
		// scenario measures what the budget line names: a million
		// deliveries pending retry. (Flags the binary lacks are left out.)
		e.flagsPre = append(e.flagsPre, supported(cfg.Herald, relaxedHealth)...)
	}
	if name == "soak" {
		// Retention short enough that clean-up runs behind the load: see
		// soakScenario.
		e.flagsPre = append(e.flagsPre, "--dedup-retention", cfg.Sizes.SoakRetention.String())
	}
	e.flagsPost = append(e.flagsPost, cfg.ServeArgs...)
	if cfg.Pprof != "" {
		e.flagsPost = append(e.flagsPost, "--pprof", cfg.Pprof)
	}
	e.serveEnv = cfg.ServeEnv
	// The server runs with authentication on, as users run it: the bench
	// is its admin through a key made for this run (not in the report).
	e.adminKey = benchAdminKey()
	flags, err := e.serve(ctx)
	res.ServeFlags = flags
	res.ServeEnv = cfg.ServeEnv
	if err != nil {
		res.Error = err.Error()
		return res
	}

	err = scenarioFuncs[name](ctx, e, &res)
	if e.baseline {
		e.forwarderFigures(&res)
		// The budget's lines are Herald's; the forwarder is measured only
		// to be compared with (compareBaseline).
		res.Budget = nil
	}

	serverCPU = e.serverCPU()
	res.CPUSeconds = serverCPU.Seconds()
	res.PeakRSSMiB = mib(e.serverPeak())
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("did not finish within %s: %w", timeout, err)
		}
		if e.srv != nil && !e.srv.alive() {
			err = fmt.Errorf("%w (%s exited: %v)\nlast lines of its log:\n%s", err, e.srv.what, e.srv.waitErr, e.srv.logTail(20))
		}
		res.Error = err.Error()
	}
	return res
}

// nextServerDir returns the directory of the scenario's next server (herald
// serve or the forwarder) and counts it: the scenario's directory for the
// first, a directory of its own under it for each later one.
func (e *env) nextServerDir() (string, error) {
	dir := e.dir
	if e.servers > 0 {
		dir = filepath.Join(e.dir, fmt.Sprintf("server-%d", e.servers+1))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", err
		}
	}
	e.servers++
	return dir, nil
}

// serve starts a server for the scenario on a fresh store — the first in
// the scenario's directory, a later one in a directory of its own under it,
// on PostgreSQL each in a fresh schema — with an API client for it, and
// returns the flags it was given beyond the usual ones.
func (e *env) serve(ctx context.Context) ([]string, error) {
	if e.baseline {
		return e.serveForwarder(ctx)
	}
	dir, err := e.nextServerDir()
	if err != nil {
		return nil, err
	}
	extra := slices.Clone(e.flagsPre)
	if isPostgres(e.cfg.Store) {
		schemaURL, drop, err := freshSchema(ctx, e.cfg.Store)
		if err != nil {
			return nil, err
		}
		if !e.cfg.Keep {
			e.drops = append(e.drops, drop)
		}
		e.pgSchema = schemaOf(schemaURL)
		extra = append(extra, "--store", schemaURL)
	}
	extra = append(extra, e.flagsPost...)
	e.prog.set(func() string { return e.name + ": starting herald serve" })
	srv, err := startServer(ctx, e.cfg.Herald, dir, extra, append(slices.Clone(e.serveEnv), "HERALD_ADMIN_KEY="+e.adminKey))
	if err != nil {
		return extra, err
	}
	e.attach(srv)
	return extra, nil
}

// attach makes srv the scenario's server: its memory sampled, the API
// client pointed at it, its CPU counted from now.
func (e *env) attach(srv *server) {
	e.srv = srv
	srv.sampler = startSampler(srv.pid, sampleEvery)
	s := e.cfg.Sizes
	e.api = newClient(srv.url, e.adminKey, max(s.Publishers, s.SinglePubs, s.RateWorkers)+s.Consumers)
	e.cpu0 = procCPU(srv.pid)
}

// restart replaces the scenario's server with a fresh one on an empty store,
// started as the first was. The receivers subscribed to the old server are
// closed (the caller subscribes new ones); the old server's CPU and peak
// memory stay in the scenario's figures, its store is removed (unless Keep).
func (e *env) restart(ctx context.Context) error {
	if e.srv != nil {
		e.cpuDone += procCPU(e.srv.pid) - e.cpu0
		e.peakDone = max(e.peakDone, procMem(e.srv.pid).Peak)
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

// serverCPU is the CPU time the scenario's servers used since they were
// ready.
func (e *env) serverCPU() time.Duration {
	d := e.cpuDone
	if e.srv != nil {
		d += procCPU(e.srv.pid) - e.cpu0
	}
	return d
}

// serverPeak is the largest peak resident memory (VmHWM) of the scenario's
// servers.
func (e *env) serverPeak() int64 {
	p := e.peakDone
	if e.srv != nil {
		p = max(p, procMem(e.srv.pid).Peak)
	}
	return p
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
	var expected int64
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
	received := func() int64 {
		var n int64
		for _, t := range pr.tracks {
			n += t.unique.Load()
		}
		return n
	}
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
			label, p.load.accepted.Load(), p.load.events, received(), expected,
			time.Since(started).Seconds(), mib(e.srv.sampler.current().RSS))
	})
	defer e.prog.set(nil)

	type loadDone struct {
		res loadResult
		err error
	}
	done := make(chan loadDone, 1)
	loadStart := time.Now()
	go func() {
		r, err := p.load.run(ctx, e.api)
		done <- loadDone{r, err}
	}()
	if p.during != nil {
		go p.during(ctx, loadStart)
	}

	var loadErr error
	loading := true
	lastCount, lastChange := int64(-1), time.Now()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	nextCheck := time.Now().Add(forwarderCheckEvery)
	for {
		n := received()
		if n >= expected && !loading {
			break
		}
		if n != lastCount {
			lastCount, lastChange = n, time.Now()
		}
		if !loading && p.allowStall && time.Since(lastChange) > stallAfterPub {
			pr.stalled = true
			break
		}
		select {
		case d := <-done:
			loading = false
			pr.load = d.res
			if d.err != nil {
				loadErr = d.err
				return pr, fmt.Errorf("%s: %w", label, loadErr)
			}
		case <-tick.C:
			if !e.srv.alive() {
				return pr, fmt.Errorf("%s: %w", label, errExited)
			}
			if e.baseline && time.Now().After(nextCheck) {
				// No retries: one failed POST and the receipts can never
				// all arrive; say so instead of waiting for the deadline.
				nextCheck = time.Now().Add(forwarderCheckEvery)
				if st, err := e.api.forwarderStats(ctx); err == nil && st.Failed > 0 {
					return pr, fmt.Errorf("%s: received %d of %d deliveries: %w: %d POSTs failed", label, n, expected, errForwarderDropped, st.Failed)
				}
			}
		case <-ctx.Done():
			return pr, fmt.Errorf("%s: received %d of %d deliveries: %w", label, n, expected, ctx.Err())
		}
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
