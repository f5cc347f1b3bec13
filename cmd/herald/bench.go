package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/herald-events/herald/internal/bench"
)

const benchUsage = `Usage: herald bench [--scenario NAME|all] [--json] [flags]

Measures Herald end to end, the way a user would: each scenario starts its own
"herald serve" on a fresh store in a temporary directory, starts webhook
receivers on loopback, subscribes them through the API, publishes CloudEvents
over HTTP like a client, waits until every delivery has arrived, and reports
events accepted/s, deliveries/s, publish→receipt latency (p50, p90, p99, max),
the server's peak RSS and its CPU seconds per 1,000 deliveries, with the lines
of the performance budget in docs/benchmarks.md that each scenario measures.
A progress line goes to stderr while it runs. The exit status is 1 when a
scenario failed (did not finish by its deadline, or the server died); a missed
budget is reported, not an error.

Scenarios (--scenario takes one, a comma-separated list, or all):
%s
Flags:
`

// runBench implements `herald bench`. It returns 0 when every scenario
// finished, 1 when one failed, 2 on a usage error.
func runBench(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return benchMain(ctx, args, stdout, stderr)
}

func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := bench.DefaultSizes()
	scenario := fs.String("scenario", "all", "scenario to run: a name, a comma-separated list, or all")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	jsonFile := fs.String("json-file", "", "also write the JSON report to this `file`")
	herald := fs.String("herald", "", "herald binary to run as the server (default: this executable)")
	keep := fs.Bool("keep", false, "keep each scenario's directory (store and server log) and print its path")
	pprofAddr := fs.String("pprof", "", "pass --pprof `ADDR` to herald serve (profile it while a scenario runs)")
	storeFlag := fs.String("store", "sqlite", "herald serve's store: sqlite, or a postgres:// URL (each scenario gets a fresh schema in that database)")
	serveFlags := fs.String("serve-flags", "", "more flags for herald serve, space-separated (e.g. \"--window 20000\")")
	serveEnv := fs.String("serve-env", "", "more environment for herald serve, space-separated KEY=VALUE (e.g. \"GOGC=400\")")
	timeout := fs.Duration("timeout", 0, "deadline of each scenario (default: per scenario, from its sizes)")
	tmp := fs.String("tmp", "", "directory for the scenario directories (default: the system's temporary directory)")
	noProgress := fs.Bool("quiet", false, "print no progress line")

	fs.IntVar(&s.Endpoints, "endpoints", s.Endpoints, "endpoints (one subscription each) in steady-*, latency, failing and backlog")
	fs.IntVar(&s.PayloadBytes, "payload", s.PayloadBytes, "bytes of data in each event")
	fs.IntVar(&s.Events, "events", s.Events, "steady-batch: events to publish")
	fs.IntVar(&s.Batch, "batch", s.Batch, "events a request in steady-batch, fanout, blackhole and the backlog build")
	fs.IntVar(&s.Publishers, "publishers", s.Publishers, "concurrent publishers of batches")
	fs.IntVar(&s.SingleEvents, "single-events", s.SingleEvents, "steady-single: events to publish")
	fs.IntVar(&s.SinglePubs, "single-publishers", s.SinglePubs, "steady-single: concurrent publishers")
	fs.Float64Var(&s.Rate, "rate", s.Rate, "latency, failing, backlog: events/s offered (one event a request)")
	fs.DurationVar(&s.Duration, "duration", s.Duration, "latency: how long the rate is offered")
	fs.IntVar(&s.RateWorkers, "rate-workers", s.RateWorkers, "concurrent publishers serving an offered rate")
	fs.IntVar(&s.FanoutEvents, "fanout-events", s.FanoutEvents, "fanout: events to publish")
	fs.IntVar(&s.Fanout, "fanout", s.Fanout, "fanout: subscriptions (endpoints) each event goes to")
	fs.Float64Var(&s.FailShare, "fail-share", s.FailShare, "failing: share of endpoints answering 503")
	fs.DurationVar(&s.FailFor, "fail-for", s.FailFor, "failing: how long they answer 503 before recovering")
	fs.DurationVar(&s.FailDuration, "fail-duration", s.FailDuration, "failing: how long the rate is offered")
	fs.IntVar(&s.BHEvents, "blackhole-events", s.BHEvents, "blackhole: events in each of its two phases")
	fs.IntVar(&s.BHEndpoints, "blackhole-endpoints", s.BHEndpoints, "blackhole: endpoints")
	fs.Float64Var(&s.BHShare, "blackhole-share", s.BHShare, "blackhole: share of endpoints that never answer")
	fs.DurationVar(&s.BHTimeout, "blackhole-timeout", s.BHTimeout, "blackhole: the subscriptions' attempt timeout")
	fs.IntVar(&s.Backlog, "backlog", s.Backlog, "backlog: deliveries left pending retry")
	fs.IntVar(&s.BacklogEPs, "backlog-endpoints", s.BacklogEPs, "backlog: endpoints the backlog is spread over (each backlog event goes to all)")
	fs.DurationVar(&s.BacklogRetry, "backlog-retry", s.BacklogRetry, "backlog: delay of the backlog's retry")
	fs.DurationVar(&s.BacklogFresh, "backlog-fresh", s.BacklogFresh, "backlog: length of the fresh-traffic phases before and after")
	fs.Usage = func() {
		fmt.Fprintf(stderr, benchUsage, bench.ScenarioHelp())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "herald bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	names, err := bench.ParseScenarios(*scenario)
	if err != nil {
		fmt.Fprintln(stderr, "herald bench: --scenario:", err)
		return 2
	}
	for _, kv := range strings.Fields(*serveEnv) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			fmt.Fprintf(stderr, "herald bench: --serve-env: %q is not KEY=VALUE\n", kv)
			return 2
		}
	}
	bin := *herald
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			fmt.Fprintln(stderr, "herald bench: finding this executable (use --herald):", err)
			return 2
		}
	}
	cfg := bench.Config{
		Herald: bin, Scenarios: names, Sizes: s, Timeout: *timeout,
		Store: *storeFlag, ServeArgs: strings.Fields(*serveFlags), ServeEnv: strings.Fields(*serveEnv), Pprof: *pprofAddr, Keep: *keep, TempDir: *tmp,
	}
	if !*noProgress {
		cfg.Progress = stderr
		cfg.ProgressTTY = isTerminal(stderr)
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "herald bench:", err)
		return 2
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
	}
	if err == nil && *jsonFile != "" {
		err = writeJSONFile(*jsonFile, rep)
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
