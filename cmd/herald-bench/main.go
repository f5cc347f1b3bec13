// Command herald-bench is Herald's end-to-end benchmark (internal/bench),
// a binary of its own so that the server's binary does not carry it.
// `herald bench` runs it (cmd/herald/bench.go) with --herald set to that
// herald, which it measures; run alone, it measures the herald beside it
// or on PATH, or the one --herald names.
//
//	herald-bench [flags]             what herald bench runs (herald-bench -h)
//	herald-bench forwarder [flags]   the baseline forwarder (hidden: the bench starts it)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/herald-events/herald/internal/bench"
	"github.com/herald-events/herald/internal/cliflag"
	"github.com/herald-events/herald/internal/store"
	_ "github.com/herald-events/herald/internal/store/backends" // the stores --store may name
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the benchmark, or with the first argument bench.ForwarderCommand
// the baseline forwarder, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == bench.ForwarderCommand {
		return runForwarder(ctx, args[1:], stdout, stderr)
	}
	return benchMain(ctx, args, stdout, stderr)
}

const benchUsage = `Usage: herald bench [--scenario NAME|all] [--json] [flags]
   or: herald-bench [--scenario NAME|all] [--json] [flags]

herald bench runs herald-bench, a binary of its own (so that the server's
binary does not carry the benchmark), with --herald set to that herald.

Measures Herald end to end, the way a user would: each scenario starts its own
"herald serve" on a fresh store in a temporary directory, starts webhook
receivers on loopback, subscribes them through the API, publishes CloudEvents
over HTTP like a client, waits until every delivery has arrived, and reports
events accepted/s, deliveries/s, publish→receipt latency (p50, p90, p99, max),
the server's peak RSS and its CPU seconds per 1,000 deliveries, with the lines
of the performance budget in docs/benchmarks.md that each scenario measures.
The events' IDs sort in publish order (as UUIDv7s or ULIDs do); --uuid-ids
makes them random UUIDv4s, as the CloudEvents SDKs make them by default,
which cost the embedded store a page of its deduplication index each.
The pull scenario has consumers instead of receivers: they receive from a pull
subscription and acknowledge, and its deliveries are the acknowledged ones.
The batch scenario runs steady-batch's load twice, each on a fresh server,
with the subscriptions at max_events_per_batch 1 and then at --batch; its
receivers count each event of a batched push.
The fanout-filtered scenario runs steady-batch's load twice, each on a fresh
server, with the subscriptions filtered by advanced filters every event
matches: first alongside 1,000 more subscriptions to the same event types
whose filters never match, then without them.
The rate-limited scenario runs steady-batch's load twice, each on a fresh
server: first beside one more endpoint limited to 200 requests/s (burst 200)
that takes one event in every --events/2000 (at least every other), then the
same events without it; it reports the unlimited endpoints' deliveries/s in
both runs and the limited endpoint's achieved rate after its burst.
The soak scenario runs steady-batch's load until --soak-deliveries (10
million) deliveries have arrived, with the server's --dedup-retention at
--soak-retention (default 30m, longer than the run, so that the store holds
every delivery at the end while the clean-up runs behind the load; shorter,
it measures the clean-up's deletes too), and compares deliveries/s over the
first and the last 10 %% of them; it also reports the store's size on disk.
It takes about 15 minutes and is not in "all": name it.

--baseline also runs steady-batch, steady-single, latency and fanout, each
right after Herald and with the same load, against a non-durable forwarder
built into herald-bench (a child process, "herald-bench forwarder", measured
from /proc as herald serve is): it decodes each publish with encoding/json
into maps, matches the event type and POSTs each event from 16 goroutines,
with no store, no retries and no checks. The report adds, per pair, Herald's
deliveries/s and server CPU per delivery divided by the forwarder's, and
the budget's second-stage bar (Herald ≥ 0.6× the baseline's deliveries/s in
steady-batch and ≥ 0.7× in steady-single on SQLite, ≥ 0.5× in steady-batch
on PostgreSQL). The other scenarios run on Herald alone. --runs N runs
everything N times (with --baseline, N herald/baseline pairs alternating)
and reports each run and, with --baseline, the medians of the ratios.

A progress line goes to stderr while it runs. The exit status is 1 when a
scenario failed (did not finish by its deadline, or the server died); a missed
budget is reported, not an error.

Scenarios (--scenario takes one, a comma-separated list, or all):
%s
Flags:
`

