package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// parseArgs parses args into fs; every command's flags are parsed here,
// so that help goes where it is asked for. Help asked for (-h, --help)
// goes to stdout and the command exits 0; a usage error the flag package
// finds (an unknown flag, a value its type refuses) goes to stderr, its
// first line naming the flag, then the usage, and the command exits 2. A
// flag set's Usage must write to fs.Output(), where both are sent. When ok
// is false the command exits with code.
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var out bytes.Buffer
	prev := fs.Output()
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(prev)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = stdout.Write(out.Bytes())
		return 0, false
	case err != nil:
		_, _ = stderr.Write(out.Bytes())
		return 2, false
	}
	return 0, true
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
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return nil, code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (it takes flags only; -h lists them)\n", fs.Name(), fs.Arg(0))
		return nil, 2, false
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

// checkAddr reports whether addr is a HOST:PORT that net.Listen takes, the
// port a number or a service name.
func checkAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return fmt.Errorf("%s %q: want HOST:PORT (%v)", flagName, addr, err)
	}
	return nil
}

// finiteFloat is a float64 flag that refuses NaN and infinities, which
// strconv.ParseFloat accepts and every range check lets through.
type finiteFloat struct{ p *float64 }

func (f finiteFloat) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64)
}

func (f finiteFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("not a number")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return errors.New("not a finite number")
	}
	*f.p = v
	return nil
}

// floatVar defines a finiteFloat flag with *p as its default. Name the
// value in usage between back quotes (flag.UnquoteUsage).
func floatVar(fs *flag.FlagSet, p *float64, name, usage string) {
	fs.Var(finiteFloat{p}, name, usage)
}
