// Package process holds Herald's process tests: they build the
// herald binary, run it as a child process on a loopback port with its
// embedded store in a temporary directory, SIGKILL it under load, start it
// again on the same directory and count what reaches a real HTTP receiver.
//
// The binary is built once per test run, without -race, from the module
// that contains this package. The tests skip under -short.
package process

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heraldBin is the path of the binary TestMain built; empty under -short.
var heraldBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "herald-process-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "process tests:", err)
		os.Exit(1)
	}
	bin, err := buildHerald(dir)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "process tests: building herald:", err)
		os.Exit(1)
	}
	heraldBin = bin
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildHerald runs `go build -o DIR/herald ./cmd/herald` in the module root
// (found with `go env GOMOD`) and returns the binary's path.
func buildHerald(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside a module")
	}
	bin := filepath.Join(dir, "herald")
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/herald")
	cmd.Dir = filepath.Dir(gomod)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, buf.String())
	}
	return bin, nil
}
