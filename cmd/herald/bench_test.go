package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builds.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// builds are the binaries the launcher's tests run, each built once for all
// the tests of this binary into dir (which TestMain removes): herald and
// herald-bench side by side in dir/both, herald alone in dir/alone, and
// herald-bench alone in dir/path (for PATH).
var builds struct {
	dir                          string
	once, benchOnce              sync.Once
	heraldBin, aloneBin, pathDir string
	err, benchErr                error
}

// buildHerald returns herald built in a directory with herald-bench beside
// it, and a copy of it in a directory of its own.
func buildHerald(t *testing.T) (beside, alone string) {
	t.Helper()
	builds.once.Do(func() {
		both := filepath.Join(builds.dir, "both")
		builds.heraldBin = filepath.Join(both, "herald")
		builds.aloneBin = filepath.Join(builds.dir, "alone", "herald")
		builds.err = goBuild(builds.heraldBin, ".")
		if builds.err == nil {
			builds.err = goBuild(filepath.Join(both, benchBinary), "../herald-bench")
		}
		if builds.err == nil {
			builds.err = copyFile(builds.heraldBin, builds.aloneBin)
		}
	})
	if builds.err != nil {
		t.Fatal(builds.err)
	}
	return builds.heraldBin, builds.aloneBin
}

// benchOnPath puts a directory holding only herald-bench first on PATH for
// the test, so that herald bench run in this process (whose executable has
// none beside it) finds it there.
func benchOnPath(t *testing.T) {
	t.Helper()
	builds.benchOnce.Do(func() {
		builds.pathDir = filepath.Join(builds.dir, "path")
		builds.benchErr = goBuild(filepath.Join(builds.pathDir, benchBinary), "../herald-bench")
	})
	if builds.benchErr != nil {
		t.Fatal(builds.benchErr)
	}
	t.Setenv("PATH", builds.pathDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func goBuild(out, pkg string) error {
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return fmt.Errorf("go build -o %s %s: %v\n%s", out, pkg, err, b)
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	return err
}

// pathWithoutBench is PATH without its directories that hold a
// herald-bench (the go command and the C compiler stay: a go build from
// the launcher then shares the test's build cache).
func pathWithoutBench() string {
	var keep []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, benchBinary)); err != nil {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// runBinary runs the herald binary bin with args in dir with PATH set to
// path, and returns its exit status, stdout and stderr.
func runBinary(t *testing.T, bin, dir, path string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestProductionBinaryLinksNoBench: the herald binary links neither the
// benchmark (internal/bench, herald-bench's) nor the testing package.
func TestProductionBinaryLinksNoBench(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps: %d packages", len(deps))
	}
	for _, p := range deps {
		if p == "testing" || p == modulePath+"/internal/bench" || strings.HasPrefix(p, modulePath+"/internal/bench/") {
			t.Errorf("herald links %s", p)
		}
	}
}

// TestBenchLauncherRuns: herald bench runs the herald-bench beside herald
// with --herald set to that herald: a tiny steady-batch measures it (the
// report names it), the report on herald bench's stdout; help goes to
// stdout with status 0, and a usage error to stderr with status 2.
func TestBenchLauncherRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs a server")
	}
	herald, _ := buildHerald(t)
	tmp := t.TempDir()
	code, stdout, stderr := runBinary(t, herald, tmp, pathWithoutBench(), "bench", "--scenario", "steady-batch", "--events", "300",
		"--endpoints", "2", "--batch", "50", "--publishers", "2", "--json", "--quiet", "--tmp", tmp, "--timeout", "2m")
	var rep struct {
		Herald  string `json:"herald"`
		Results []struct {
			OK     bool `json:"ok"`
			Phases []struct {
				Deliveries int64 `json:"deliveries"`
			} `json:"phases"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil {
		t.Fatalf("exit %d (%v)\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if rep.Herald != herald || len(rep.Results) != 1 || !rep.Results[0].OK || rep.Results[0].Phases[0].Deliveries != 300 {
		t.Errorf("herald %q, results %+v; want %s measured, 300 deliveries", rep.Herald, rep.Results, herald)
	}
	for _, args := range [][]string{{"bench", "-h"}, {"help", "bench"}} {
		code, stdout, stderr = runBinary(t, herald, tmp, pathWithoutBench(), args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: herald bench") || !strings.Contains(stdout, "-baseline") {
			t.Errorf("herald %q: exit %d, stdout %q, stderr %q; want the usage on stdout", args, code, firstLines(stdout), stderr)
		}
	}
	code, stdout, stderr = runBinary(t, herald, tmp, pathWithoutBench(), "bench", "--runs", "0")
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "herald bench: --runs 0: must be from 1 to 100") {
		t.Errorf("herald bench --runs 0: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestBenchLauncherFinds: a herald with no herald-bench beside it runs the
// one on PATH; without one there, it builds herald-bench from the source
// tree it is run in; elsewhere it exits 2 saying how to build one.
func TestBenchLauncherFinds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	_, alone := buildHerald(t)
	benchOnPath(t)
	code, stdout, stderr := runBinary(t, alone, t.TempDir(), builds.pathDir, "bench", "-h")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: herald bench") {
		t.Errorf("herald-bench on PATH: exit %d, stdout %q, stderr %q", code, firstLines(stdout), stderr)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runBinary(t, alone, filepath.Join(root, "docs"), pathWithoutBench(), "bench", "-h")
	if code != 0 || !strings.Contains(stderr, "building it from the source tree "+root) || !strings.HasPrefix(stdout, "Usage: herald bench") {
		t.Errorf("in the source tree: exit %d, stdout %q, stderr %q", code, firstLines(stdout), stderr)
	}
	code, stdout, stderr = runBinary(t, alone, t.TempDir(), pathWithoutBench(), "bench", "-h")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "herald-bench, which is not beside "+alone) ||
		!strings.Contains(stderr, "go build -o "+filepath.Join(filepath.Dir(alone), benchBinary)+" ./cmd/herald-bench") {
		t.Errorf("nowhere: exit %d, stdout %q, stderr %q; want exit 2 saying how to build herald-bench", code, stdout, stderr)
	}
}

// TestBenchLauncherPassesSignals: SIGTERM sent to herald bench alone (not
// its process group) reaches herald-bench, which stops its scenario, cleans
// up and reports it: herald bench exits 1 with the report of a scenario
// that did not finish, and nothing is left in --tmp.
func TestBenchLauncherPassesSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs a server")
	}
	herald, _ := buildHerald(t)
	tmp := t.TempDir()
	cmd := exec.Command(herald, "bench", "--scenario", "steady-batch", "--events", "5000000", "--endpoints", "1",
		"--json", "--quiet", "--tmp", tmp, "--timeout", "5m")
	cmd.Env = append(os.Environ(), "PATH="+pathWithoutBench())
	// A process group of its own, which the test kills whatever happens:
	// a herald-bench the signal did not reach is not left running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The scenario has started when its directory's server log exists.
	eventually(t, "the scenario's herald serve to start", func() bool {
		m, _ := filepath.Glob(filepath.Join(tmp, "herald-bench-*", "herald.log"))
		return len(m) > 0
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("herald bench did not end within a minute of SIGTERM\nstderr:\n%s", stderr.String())
	}
	var rep struct {
		Results []struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); cmd.ProcessState.ExitCode() != 1 || err != nil || len(rep.Results) != 1 || rep.Results[0].OK {
		t.Errorf("exit %d (%v), report %+v; want 1 and the scenario not finished\nstderr:\n%s", cmd.ProcessState.ExitCode(), err, rep, stderr.String())
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}

// eventually checks cond every few milliseconds until it holds, failing
// the test after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for start := time.Now(); !cond(); <-tick.C {
		if time.Since(start) > time.Minute {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