// benchOptions are herald bench's flags.
type benchOptions struct {
	sizes                                 bench.Sizes
	scenario, jsonFile, herald, pprofAddr string
	baselinePprof                         string
	store, serveFlags, serveEnv, tmp      string
	asJSON, keep, quiet, baseline         bool
	runs                                  int
	timeout                               time.Duration
}

// newBenchFlags returns herald bench's flag set, writing usage and errors
// to stderr, and the options its flags set.
func newBenchFlags(stderr io.Writer) (*flag.FlagSet, *benchOptions) {
	fs := flag.NewFlagSet("herald bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &benchOptions{sizes: bench.DefaultSizes()}
	s := &o.sizes
	fs.StringVar(&o.scenario, "scenario", "all", "scenario to run: a name, a comma-separated list, or all")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&o.jsonFile, "json-file", "", "also write the JSON report to this `file`")
	fs.StringVar(&o.herald, "herald", "", "herald binary to run as the server (herald bench sets it to that herald; default: the herald beside herald-bench, else on PATH)")
	fs.BoolVar(&o.keep, "keep", false, "keep each scenario's directory (store and server log) and print its path")
	fs.StringVar(&o.pprofAddr, "pprof", "", "pass --pprof `ADDR` to herald serve (profile it while a scenario runs)")
	fs.StringVar(&o.baselinePprof, "baseline-pprof", "", "serve the baseline forwarder's profiles on `ADDR` (profile it while a --baseline run of it runs)")
	fs.StringVar(&o.store, "store", "sqlite", "herald serve's store: sqlite, or a postgres:// URL (each scenario gets a fresh schema in that database)")
	fs.StringVar(&o.serveFlags, "serve-flags", "", "more flags for herald serve, space-separated (e.g. \"--window 20000\"); a herald serve that refuses them ends the run with exit status 2")
	fs.StringVar(&o.serveEnv, "serve-env", "", "more environment for herald serve, space-separated KEY=VALUE (e.g. \"GOGC=400\")")
	fs.DurationVar(&o.timeout, "timeout", 0, "deadline of each scenario (default: per scenario, from its sizes)")
	fs.StringVar(&o.tmp, "tmp", "", "directory for the scenario directories (default: the system's temporary directory)")
	fs.BoolVar(&o.quiet, "quiet", false, "print no progress line")
	fs.BoolVar(&o.baseline, "baseline", false, "also run steady-batch, steady-single, latency and fanout on the baseline forwarder, each right after Herald, and report Herald/baseline")
	fs.IntVar(&o.runs, "runs", 1, "run each scenario this many times, 1 to 100 (with --baseline: herald/baseline pairs, alternating)")

	fs.IntVar(&s.Endpoints, "endpoints", s.Endpoints, "endpoints (one subscription each) in steady-*, latency, failing, backlog and batch")
	fs.IntVar(&s.PayloadBytes, "payload", s.PayloadBytes, "bytes of data in each event")
	fs.BoolVar(&s.UUIDIDs, "uuid-ids", false, "give events random UUIDv4 ids, as the CloudEvents SDKs do by default (default: ids in publish order, as UUIDv7 or ULIDs)")
	fs.IntVar(&s.Events, "events", s.Events, "steady-batch and each run of batch: events to publish")
	fs.IntVar(&s.Batch, "batch", s.Batch, "events a request in steady-batch, fanout, blackhole, batch and the backlog build; batch: also max_events_per_batch of its batched run")
	fs.IntVar(&s.Publishers, "publishers", s.Publishers, "concurrent publishers of batches")
	fs.IntVar(&s.SingleEvents, "single-events", s.SingleEvents, "steady-single: events to publish")
	fs.IntVar(&s.SinglePubs, "single-publishers", s.SinglePubs, "steady-single: concurrent publishers")
	cliflag.FloatVar(fs, &s.Rate, "rate", "latency, failing, backlog: events/s offered (one event a request)")
	fs.DurationVar(&s.Duration, "duration", s.Duration, "latency: how long the rate is offered")
	fs.IntVar(&s.RateWorkers, "rate-workers", s.RateWorkers, "concurrent publishers serving an offered rate")
	fs.IntVar(&s.FanoutEvents, "fanout-events", s.FanoutEvents, "fanout: events to publish")
	fs.IntVar(&s.Fanout, "fanout", s.Fanout, "fanout: subscriptions (endpoints) each event goes to")
	cliflag.FloatVar(fs, &s.FailShare, "fail-share", "failing: share of endpoints answering 503")
	fs.DurationVar(&s.FailFor, "fail-for", s.FailFor, "failing: how long they answer 503 before recovering")
	fs.DurationVar(&s.FailDuration, "fail-duration", s.FailDuration, "failing: how long the rate is offered")
	fs.IntVar(&s.BHEvents, "blackhole-events", s.BHEvents, "blackhole: events in each of its two phases")
	fs.IntVar(&s.BHEndpoints, "blackhole-endpoints", s.BHEndpoints, "blackhole: endpoints")
	cliflag.FloatVar(fs, &s.BHShare, "blackhole-share", "blackhole: share of endpoints that never answer")
	fs.DurationVar(&s.BHTimeout, "blackhole-timeout", s.BHTimeout, "blackhole: the subscriptions' attempt timeout")
	fs.IntVar(&s.Backlog, "backlog", s.Backlog, "backlog: deliveries left pending retry")
	fs.IntVar(&s.BacklogEPs, "backlog-endpoints", s.BacklogEPs, "backlog: endpoints the backlog is spread over (each backlog event goes to all)")
	fs.DurationVar(&s.BacklogRetry, "backlog-retry", s.BacklogRetry, "backlog: delay of the backlog's retry")
	fs.DurationVar(&s.BacklogFresh, "backlog-fresh", s.BacklogFresh, "backlog: length of the fresh-traffic phases before and after")
	fs.IntVar(&s.PullEvents, "pull-events", s.PullEvents, "pull: events to publish (--batch a request, from --publishers)")
	fs.IntVar(&s.Consumers, "consumers", s.Consumers, "pull: concurrent consumers, each looping receive → acknowledge")
	fs.IntVar(&s.PullBatch, "pull-batch", s.PullBatch, "pull: max_events of each receive (1 to 1000)")
	fs.IntVar(&s.SoakDeliveries, "soak-deliveries", s.SoakDeliveries, "soak: deliveries to wait for (--batch events a request, from --publishers, to --endpoints)")
	fs.IntVar(&s.OrderedKeys, "ordered-keys", s.OrderedKeys, "ordered: distinct partition keys the events spread over (event n has key n mod this)")
	fs.IntVar(&s.ConsoleDeliveries, "console-deliveries", s.ConsoleDeliveries, "console: deliveries to store before timing the pages (--batch events a request, from --publishers)")
	fs.DurationVar(&s.SoakRetention, "soak-retention", s.SoakRetention, "soak: herald serve's --dedup-retention (at least 1m): finished events older than this are deleted once a minute")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), benchUsage, bench.ScenarioHelp())
		fs.PrintDefaults()
	}
	return fs, o
}

