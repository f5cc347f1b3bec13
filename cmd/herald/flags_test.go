package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/cliflag/cliflagtest"
)

// command is one herald command for the flag tests: how to run it with
// extra arguments, and its flag set.
type command struct {
	args  []string // before the flags under test
	flags func(w io.Writer) *flag.FlagSet
	env   bool // its flags are also HERALD_* variables
}

func commandsUnderTest(t *testing.T) map[string]command {
	dir := t.TempDir()
	return map[string]command{
		"serve": {[]string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data")},
			func(w io.Writer) *flag.FlagSet { fs, _ := newServeFlags(w); return fs }, true},
		"sink": {[]string{"sink", "--addr", "127.0.0.1:0"},
			func(w io.Writer) *flag.FlagSet { fs, _ := newSinkFlags(w); return fs }, false},
		"policy show": {[]string{"policy", "show", "eventgrid"},
			func(w io.Writer) *flag.FlagSet { fs, _, _ := newPolicyShowFlags(w); return fs }, false},
		"migrate": {[]string{"migrate", "--store", "postgres://127.0.0.1:1/none", "--timeout", "1s"},
			func(w io.Writer) *flag.FlagSet { fs, _, _ := newMigrateFlags(w); return fs }, true},
		"filter test": {[]string{"filter", "test", "sub_x", "--api", "http://127.0.0.1:1"},
			func(w io.Writer) *flag.FlagSet { fs, _, _ := newFilterFlags(w); return fs }, false},
		"pull": {[]string{"pull", "sub_x", "--api", "http://127.0.0.1:1"},
			func(w io.Writer) *flag.FlagSet { fs, _, _ := newPullFlags(w); return fs }, false},
		"version": {[]string{"version"},
			func(w io.Writer) *flag.FlagSet { fs, _ := newVersionFlags(w); return fs }, false},
	}
}

