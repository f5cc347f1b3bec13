package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Scenarios lists every scenario, in the order "all" runs those it runs
// (AllScenarios).
var Scenarios = []string{"steady-batch", "steady-single", "latency", "fanout", "failing", "blackhole", "backlog", "pull", "nats", "batch", "fanout-filtered", "rate-limited", "ordered", "schema-enforced", "transformed", "source", "soak", "console"}

// notInAll are the scenarios "all" leaves out: soak takes about twenty
// minutes with its defaults, longer than everything else together, and
// console some minutes to fill its store; they are run by name.
var notInAll = map[string]bool{"soak": true, "console": true}

// AllScenarios returns the scenarios "all" runs, in order.
func AllScenarios() []string {
	var out []string
	for _, s := range Scenarios {
		if !notInAll[s] {
			out = append(out, s)
		}
	}
	return out
}

// scenarioInfo describes each scenario for usage text.
var scenarioInfo = map[string]string{
	"steady-batch":    "100 events a request to --endpoints endpoints, as fast as --publishers go",
	"steady-single":   "one event a request from --single-publishers concurrent publishers",
	"latency":         "--rate events/s offered (one a request) for --duration; publish→receipt p99",
	"fanout":          "each event to --fanout subscriptions (one endpoint each), 100 a request",
	"failing":         "--rate events/s offered; --fail-share of the endpoints answer 503 for --fail-for, then recover",
	"blackhole":       "--blackhole-share of the endpoints never answer; healthy throughput vs. a normal phase",
	"backlog":         "--backlog deliveries pending retry hours away, then fresh traffic: memory and latency vs. before",
	"pull":            "--pull-events to one pull subscription, --consumers receiving --pull-batch at a time and acknowledging; vs. steady-batch",
	"nats":            "steady-batch's load to one subscription whose destination is a JetStream subject on the machine's NATS (127.0.0.1:4222), structured mode, counted by a stream consumer; vs. steady-batch",
	"batch":           "steady-batch's load twice, on fresh servers: subscriptions at max_events_per_batch 1, then --batch (batched pushes)",
	"fanout-filtered": "steady-batch's load with 1,000 subscriptions whose advanced filters never match, then on a fresh server without them",
	"rate-limited":    "steady-batch's load twice, on fresh servers: beside one more endpoint limited to 200 requests/s, then without it",
	"ordered":         "steady-batch's load with a partitionkey of --ordered-keys keys on subscriptions with ordering key, then on a fresh server unordered",
	"schema-enforced": "steady-batch's load of invoices, each validated at publish against a 2 KB schema (schema_validation enforce), then on a fresh server unchecked",
	"transformed":     "steady-batch's load of 1 KB invoices, each reshaped by a CEL transform on every subscription, then on a fresh server untransformed",
	"source":          "steady-batch's events published to NATS JetStream (nats://127.0.0.1:4222) one a message and read by a NATS source, then on a fresh server over HTTP as steady-batch",
	"soak":            "steady-batch's load until --soak-deliveries have arrived, --soak-retention clean-up behind it: deliveries/s of the first vs. the last 10 %, store size on disk (not in all: about 15 minutes)",
	"console":         "--console-deliveries stored (delivered, dead-lettered, queued), then median and p99 of the console's pages and the API's lists (not in all: minutes to fill)",
}

// ScenarioHelp returns one line per scenario for usage text.
func ScenarioHelp() string {
	var b strings.Builder
	for _, s := range Scenarios {
		fmt.Fprintf(&b, "  %-15s %s\n", s, scenarioInfo[s])
	}
	return b.String()
}

