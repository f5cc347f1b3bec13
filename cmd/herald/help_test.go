package main

import (
	"context"
	"flag"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
)

// tableCommands returns the names in the commands table, sorted.
func tableCommands() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// commandsToRun returns the names in the commands table, sorted, for a test
// that runs each. herald bench runs herald-bench, which this puts on PATH
// for the test (benchOnPath); under -short, which builds nothing, bench is
// left out.
func commandsToRun(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		return slices.DeleteFunc(tableCommands(), func(name string) bool { return name == "bench" })
	}
	benchOnPath(t)
	return tableCommands()
}

// subcommandArgs are, for each command of the table whose flags belong to
// a subcommand, the arguments that reach those flags (before the flag).
var subcommandArgs = map[string][][]string{
	"filter": {{"filter", "test"}, {"filter", "test", "sub_x"}},
	"policy": {{"policy", "list"}, {"policy", "show"}, {"policy", "show", "sap"}},
}

// TestHelpOnStdout: help asked for, as herald help COMMAND, herald COMMAND
// -h or herald COMMAND --help, for every command of the commands table
// (and its subcommands), goes to stdout with exit status 0 and nothing on
// stderr, and lists the command's flags (herald help | less shows it).
func TestHelpOnStdout(t *testing.T) {
	flagSets := commandsUnderTest(t)
	for _, name := range commandsToRun(t) {
		forms := [][]string{{"help", name}, {name, "-h"}, {name, "--help"}, {name, "-help"}}
		for _, sub := range subcommandArgs[name] {
			forms = append(forms, append(slices.Clone(sub), "-h"), append(slices.Clone(sub), "--help"))
		}
		for _, args := range forms {
			var stdout, stderr strings.Builder
			code := run(context.Background(), args, &stdout, &stderr)
			out := stdout.String()
			if code != 0 || stderr.Len() > 0 || !strings.Contains(out, "Usage") || !strings.Contains(out, "herald "+name) {
				t.Errorf("herald %q: exit %d, stdout %q, stderr %q; want exit 0, the usage of herald %s on stdout and nothing on stderr",
					args, code, firstLines(out), stderr.String(), name)
				continue
			}
			// The flags of the command's flag sets (herald filter test's for
			// herald filter, herald policy show's for herald policy).
			for fsName, c := range flagSets {
				if fsName != name && !strings.HasPrefix(fsName, name+" ") {
					continue
				}
				c.flags(io.Discard).VisitAll(func(f *flag.Flag) {
					if !strings.Contains(out, "-"+f.Name) {
						t.Errorf("herald %q: the help lacks -%s", args, f.Name)
					}
				})
			}
		}
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"help"}, &stdout, &stderr); code != 0 || stderr.Len() > 0 || !strings.HasPrefix(stdout.String(), usage) {
		t.Errorf("herald help: exit %d, stdout %q, stderr %q; want the usage on stdout", code, firstLines(stdout.String()), stderr.String())
	}
}

// TestUsageErrorsOnStderr: a flag no command has, given to each command of
// the table (and to its subcommands), exits 2 with stdout empty and one
// line on stderr, naming the flag and pointing to -h (not the usage, in
// which the line that matters is lost); where a verb or a word is
// expected it is named as not one, and the usage lists what is.
func TestUsageErrorsOnStderr(t *testing.T) {
	const bad = "--no-such-flag"
	for _, name := range commandsToRun(t) {
		forms := [][]string{{name, bad}, {name, bad, "x"}}
		for _, sub := range subcommandArgs[name] {
			forms = append(forms, append(slices.Clone(sub), bad))
		}
		for _, args := range forms {
			var stdout, stderr strings.Builder
			code := run(canceled(), args, &stdout, &stderr)
			first, rest, _ := strings.Cut(stderr.String(), "\n")
			// Where a verb or a word is expected, the flag is taken for
			// one: the usage then lists what is.
			verb := !strings.Contains(first, "flag provided but not defined") && strings.Contains(rest, "Usage")
			oneLine := strings.Contains(first, "-h lists the flags") && rest == ""
			if code != 2 || stdout.Len() > 0 || !strings.Contains(first, "-no-such-flag") || !oneLine && !verb {
				t.Errorf("herald %q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, one line on stderr naming the flag",
					args, code, firstLines(stdout.String()), firstLines(stderr.String()))
			}
		}
	}
	for _, args := range [][]string{nil, {"help", "nope"}, {"nope"}} {
		var stdout, stderr strings.Builder
		if code := run(canceled(), args, &stdout, &stderr); code != 2 || stdout.Len() > 0 || !strings.Contains(stderr.String(), "Usage") {
			t.Errorf("herald %q: exit %d, stdout %q; want exit 2 and the usage on stderr", args, code, firstLines(stdout.String()))
		}
	}
}

// firstLines returns s's first three lines, for a failure message.
func firstLines(s string) string {
	lines := strings.SplitN(s, "\n", 4)
	return strings.Join(lines[:min(3, len(lines))], "\n")
}
