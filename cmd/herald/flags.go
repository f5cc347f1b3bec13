package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/herald-events/herald/internal/cliflag"
)

// parseArgs parses args into fs; every command's flags are parsed here,
// so that help goes where it is asked for (cliflag.Parse: help to stdout,
// exit 0; a usage error to stderr, exit 2). When ok is false the command
// exits with code.
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	return cliflag.Parse(fs, args, stdout, stderr)
}

// isHelpFlag reports whether arg asks for help as the flag package takes it
// (-h, -help, --h, --help), for commands that look at their first argument
// before parsing flags (herald, herald policy, herald filter).
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// parseFlags parses a command's arguments, which are flags only (see
// parseArgs): a command that takes no arguments refuses any left after
// them. With env, every flag not set on the command line then takes the
// value of its environment variable (see applyEnv). It returns the flags
// set from the environment, by name. When ok is false the command exits
// with code: 0 after -h, 2 after a usage error (already printed to stderr).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, env bool) (fromEnv map[string]string, code int, ok bool) {
	if code, ok := cliflag.ParseFlagsOnly(fs, args, stdout, stderr); !ok {
		return nil, code, false
	}
	if !env {
		return nil, 0, true
	}
	fromEnv, err := applyEnv(fs, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return nil, 2, false
	}
	return fromEnv, 0, true
}

// applyEnv gives the flags named (every flag when none is named) that are
// not set on the command line the value of their environment variable, as
// lookup finds it: HERALD_ followed by the flag name in upper case with
// dashes as underscores (--health-window → HERALD_HEALTH_WINDOW). It
// returns the flags it set, by name, with their variable's assignment. A
// variable that is set but empty sets its flag to the empty value.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool), names ...string) (map[string]string, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fromEnv := map[string]string{}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil || (len(names) > 0 && !slices.Contains(names, f.Name)) {
			return
		}
		name := envName(f.Name)
		if v, ok := lookup(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q (--%s): %v", name, v, f.Name, e)
			}
			fromEnv[f.Name] = fmt.Sprintf("%s=%q", name, v)
		}
	})
	return fromEnv, err
}

func envName(flagName string) string {
	return "HERALD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// flagRef matches a flag named in a message.
var flagRef = regexp.MustCompile(`--([a-z0-9-]+)`)

// usageError prints a bad setting and returns exit status 2. The flags the
// message names whose values came from the environment are followed by
// the variable that set them.
func usageError(stderr io.Writer, command string, err error, fromEnv map[string]string) int {
	msg := err.Error()
	var from []string
	seen := map[string]bool{}
	for _, m := range flagRef.FindAllStringSubmatch(msg, -1) {
		if v, ok := fromEnv[m[1]]; ok && !seen[m[1]] {
			seen[m[1]] = true
			from = append(from, v)
		}
	}
	if len(from) > 0 {
		sort.Strings(from)
		msg += " (set by " + strings.Join(from, ", ") + ")"
	}
	fmt.Fprintf(stderr, "%s: %s\n", command, msg)
	return 2
}

// checkAddr reports whether addr is a HOST:PORT that net.Listen takes
// (cliflag.CheckAddr).
func checkAddr(flagName, addr string) error { return cliflag.CheckAddr(flagName, addr) }

// floatVar defines a float flag that refuses NaN and infinities, with *p as
// its default (cliflag.FloatVar). Name the value in usage between back
// quotes (flag.UnquoteUsage).
func floatVar(fs *flag.FlagSet, p *float64, name, usage string) { cliflag.FloatVar(fs, p, name, usage) }