// check reports the first bad option that bench.Run does not check itself
// (it checks the sizes, and herald serve the flags and environment it is
// given).
func (o *benchOptions) check() error {
	if _, err := store.Parse(o.store); err != nil {
		return fmt.Errorf("--store %w", err)
	}
	if o.runs < 1 || o.runs > 100 {
		return fmt.Errorf("--runs %d: must be from 1 to 100", o.runs)
	}
	if o.timeout < 0 {
		return fmt.Errorf("--timeout %v: must not be negative", o.timeout)
	}
	for _, a := range []struct{ flag, addr string }{{"--pprof", o.pprofAddr}, {"--baseline-pprof", o.baselinePprof}} {
		if a.addr != "" {
			if err := cliflag.CheckAddr(a.flag, a.addr); err != nil {
				return err
			}
		}
	}
	for _, kv := range strings.Fields(o.serveEnv) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("--serve-env: %q is not KEY=VALUE", kv)
		}
	}
	// --serve-flags and the values of --serve-env are herald serve's to
	// check: bench.Run ends the run with its refusal when the first server
	// exits with status 2 (the herald measured, which may be another build
	// than this one, knows its own flags).
	if o.herald != "" {
		if _, err := os.Stat(o.herald); err != nil {
			return fmt.Errorf("--herald: %v", err)
		}
	}
	if o.tmp != "" {
		if st, err := os.Stat(o.tmp); err != nil || !st.IsDir() {
			return fmt.Errorf("--tmp %s: not a directory", o.tmp)
		}
	}
	if o.jsonFile != "" {
		if st, err := os.Stat(filepath.Dir(o.jsonFile)); err != nil || !st.IsDir() {
			return fmt.Errorf("--json-file %s: its directory does not exist", o.jsonFile)
		}
	}
	return nil
}

