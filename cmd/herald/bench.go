package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// The benchmark is a binary of its own, herald-bench (cmd/herald-bench), so
// that this one does not carry it (internal/bench, its load generator,
// receivers and baseline forwarder). `herald bench` is its launcher: the
// command performance is measured with stays what the docs say.
const (
	// benchBinary is the benchmark's binary, looked for beside this
	// executable and on PATH.
	benchBinary = "herald-bench"
	// benchPackage is the benchmark's command, built from the source tree
	// when no herald-bench is found.
	benchPackage = "github.com/herald-events/herald/cmd/herald-bench"
	// modulePath is this module's path, which the working directory's
	// go.mod must declare for herald bench to build herald-bench there.
	modulePath = "github.com/herald-events/herald"
)

// benchMain implements `herald bench`: it runs herald-bench with --herald
// set to this executable, then args (so the herald measured is this one
// unless args name another with --herald), with this process's standard
// input and the given stdout and stderr, and returns its exit status.
// herald-bench is the one beside this executable, else the one on PATH,
// else one built (go build, into a temporary directory removed afterwards)
// from the Herald source tree the working directory is in; with none of
// them it says how to get one and returns 2. SIGINT and SIGTERM that reach
// this process are passed on to herald-bench, which stops its servers and
// reports what it measured.
func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "herald bench: finding this executable (the herald to measure):", err)
		return 2
	}
	bin, cleanup, err := findBench(ctx, self, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "herald bench:", err)
		return 2
	}
	defer cleanup()
	cmd := exec.Command(bin, append([]string{"--herald", self}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "herald bench:", err)
		return 2
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	default: // killed by a signal, or not waited for
		fmt.Fprintf(stderr, "herald bench: %s: %v\n", bin, err)
		return 1
	}
}

// findBench returns the herald-bench to run for the herald at self, and
// what to call once it has run: the one beside self, else the one on PATH,
// else one built from the source tree of the working directory.
func findBench(ctx context.Context, self string, stderr io.Writer) (bin string, cleanup func(), err error) {
	nothing := func() {}
	beside := filepath.Join(filepath.Dir(self), benchBinary)
	if isExecutableFile(beside) {
		return beside, nothing, nil
	}
	if p, err := exec.LookPath(benchBinary); err == nil {
		return p, nothing, nil
	}
	root := sourceTree(ctx)
	if root == "" {
		return "", nothing, fmt.Errorf("the benchmark is the command %s, which is not beside %s nor on PATH, and the working directory "+
			"is not in Herald's source tree to build it from; in a checkout of this version, go build -o %s ./cmd/herald-bench",
			benchBinary, self, beside)
	}
	dir, err := os.MkdirTemp("", "herald-bench-build-")
	if err != nil {
		return "", nothing, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, benchBinary)
	fmt.Fprintf(stderr, "herald bench: no %s beside %s nor on PATH: building it from the source tree %s\n", benchBinary, self, root)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, benchPackage)
	build.Dir, build.Stdout, build.Stderr = root, stderr, stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nothing, fmt.Errorf("go build %s: %v", benchPackage, err)
	}
	return bin, cleanup, nil
}

// sourceTree returns the root of the Herald source tree the working
// directory is in (the directory of the go.mod that declares modulePath),
// or "" when it is in none or there is no go command.
func sourceTree(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return ""
	}
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			if strings.Trim(fields[1], `"`) == modulePath {
				return filepath.Dir(gomod)
			}
			return ""
		}
	}
	return ""
}

// isExecutableFile reports whether path is a regular file someone may
// execute.
func isExecutableFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