// Sizes are the scenarios' sizes. DefaultSizes keeps each scenario under a
// minute on a 2-core machine (backlog excepted: see its flag).
type Sizes struct {
	Endpoints    int           `json:"endpoints"`     // endpoints (one subscription each) in the steady, latency, failing, backlog and batch scenarios
	PayloadBytes int           `json:"payload_bytes"` // size of each event's data
	UUIDIDs      bool          `json:"uuid_ids"`      // events have random UUIDv4 ids, not ids in publish order (ids.go)
	Events       int           `json:"events"`        // steady-batch and each run of batch: events
	Batch        int           `json:"batch"`         // events a request in the batch scenarios; batch: max_events_per_batch of its batched run
	Publishers   int           `json:"publishers"`    // concurrent publishers in the batch scenarios
	SingleEvents int           `json:"single_events"` // steady-single: events
	SinglePubs   int           `json:"single_publishers"`
	Rate         float64       `json:"rate"` // latency, failing, backlog: events/s offered
	Duration     time.Duration `json:"-"`    // latency: how long
	RateWorkers  int           `json:"rate_workers"`
	FanoutEvents int           `json:"fanout_events"`
	Fanout       int           `json:"fanout"`
	FailShare    float64       `json:"fail_share"`
	FailFor      time.Duration `json:"-"`
	FailDuration time.Duration `json:"-"`                // failing: how long the rate is offered
	BHEvents     int           `json:"blackhole_events"` // blackhole: events per phase
	BHEndpoints  int           `json:"blackhole_endpoints"`
	BHShare      float64       `json:"blackhole_share"`
	BHTimeout    time.Duration `json:"-"`
	Backlog      int           `json:"backlog"`           // backlog: deliveries pending retry
	BacklogEPs   int           `json:"backlog_endpoints"` // backlog: endpoints the backlog is spread over
	BacklogRetry time.Duration `json:"-"`
	BacklogFresh time.Duration `json:"-"`           // backlog: how long each fresh-traffic phase lasts
	PullEvents   int           `json:"pull_events"` // pull: events
	Consumers    int           `json:"consumers"`   // pull: concurrent consumers
	PullBatch    int           `json:"pull_batch"`  // pull: max_events of each receive
	// soak: deliveries to wait for, and herald serve's --dedup-retention.
	SoakDeliveries int           `json:"soak_deliveries"`
	SoakRetention  time.Duration `json:"-"`
	// console: deliveries stored before its pages are timed.
	ConsoleDeliveries int `json:"console_deliveries"`
	// ordered: how many partition keys its events spread over.
	OrderedKeys int `json:"ordered_keys"`
}

// MarshalJSON writes the sizes with durations as Go duration strings.
func (s Sizes) MarshalJSON() ([]byte, error) {
	type plain Sizes
	return json.Marshal(struct {
		plain
		Duration      string `json:"duration"`
		FailFor       string `json:"fail_for"`
		FailDuration  string `json:"fail_duration"`
		BHTimeout     string `json:"blackhole_timeout"`
		BacklogRetry  string `json:"backlog_retry"`
		BacklogFresh  string `json:"backlog_fresh"`
		SoakRetention string `json:"soak_retention"`
	}{plain(s), s.Duration.String(), s.FailFor.String(), s.FailDuration.String(), s.BHTimeout.String(), s.BacklogRetry.String(), s.BacklogFresh.String(), s.SoakRetention.String()})
}

// DefaultSizes returns the sizes `herald bench` uses without flags.
func DefaultSizes() Sizes {
	return Sizes{
		Endpoints:    10,
		PayloadBytes: 512,
		Events:       100_000,
		Batch:        100,
		Publishers:   4,
		SingleEvents: 40_000,
		SinglePubs:   32,
		Rate:         2000,
		Duration:     20 * time.Second,
		RateWorkers:  64,
		FanoutEvents: 10_000,
		Fanout:       20,
		FailShare:    0.2,
		FailFor:      10 * time.Second,
		FailDuration: 20 * time.Second,
		BHEvents:     150_000,
		BHEndpoints:  20,
		BHShare:      0.1,
		BHTimeout:    5 * time.Second,
		Backlog:      1_000_000,
		BacklogEPs:   10,
		BacklogRetry: 6 * time.Hour,
		BacklogFresh: 10 * time.Second,
		PullEvents:   100_000,
		Consumers:    4,
		PullBatch:    100,
		// Ten million finished deliveries, the figure: about 20
		// minutes at 8,000 deliveries/s.
		SoakDeliveries: 10_000_000,
		// Ten minutes: the store grows unchecked for the first half of a
		// default run, and clean-up (once a minute, in the server) deletes
		// finished events older than that for the second half, behind
		// the load, as in production.
		// Longer than a default run (about 15 minutes at 11,000
		// deliveries/s): the store holds every delivery at the end, so the
		// last window measures the store's size; a shorter retention
		// measures the clean-up's cost as well (docs/benchmarks.md).
		SoakRetention: 30 * time.Minute,
		// The figure: a page answers in under 100 ms with a
		// million deliveries stored.
		ConsoleDeliveries: 1_000_000,
		OrderedKeys:       10_000,
	}
}

