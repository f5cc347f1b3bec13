// Package datadriven runs tests written as data files, in the style of
// cockroachdb/pebble's datadriven: a file is a sequence of commands, each
// followed by a line "----" and the output it must produce, up to a blank
// line. Lines starting with "#" and blank lines between cases are comments.
// Lines between a command and its "----" are the command's input, kept as
// written. A test run with Rewrite set writes the actual outputs back into
// the file instead of comparing (review the diff before committing it: a
// data file must state the rules, not whatever the code does).
//
//	observe at=+1s fail
//	----
//	enabled -> probation (10 consecutive failures)
package datadriven

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Rewrite is the -rewrite flag of the test binaries that import this
// package.
var Rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of the testdata files with the actual ones")

// Case is one command of a file.
type Case struct {
	Line  int    // the command's line number
	Cmd   string // the command line
	Input []string
	want  []string
	got   string
	text  []string // comments and blank lines kept verbatim, when Cmd is ""
}

// RunFile runs every command of the file at path through do, in order, and
// fails the test for each output that differs from the file's (or, with
// -rewrite, writes the outputs back). An error from do stops the file. An
// output may not hold a blank line, which the format cannot represent.
func RunFile(t *testing.T, path string, do func(c *Case) (string, error)) {
	t.Helper()
	cases := parse(t, path)
	for _, c := range cases {
		if c.Cmd == "" {
			continue
		}
		got, err := do(c)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, c.Line, c.Cmd, err)
		}
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s:%d: output has a blank line, which the file format cannot hold:\n%s", path, c.Line, got)
		}
		c.got = got
		if want := strings.Join(c.want, "\n"); got != want && !*Rewrite {
			t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", path, c.Line, c.Cmd, want, got)
		}
	}
	if *Rewrite {
		write(t, path, cases)
	}
}

func parse(t *testing.T, path string) []*Case {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var out []*Case
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			if n := len(out); n > 0 && out[n-1].Cmd == "" {
				out[n-1].text = append(out[n-1].text, l)
			} else {
				out = append(out, &Case{text: []string{l}})
			}
			i++
			continue
		}
		c := &Case{Line: i + 1, Cmd: l}
		i++
		for ; i < len(lines) && lines[i] != "----"; i++ {
			c.Input = append(c.Input, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: %q has no ----", path, c.Line, c.Cmd)
		}
		i++ // ----
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			c.want = append(c.want, lines[i])
		}
		out = append(out, c)
	}
	return out
}

func write(t *testing.T, path string, cases []*Case) {
	t.Helper()
	var b strings.Builder
	for _, c := range cases {
		if c.Cmd == "" {
			for _, l := range c.text {
				fmt.Fprintln(&b, l)
			}
			continue
		}
		fmt.Fprintln(&b, c.Cmd)
		for _, l := range c.Input {
			fmt.Fprintln(&b, l)
		}
		fmt.Fprintln(&b, "----")
		if c.got != "" {
			fmt.Fprintln(&b, c.got)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Args are a command's arguments: name=value pairs, flags (the names the
// command declares), and positional arguments (everything else, in order).
// Reading an argument marks it used; Unused reports the ones no reader
// asked for, which are typos.
type Args struct {
	kv    map[string]string
	flags map[string]bool
	Pos   []string
	used  map[string]bool
}

// ParseArgs splits fields; flags names the words that are flags.
func ParseArgs(fields []string, flags ...string) Args {
	a := Args{kv: map[string]string{}, flags: map[string]bool{}, used: map[string]bool{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else if slices.Contains(flags, f) {
			a.flags[f] = true
		} else {
			a.Pos = append(a.Pos, f)
		}
	}
	return a
}

// Flag reports whether the flag was given.
func (a Args) Flag(name string) bool { a.used[name] = true; return a.flags[name] }

// Value returns the value of name=value, if given.
func (a Args) Value(name string) (string, bool) {
	a.used[name] = true
	v, ok := a.kv[name]
	return v, ok
}

// Names returns the names of the name=value arguments, sorted.
func (a Args) Names() []string {
	names := make([]string, 0, len(a.kv))
	for k := range a.kv {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Unused reports an argument no reader asked for.
func (a Args) Unused() error {
	for k := range a.kv {
		if !a.used[k] {
			return fmt.Errorf("unknown argument %s=", k)
		}
	}
	for k := range a.flags {
		if !a.used[k] {
			return fmt.Errorf("unknown argument %s", k)
		}
	}
	return nil
}

// Offset reads name=+DURATION as a time after start; without the argument
// it is def, or an error when required.
func (a Args) Offset(name string, start time.Time, required bool, def time.Time) (time.Time, error) {
	v, ok := a.Value(name)
	if !ok {
		if required {
			return time.Time{}, fmt.Errorf("%s= is required", name)
		}
		return def, nil
	}
	if !strings.HasPrefix(v, "+") {
		return time.Time{}, fmt.Errorf("%s=%s: want an offset from the start, +DURATION", name, v)
	}
	d, err := time.ParseDuration(v[1:])
	if err != nil {
		return time.Time{}, fmt.Errorf("%s=%s: %v", name, v, err)
	}
	return start.Add(d), nil
}

// Int reads name=N; without the argument it is def.
func (a Args) Int(name string, def int) (int, error) {
	v, ok := a.Value(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: %v", name, v, err)
	}
	return n, nil
}

// Walk runs fn as a subtest, named after the file, for each file matching
// pattern (a filepath.Glob pattern, such as "testdata/sched*"); no file is
// an error.
func Walk(t *testing.T, pattern string, fn func(t *testing.T, path string)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no files match %s", pattern)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) { fn(t, path) })
	}
}