// benchMain implements `herald bench`. It returns 0 when every scenario
// finished, 1 when one failed, 2 on a usage error (herald serve's refusal
// of --serve-flags or --serve-env too).
func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := newBenchFlags(stderr)
	if code, ok := cliflag.ParseFlagsOnly(fs, args, stdout, stderr); !ok {
		return code
	}
	names, err := bench.ParseScenarios(o.scenario)
	if err == nil && strings.TrimSpace(o.scenario) == "" {
		err = errors.New("want a scenario name, a comma-separated list, or all")
	}
	if err != nil {
		return usageError(stderr, fs.Name(), fmt.Errorf("--scenario: %v", err))
	}
	if err := o.check(); err != nil {
		return usageError(stderr, fs.Name(), err)
	}
	bin, err := heraldBinary(o.herald)
	if err != nil {
		return usageError(stderr, fs.Name(), err)
	}
	// The forwarder is always this binary's, whichever Herald is measured
	// (--herald): the baseline stays put between builds.
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "herald bench: finding this executable (for the baseline forwarder):", err)
		return 2
	}
	cfg := bench.Config{
		Herald: bin, Scenarios: names, Sizes: o.sizes, Timeout: o.timeout, Runs: o.runs, Baseline: o.baseline,
		Store: o.store, ServeArgs: strings.Fields(o.serveFlags), ServeEnv: strings.Fields(o.serveEnv), Pprof: o.pprofAddr, Keep: o.keep, TempDir: o.tmp,
		Forwarder: forwarderCommand(exe, o.baselinePprof),
	}
	if !o.quiet {
		cfg.Progress = stderr
		cfg.ProgressTTY = isTerminal(stderr)
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "herald bench:", err)
		return 2
	}
	return writeReport(rep, o, stdout, stderr)
}

// writeReport writes rep to stdout as a table, or as JSON with --json, and
// to --json-file; it returns the exit status: 1 when a scenario failed or
// the report could not be written.
func writeReport(rep *bench.Report, o *benchOptions, stdout, stderr io.Writer) int {
	var err error
	if o.asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
	}
	if err == nil && o.jsonFile != "" {
		err = writeJSONFile(o.jsonFile, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "herald bench:", err)
		return 1
	}
	if !rep.OK() {
		return 1
	}
	return 0
}

// heraldName is the server's binary, looked for beside herald-bench and on
// PATH when --herald is not given.
const heraldName = "herald"

// heraldBinary returns the herald binary to measure: flagValue (--herald)
// when given, else the herald beside this executable, else herald on PATH.
func heraldBinary(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil // check() has seen it exists
	}
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), heraldName)
		if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(heraldName); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("--herald: none given, and no herald beside herald-bench or on PATH (herald bench gives its own)")
}

// usageError prints a bad setting, "COMMAND: message", and returns exit
// status 2.
func usageError(stderr io.Writer, command string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", command, err)
	return 2
}

func writeJSONFile(path string, rep *bench.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// runForwarder implements `herald-bench forwarder`, the baseline forwarder
// of herald bench --baseline (internal/bench/forwarder.go). It is not
// listed in the usage: the bench starts it as a child process, so that its
// CPU time and memory are measured from /proc as herald serve's are, apart
// from the bench's own load generator and receivers. It prints
// "herald-bench forwarder listening on http://ADDR" and forwards until
// SIGINT or SIGTERM (the bench kills it).
func runForwarder(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald-bench "+bench.ForwarderCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := bench.ForwarderFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: herald-bench %s [flags]\n\nThe baseline forwarder of herald bench --baseline (started by the bench, not by hand).\n\nFlags:\n", bench.ForwarderCommand)
		fs.PrintDefaults()
	}
	if code, ok := cliflag.ParseFlagsOnly(fs, args, stdout, stderr); !ok {
		return code
	}
	if err := o.Check(); err != nil {
		return usageError(stderr, fs.Name(), err)
	}
	if err := cliflag.CheckAddr("--listen", o.Listen); err != nil {
		return usageError(stderr, fs.Name(), err)
	}
	if o.Pprof != "" {
		if err := cliflag.CheckAddr("--pprof", o.Pprof); err != nil {
			return usageError(stderr, fs.Name(), err)
		}
	}
	if ctx.Err() != nil {
		return 1
	}
	if err := bench.RunForwarder(ctx, *o, stdout); err != nil {
		fmt.Fprintln(stderr, fs.Name()+":", err)
		return 1
	}
	return 0
}

// forwarderCommand is the baseline forwarder's command: this binary's
// hidden command, serving its profiles on pprof when that is set
// (--baseline-pprof).
func forwarderCommand(exe, pprof string) []string {
	cmd := []string{exe, bench.ForwarderCommand}
	if pprof != "" {
		cmd = append(cmd, "--pprof", pprof)
	}
	return cmd
}