func (s Sizes) check() error {
	var bad []string
	pos := func(name string, v int) {
		if v <= 0 {
			bad = append(bad, fmt.Sprintf("%s must be positive (got %d)", name, v))
		}
	}
	pos("--endpoints", s.Endpoints)
	pos("--events", s.Events)
	pos("--publishers", s.Publishers)
	pos("--single-events", s.SingleEvents)
	pos("--single-publishers", s.SinglePubs)
	pos("--rate-workers", s.RateWorkers)
	pos("--fanout-events", s.FanoutEvents)
	pos("--fanout", s.Fanout)
	pos("--blackhole-events", s.BHEvents)
	pos("--blackhole-endpoints", s.BHEndpoints)
	pos("--backlog", s.Backlog)
	pos("--backlog-endpoints", s.BacklogEPs)
	pos("--pull-events", s.PullEvents)
	pos("--soak-deliveries", s.SoakDeliveries)
	pos("--console-deliveries", s.ConsoleDeliveries)
	pos("--ordered-keys", s.OrderedKeys)
	if s.SoakRetention < time.Minute {
		bad = append(bad, fmt.Sprintf("--soak-retention %v: must be at least 1m (herald serve's --dedup-retention)", s.SoakRetention))
	}
	if s.Consumers < 1 || s.Consumers > 1000 {
		bad = append(bad, fmt.Sprintf("--consumers must be from 1 to 1000 (got %d)", s.Consumers))
	}
	if s.PullBatch < 1 || s.PullBatch > 1000 {
		bad = append(bad, fmt.Sprintf("--pull-batch must be from 1 to 1000, a receive's max_events (got %d)", s.PullBatch))
	}
	if s.Batch < 1 || s.Batch > 1000 {
		bad = append(bad, fmt.Sprintf("--batch must be from 1 to 1000 (got %d)", s.Batch))
	}
	if s.PayloadBytes < 0 || s.PayloadBytes > 64<<10 {
		bad = append(bad, "--payload must be from 0 to 65536 bytes")
	}
	if s.Rate <= 0 {
		bad = append(bad, "--rate must be positive")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--duration", s.Duration}, {"--fail-duration", s.FailDuration}, {"--backlog-fresh", s.BacklogFresh}, {"--backlog-retry", s.BacklogRetry}} {
		if d.v <= 0 {
			bad = append(bad, d.name+" must be positive")
		}
	}
	if s.FailFor < 0 {
		bad = append(bad, "--fail-for must not be negative")
	}
	if s.BHTimeout < 100*time.Millisecond || s.BHTimeout > 5*time.Minute {
		bad = append(bad, "--blackhole-timeout must be from 100ms to 5m")
	}
	if s.FailShare <= 0 || s.FailShare >= 1 {
		bad = append(bad, "--fail-share must be between 0 and 1")
	}
	if s.BHShare <= 0 || s.BHShare >= 1 {
		bad = append(bad, "--blackhole-share must be between 0 and 1")
	}
	if s.Endpoints > 1000 || s.Fanout > 1000 || s.BHEndpoints > 1000 || s.BacklogEPs > 1000 {
		bad = append(bad, "at most 1000 endpoints")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// Config is one `herald bench` run.
type Config struct {
	// Herald is the herald binary run as `Herald serve`. A herald serve
	// that exits with status 2 before it listens refused the flags and
	// environment it was given (ServeArgs, ServeEnv): Run ends with that.
	Herald string
	// Scenarios to run, in order.
	Scenarios []string
	Sizes     Sizes
	// Timeout bounds each scenario; 0 takes each scenario's default.
	Timeout time.Duration
	// Store is herald serve's --store: "" or "sqlite" for the embedded store,
	// or a postgres:// URL, in whose database each scenario gets a fresh
	// schema (dropped afterwards unless Keep).
	Store string
	// ServeArgs are more flags for `herald serve`.
	ServeArgs []string
	// ServeEnv are KEY=VALUE pairs added to the server's environment
	// (GOGC=400, GOMAXPROCS=1, ...).
	ServeEnv []string
	// Pprof, when set, is passed to `herald serve --pprof`.
	Pprof string
	// Keep leaves each scenario's directory (store and server log).
	Keep bool
	// TempDir is where scenario directories are made (default os.TempDir()).
	TempDir string
	// Runs is how many times each scenario runs (0: once). With Baseline
	// the herald/baseline pairs alternate: herald, baseline, herald, ...
	Runs int
	// Baseline also runs each scenario that can (steady-batch,
	// steady-single, latency, fanout) on the baseline forwarder, right
	// after Herald, with the same load, and compares the two.
	Baseline bool
	// Forwarder is the command that starts the baseline forwarder, to
	// which "--listen 127.0.0.1:0" is added (default: this executable's
	// ForwarderCommand, which herald-bench has). It is the bench's binary
	// even when Herald is another build: the baseline does not change
	// between the builds compared.
	Forwarder []string
	// Progress receives the progress line and notes (nil: none); ProgressTTY
	// rewrites the line in place.
	Progress    io.Writer
	ProgressTTY bool
}

// ParseScenarios turns "all" or a comma-separated list into scenario names.
func ParseScenarios(s string) ([]string, error) {
	if s == "all" || s == "" {
		return AllScenarios(), nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(Scenarios, name) {
			return nil, fmt.Errorf("unknown scenario %q (want all or one of %s)", name, strings.Join(Scenarios, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// defaultTimeout is each scenario's deadline unless Config.Timeout is set.
func defaultTimeout(name string, s Sizes) time.Duration {
	switch name {
	case "backlog":
		// Building the backlog dominates: allow 2,500 deliveries/s at worst.
		return 3*time.Minute + time.Duration(s.Backlog/2500)*time.Second
	case "latency":
		return 2*time.Minute + 2*s.Duration
	case "failing":
		return 2*time.Minute + 2*s.FailDuration
	case "batch":
		// Two runs of steady-batch's load: allow 1,000 deliveries/s at worst.
		return 2*time.Minute + time.Duration(2*s.Events/1000)*time.Second
	case "nats":
		// steady-batch's load, each delivery a JetStream publish: allow
		// 1,000 deliveries/s at worst.
		return 2*time.Minute + time.Duration(s.Events/1000)*time.Second
	case "ordered":
		// Two runs of steady-batch's load.
		return 2*time.Minute + time.Duration(2*s.Events/1000)*time.Second
	case "schema-enforced", "transformed", "source":
		// Two runs of steady-batch's load.
		return 2*time.Minute + time.Duration(2*s.Events/1000)*time.Second
	case "fanout-filtered":
		// Two runs of steady-batch's load and 1,000 subscriptions created.
		return 3*time.Minute + time.Duration(2*s.Events/1000)*time.Second
	case "rate-limited":
		// Two runs of steady-batch's load, the first at least as long as
		// the limited endpoint's share at its rate.
		return 3*time.Minute + time.Duration(2*s.Events/1000)*time.Second + time.Duration(limitedMax/limitedRate)*time.Second
	case "soak":
		// Allow 2,000 deliveries/s at worst, and the start and the last
		// clean-up.
		return 5*time.Minute + time.Duration(s.SoakDeliveries/2000)*time.Second
	case "console":
		// Allow 2,000 deliveries/s at worst to fill, and the timings.
		return 5*time.Minute + time.Duration(s.ConsoleDeliveries/2000)*time.Second
	case "pull":
		// Allow 1,000 acknowledged deliveries/s at worst.
		return 2*time.Minute + time.Duration(s.PullEvents/1000)*time.Second
	}
	return 3 * time.Minute
}