// badValues are, for every flag of every command, values it must refuse.
var badValues = map[string]map[string][]string{
	"serve": {
		"addr":                            {"bogus", "127.0.0.1:nope", ""},
		"tls-cert":                        {"/nonexistent/cert.pem"}, // without --tls-key
		"tls-key":                         {"/nonexistent/key.pem"},  // without --tls-cert
		"outbound-ca-file":                {"/nonexistent/ca.pem"},
		"data":                            {""},
		"store":                           {"", "mysql://db"},
		"node-id":                         {"", "a\nb", strings.Repeat("n", 201)},
		"lease":                           {"0s", "-1s", "2s", "soon"},
		"db-max-conns":                    {"-3", "1", "x"},
		"db-statement-timeout":            {"0s", "-1s"},
		"log-format":                      {"xml"},
		"log-level":                       {"nonsense", "info+2", "DEBUG-4", ""},
		"dedup-retention":                 {"-1h", "0s", "59s"},
		"endpoint-max-concurrency":        {"0", "-1"},
		"max-in-flight":                   {"0", "-5"},
		"max-connections":                 {"0", "-1", "x"},
		"max-connections-per-client":      {"-1", "x"},
		"max-receives-per-account":        {"-1", "2.5"},
		"window":                          {"0", "-1", "1e3"},
		"max-subscriptions-per-account":   {"-1", "x"},
		"max-fanout":                      {"-1", "1e5"},
		"max-jobs-per-account":            {"-1", "x"},
		"job-retention":                   {"-1h", "0s", "59s"},
		"max-match-work":                  {"-1", "1e7", "x"},
		"max-schema-work":                 {"-1", "1e6", "x"},
		"shutdown-grace":                  {"-1s", "0s"},
		"pprof":                           {"bogus:addr", "nocolon"},
		"health-window":                   {"0s", "59s"},
		"health-min-attempts":             {"0", "-1"},
		"health-failure-rate":             {"0", "-0.1", "1.5", "NaN", "Inf", "x"},
		"health-disable-consecutive":      {"0"},
		"health-freeze-stale-consecutive": {"0"},
		"health-freeze-stale-after":       {"0s", "-1h"},
		"health-freeze-consecutive":       {"-1"},
		"health-probe-interval":           {"0s"},
		"probation-after":                 {"-1"},
		"probation-initial":               {"0s", "-1s"},
		"probation-max":                   {"1s"},
		"allow-private-destinations":      {"maybe", ""},
		"auth":                            {"maybe", "", "OFF"},
		"public-url":                      {"ftp://x", "bogus"},
		"otel-endpoint":                   {"ftp://collector", "collector:4318", "http://", "http://h:4318/?x=1"},
		"allow-destinations":              {"nope", "10.0.0.0/33", "10.1.2.3/8", "10.0.0.0/8,,fd00::/8", "fe80::1%eth0", "example.com/24"},
	},
	"sink": {
		"secret":     {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_!!"},
		"public-key": {"whpk_c2hvcnQ=", "key"},
		"addr":       {"bogus", "localhost:nope"},
		"status":     {"0", "199", "600", "x"},
		"fail-first": {"-1"},
		"delay":      {"-1s", "soon"},
		"quiet":      {"maybe"},
		"validate":   {"maybe", "2"},
	},
	"policy show": {
		"json": {"maybe"},
		"spec": {"not json", `{"bogus":1}`, `{"max_attempts":31}`, `{"preset":"sap"}`, `{"max_attempts":3,"max_attempts":4}`, `{"Max_Attempts":3}`, `{"max_attempts":3} {}`},
	},
	"migrate": {
		"store":   {"", "sqlite", "mysql://db"},
		"timeout": {"0s", "-1m"},
	},
	"version": {
		"json": {"maybe"},
	},
	"filter test": {
		"api":   {"bogus", "ftp://x", ""},
		"data":  {""},
		"event": {"", "/nonexistent/event.json"},
	},
	"pull": {
		"api":           {"bogus", "ftp://x", ""},
		"data":          {""},
		"max-events":    {"0", "1001", "x"},
		"max-wait":      {"-1s", "61s"},
		"lock-duration": {"5s", "301s"},
		"count":         {"-1"},
		"no-ack":        {"maybe"},
	},
}

// canceled is a context that has ended (cliflagtest.Canceled).
var canceled = cliflagtest.Canceled

// checkRefused runs herald with args and fails the test unless it exits 2
// with a first line of stderr naming the flag (or its variable), having
// started nothing (cliflagtest.CheckRefused).
func checkRefused(t *testing.T, what string, args []string, names ...string) {
	t.Helper()
	cliflagtest.CheckRefused(t, run, "herald", what, args, names...)
}

// TestBadFlagValues: every flag of every command refuses a bad value, given
// on the command line or (serve, migrate) in its HERALD_* variable, with
// exit status 2 and a message naming it, before the command starts
// anything. The table must cover every flag.
func TestBadFlagValues(t *testing.T) {
	cmds := commandsUnderTest(t)
	for name, c := range cmds {
		var missing []string
		c.flags(io.Discard).VisitAll(func(f *flag.Flag) {
			if len(badValues[name][f.Name]) == 0 {
				missing = append(missing, f.Name)
			}
		})
		if len(missing) > 0 {
			t.Errorf("herald %s: no bad values for --%s: every flag must have some", name, strings.Join(missing, ", --"))
		}
	}
	for name, flags := range badValues {
		c, ok := cmds[name]
		if !ok {
			t.Fatalf("bad values for unknown command %q", name)
		}
		for flagName, values := range flags {
			for _, v := range values {
				args := append(append([]string{}, c.args...), "--"+flagName+"="+v)
				checkRefused(t, name, args, "-"+flagName)
				if !c.env {
					continue
				}
				t.Run("env/"+flagName, func(t *testing.T) {
					t.Setenv(envName(flagName), v)
					checkRefused(t, name+" (environment)", without(c.args, "--"+flagName), "-"+flagName, envName(flagName))
				})
			}
		}
	}
	if data := cmds["serve"].args[4]; !strings.HasSuffix(data, "data") {
		t.Fatalf("serve's arguments changed: %q", cmds["serve"].args)
	} else if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("herald serve made its data directory (%v): it started", err)
	}
}

