// Package cliflag holds the conventions the flags of Herald's commands
// follow, for the two binaries that have them: herald (cmd/herald) and the
// benchmark, herald-bench (cmd/herald-bench). Help asked for goes to stdout
// with exit status 0; a usage error is one line on stderr naming the flag,
// with exit status 2; a float flag refuses NaN and infinities; an address
// flag is a HOST:PORT that net.Listen takes.
package cliflag

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
)

// Parse parses args into fs: help asked for (-h, --help) goes to stdout
// and the command exits 0; a usage error the flag package finds (an
// unknown flag, a value its type refuses) is one line on stderr, naming
// the command and the flag and saying -h lists the flags (not the whole
// usage, which hides the line that matters), and the command exits 2. A
// flag set's Usage must write to fs.Output(). When ok is false the command
// exits with code.
func Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
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
		fmt.Fprintf(stderr, "%s: %v (-h lists the flags)\n", fs.Name(), err)
		return 2, false
	}
	return 0, true
}

// ParseFlagsOnly is Parse for a command that takes flags only: an
// argument left after them is a usage error, named on stderr (exit 2).
func ParseFlagsOnly(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if code, ok := Parse(fs, args, stdout, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (it takes flags only; -h lists them)\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// CheckAddr reports whether addr is a HOST:PORT that net.Listen takes, the
// port a number or a service name.
func CheckAddr(flagName, addr string) error {
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
	v, err := ParseFloat(s)
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}

// ParseFloat parses a finite number: NaN and infinities, which
// strconv.ParseFloat accepts, are refused.
func ParseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.New("not a number")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("not a finite number")
	}
	return v, nil
}

// FloatVar defines a float flag that refuses NaN and infinities, with *p
// as its default. Name the value in usage between back quotes
// (flag.UnquoteUsage).
func FloatVar(fs *flag.FlagSet, p *float64, name, usage string) {
	fs.Var(finiteFloat{p}, name, usage)
}
