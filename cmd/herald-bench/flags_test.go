package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/cliflag/cliflagtest"
)

// badValues are, for every flag of herald bench but --serve-flags (see
// serveRefuses), values it must refuse.
var badValues = map[string][]string{
	"scenario":            {"nope", ""},
	"json":                {"maybe"},
	"json-file":           {"/nonexistent/dir/report.json"},
	"herald":              {"/nonexistent/herald"},
	"keep":                {"maybe"},
	"pprof":               {"bogus:addr"},
	"baseline-pprof":      {"bogus:addr", "nohost"},
	"store":               {"mysql://db", ""},
	"serve-env":           {"GOGC", "=1"},
	"timeout":             {"-1s"},
	"tmp":                 {"/nonexistent/dir"},
	"quiet":               {"maybe"},
	"endpoints":           {"0"},
	"payload":             {"-1", "65537"},
	"events":              {"0"},
	"batch":               {"0", "1001"},
	"publishers":          {"0"},
	"single-events":       {"0"},
	"single-publishers":   {"-1"},
	"rate":                {"0", "NaN", "Inf"},
	"duration":            {"0s"},
	"rate-workers":        {"0"},
	"fanout-events":       {"0"},
	"fanout":              {"0"},
	"fail-share":          {"0", "1", "NaN"},
	"fail-for":            {"-1s"},
	"fail-duration":       {"0s"},
	"blackhole-events":    {"0"},
	"blackhole-endpoints": {"0"},
	"blackhole-share":     {"1", "-Inf"},
	"blackhole-timeout":   {"1ms", "6m"},
	"backlog":             {"0"},
	"backlog-endpoints":   {"0"},
	"backlog-retry":       {"0s"},
	"backlog-fresh":       {"-1s"},
	"pull-events":         {"0", "-1"},
	"consumers":           {"0", "1001"},
	"pull-batch":          {"0", "1001"},
	"baseline":            {"maybe", "2"},
	"uuid-ids":            {"maybe", "2"},
	"runs":                {"0", "-1", "101", "x"},
	"soak-deliveries":     {"0", "-1"},
	"console-deliveries":  {"0", "-1", "x"},
	"ordered-keys":        {"0", "-1", "x"},
	"soak-retention":      {"0s", "59s", "-1m", "soon"},
}

// serveRefuses are --serve-flags and --serve-env values herald serve
// refuses, each with what its refusal names.
var serveRefuses = []struct{ flag, value, names string }{
	{"serve-flags", "--window 0", "--window"},
	{"serve-flags", "--nope", "-nope"},
	{"serve-flags", "extra", "extra"},
	{"serve-flags", "--lease 1s", "--lease"},
	{"serve-env", "HERALD_WINDOW=0", "HERALD_WINDOW"},
}

// checkRefused runs herald-bench with args and fails the test unless it
// exits 2 with a first line of stderr naming the flag, having started
// nothing (cliflagtest.CheckRefused).
func checkRefused(t *testing.T, what string, args []string, names ...string) {
	t.Helper()
	cliflagtest.CheckRefused(t, run, "herald-bench", what, args, names...)
}

// TestBadFlagValues: every flag refuses a bad value with exit status 2 and
// a message naming it, before the bench starts anything. The tables must
// cover every flag.
func TestBadFlagValues(t *testing.T) {
	fs, _ := newBenchFlags(io.Discard)
	fs.VisitAll(func(f *flag.Flag) {
		if len(badValues[f.Name]) == 0 && f.Name != "serve-flags" {
			t.Errorf("no bad values for --%s: every flag must have some", f.Name)
		}
	})
	dir := t.TempDir()
	for name, values := range badValues {
		if fs.Lookup(name) == nil {
			t.Errorf("bad values for --%s, which herald bench does not have", name)
		}
		for _, v := range values {
			// --herald names an existing file (this test binary) unless the
			// flag under test is --herald.
			checkRefused(t, "--"+name, []string{"--herald", os.Args[0], "--quiet", "--tmp", dir, "--" + name + "=" + v}, "-"+name)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("the bench made %v: it started", m)
	}
}

// TestServeRefusesServeFlags: --serve-flags and --serve-env are herald
// serve's to check, and the herald measured refuses a bad one as it
// starts: the run ends at once with exit status 2, the first line of
// stderr naming --serve-flags and herald serve's message naming the flag or
// variable, no report, and nothing left in --tmp.
func TestServeRefusesServeFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts it")
	}
	bin := buildHerald(t)
	for _, tt := range serveRefuses {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"--herald", bin, "--scenario", "steady-batch,steady-single", "--quiet", "--tmp", dir, "--" + tt.flag, tt.value}, &stdout, &stderr)
		cancel()
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != 2 || stdout.Len() > 0 || !strings.Contains(first, "--serve-flags") || !strings.Contains(first, tt.names) {
			t.Errorf("--%s %q: exit %d, stdout %q, stderr:\n%s\nwant exit 2, no report, a first line naming --serve-flags and %s",
				tt.flag, tt.value, code, stdout.String(), stderr.String(), tt.names)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
			t.Errorf("--%s %q: left behind %v", tt.flag, tt.value, m)
		}
	}
}

// TestHelpListsFlags: herald bench -h (herald-bench -h) prints the usage
// with every flag on stdout, nothing on stderr, and exits 0.
func TestHelpListsFlags(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), []string{arg}, &stdout, &stderr)
		if code != 0 || stderr.Len() > 0 || !strings.HasPrefix(stdout.String(), "Usage: herald bench") {
			t.Errorf("herald-bench %s: exit %d, stderr %q; want exit 0 and the usage on stdout", arg, code, stderr.String())
		}
		fs, _ := newBenchFlags(io.Discard)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(stdout.String(), "-"+f.Name) {
				t.Errorf("herald-bench %s: the help lacks -%s", arg, f.Name)
			}
		})
	}
}

// TestHeraldDefault: without --herald, herald-bench measures the herald on
// PATH (this test binary has none beside it), and names --herald when
// there is none.
func TestHeraldDefault(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if got, err := heraldBinary(""); err == nil || !strings.Contains(err.Error(), "--herald") {
		t.Errorf("no herald anywhere: %q, %v; want an error naming --herald", got, err)
	}
	herald := filepath.Join(dir, "herald")
	if err := os.WriteFile(herald, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := heraldBinary(""); err != nil || got != herald {
		t.Errorf("herald on PATH: %q, %v; want %s", got, err, herald)
	}
	if got, err := heraldBinary("/x/herald"); err != nil || got != "/x/herald" {
		t.Errorf("--herald /x/herald: %q, %v", got, err)
	}
}
