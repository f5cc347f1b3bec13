// Package cliflagtest checks, for the tests of Herald's two binaries
// (cmd/herald, cmd/herald-bench), that a command refuses a bad flag the
// way package cliflag says: exit status 2, the flag named on the first line
// of stderr, nothing started.
package cliflagtest

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Run is a binary's entry point as its tests call it: the arguments after
// the binary's name, and the exit status.
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Canceled is a context that has ended: a command that gets past checking
// its flags stops at once (or fails), so it can never pass for one that
// refused them.
func Canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// CheckRefused runs binary's run with args under Canceled and fails the
// test unless it exits 2 with a first line of stderr naming one of names
// (the flag, or its variable), having started nothing (no "listening" on
// stdout).
func CheckRefused(t *testing.T, run Run, binary, what string, args []string, names ...string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(Canceled(), args, &stdout, &stderr)
	first, _, _ := strings.Cut(stderr.String(), "\n")
	named := false
	for _, n := range names {
		named = named || strings.Contains(first, n)
	}
	if code != 2 || !named || strings.Contains(stdout.String(), "listening") {
		t.Errorf("%s: %s %q: exit %d, first line of stderr %q, stdout %q; want exit 2 naming %s",
			what, binary, args, code, first, stdout.String(), strings.Join(names, " or "))
	}
}