// without returns args without the flag name and the value after it.
func without(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == name {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// TestStrayArguments: every command refuses arguments it does not take
// (herald bench's are herald-bench's to refuse: see tableCommands).
func TestStrayArguments(t *testing.T) {
	strays := [][]string{
		{"serve", "extra"}, {"serve", "--window", "5", "extra"}, {"sink", "extra"},
		{"migrate", "--store", "postgres://127.0.0.1:1/x", "extra"}, {"version", "extra"}, {"--version", "extra"},
		{"policy", "list", "extra"}, {"policy", "show", "sap", "pubsub"}, {"help", "serve", "extra"}, {"help", "nope"},
	}
	if slices.Contains(commandsToRun(t), "bench") {
		strays = append(strays, []string{"bench", "extra"})
	}
	for _, args := range strays {
		checkRefused(t, "stray argument", args, "extra", "pubsub", "nope")
	}
}

// TestGoodFlagsPass: the checks refuse only what is bad (the defaults and
// ordinary values pass).
func TestGoodFlagsPass(t *testing.T) {
	fs, o := newServeFlags(io.Discard)
	if err := fs.Parse([]string{"--window", "1", "--db-max-conns", "0", "--pprof", "localhost:6060", "--node-id", "node a",
		"--probation-after", "0", "--health-failure-rate", "1", "--addr", ":http"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.config(); err != nil {
		t.Errorf("serve: %v", err)
	}
	for _, v := range []string{"", "10.0.0.0/8", " 10.0.0.0/8 , fd00::/8,169.254.169.254", "::ffff:127.0.0.1", "0.0.0.0/0"} {
		fs, o := newServeFlags(io.Discard)
		if err := fs.Parse([]string{"--allow-private-destinations", "--allow-destinations", v}); err != nil {
			t.Errorf("serve --allow-destinations %q: %v", v, err)
			continue
		}
		cfg, err := o.config()
		if err != nil || !cfg.Attempting.Destinations.AllowPrivate || (v != "") != (len(cfg.Attempting.Destinations.Allow) > 0) {
			t.Errorf("serve --allow-destinations %q: %+v, %v", v, cfg.Attempting.Destinations, err)
		}
	}
	if _, _, ok := parseSinkFlags([]string{"--addr", ":0", "--fail-first", "0"}, io.Discard, io.Discard); !ok {
		t.Error("sink refused good flags")
	}
}

// TestUsageListsCommands: herald --help names every command, and every flag
// of the commands with few of them.
func TestUsageListsCommands(t *testing.T) {
	var stdout strings.Builder
	if code := run(context.Background(), []string{"--help"}, &stdout, io.Discard); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, name := range tableCommands() {
		if !strings.Contains(stdout.String(), "herald "+name) {
			t.Errorf("usage lacks herald %s:\n%s", name, stdout.String())
		}
	}
	for name, c := range commandsUnderTest(t) {
		fs := c.flags(io.Discard)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		fs.VisitAll(func(f *flag.Flag) {
			if (n <= 5 || name == "serve" && f.Name == "store") && !strings.Contains(stdout.String(), "--"+f.Name) {
				t.Errorf("usage lacks herald %s --%s", name, f.Name)
			}
		})
	}
}

// TestBadURLFlagsHideTheirPassword: a refused URL flag is named, with the
// password of the URL given redacted.
func TestBadURLFlagsHideTheirPassword(t *testing.T) {
	const pw = "SecretPw9"
	cmds := commandsUnderTest(t)
	for _, c := range []struct{ cmd, flag, value string }{
		{"serve", "store", "mysql://usr:" + pw + "@db.example/x"},
		{"serve", "public-url", "ftp://usr:" + pw + "@h.example/"},
		{"serve", "otel-endpoint", "ftp://usr:" + pw + "@h.example/"},
		{"pull", "api", "ftp://usr:" + pw + "@h.example/"},
	} {
		args := append(append([]string{}, cmds[c.cmd].args...), "--"+c.flag+"="+c.value)
		checkRefused(t, c.cmd, args, "-"+c.flag)
		var stdout, stderr strings.Builder
		run(canceled(), args, &stdout, &stderr)
		if strings.Contains(stderr.String(), pw) || !strings.Contains(stderr.String(), "usr:xxxxx@") {
			t.Errorf("herald %q: stderr %q; want the URL with its password redacted", args, stderr.String())
		}
	}
}

// TestOTelEnvironment: without --otel-endpoint, the standard
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT turns
// tracing on; a value that is not an http(s) URL exits 2 naming the
// variable; --otel-endpoint, given, is the one checked and used.
func TestOTelEnvironment(t *testing.T) {
	args := commandsUnderTest(t)["serve"].args
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "collector:4318")
			checkRefused(t, "serve", args, name)
			fs, o := newServeFlags(io.Discard)
			if err := fs.Parse([]string{"--otel-endpoint", "http://localhost:4318"}); err != nil {
				t.Fatal(err)
			}
			if cfg, err := o.config(); err != nil || !cfg.Tracing.Enabled() {
				t.Fatalf("--otel-endpoint beside a bad %s: %v (tracing on: %v)", name, err, cfg.Tracing.Enabled())
			}
			t.Setenv(name, "http://localhost:4318")
			fs, o = newServeFlags(io.Discard)
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			if cfg, err := o.config(); err != nil || !cfg.Tracing.Enabled() {
				t.Fatalf("%s set: %v (tracing on: %v)", name, err, cfg.Tracing.Enabled())
			}
		})
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "") // empty: not set
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	fs, o := newServeFlags(io.Discard)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg, err := o.config(); err != nil || cfg.Tracing.Enabled() {
		t.Fatalf("no endpoint anywhere: %v (tracing on: %v)", err, cfg.Tracing.Enabled())
	}
}
