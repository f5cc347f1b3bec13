package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/cliflag"
)

// flagKind is how a resource verb's flag reads its value (see flagValue).
type flagKind int

const (
	kindString    flagKind = iota // any text but the empty string
	kindList                      // a string flag given once per value
	kindInt                       // a whole number, within the spec's min..max
	kindBool                      // true or false (given alone: true)
	kindJSON                      // one JSON value
	kindDuration                  // a Go duration, "30s"
	kindTime                      // an RFC 3339 time
	kindNumber                    // a finite number
	kindDurations                 // Go durations, the flag repeated or the values separated by commas
)

// flagSpec is one flag of a resource verb. Given on the command line its
// value lands in call.set under its name, and, when field names a request
// body member (a dotted path, "rate_limit.per_second"), in the body too.
type flagSpec struct {
	name, usage string
	kind        flagKind
	field       string   // the body member it sets; "" for none
	values      []string // the values it takes, when a fixed set (checked, and completed)
	min, max    int      // kindInt's range
	def         string   // the default shown in help ("" for none)
}

// flagValue is a flagSpec's flag.Value: it checks a value as it is set
// and records it in set.
type flagValue struct {
	spec flagSpec
	set  map[string]any
}

func (f *flagValue) String() string {
	if f == nil || f.set == nil {
		return ""
	}
	if v, ok := f.set[f.spec.name]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

func (f *flagValue) IsBoolFlag() bool { return f.spec.kind == kindBool }

// Set checks s for the flag's kind and records it.
func (f *flagValue) Set(s string) error {
	v, err := f.spec.parse(s)
	if err != nil {
		return err
	}
	switch f.spec.kind {
	case kindList:
		prev, _ := f.set[f.spec.name].([]string)
		v = append(prev, s)
	case kindDurations:
		prev, _ := f.set[f.spec.name].([]string)
		v = append(prev, v.([]string)...)
	}
	f.set[f.spec.name] = v
	return nil
}

// parse returns s as the value of the spec's kind, or why it is refused.
func (spec flagSpec) parse(s string) (any, error) {
	if len(spec.values) > 0 && !slices.Contains(spec.values, s) {
		return nil, fmt.Errorf("want one of %s", strings.Join(spec.values, ", "))
	}
	switch spec.kind {
	case kindInt:
		n, err := strconv.Atoi(s)
		if err != nil || n < spec.min || n > spec.max {
			return nil, fmt.Errorf("want a whole number from %d to %d", spec.min, spec.max)
		}
		return n, nil
	case kindBool:
		return strconv.ParseBool(s)
	case kindJSON:
		return parseJSONValue(s)
	case kindNumber:
		f, err := cliflag.ParseFloat(s)
		if err != nil {
			return nil, fmt.Errorf("want a number (%v)", err)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case kindDuration:
		if _, err := time.ParseDuration(s); err != nil {
			return nil, errors.New(`want a duration such as "30s" or "1h30m"`)
		}
	case kindDurations:
		ds := strings.Split(s, ",")
		for i, d := range ds {
			ds[i] = strings.TrimSpace(d)
			if _, err := time.ParseDuration(ds[i]); err != nil {
				return nil, fmt.Errorf(`want durations such as "10s,1m,10m", not %q`, ds[i])
			}
		}
		return ds, nil
	case kindTime:
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, errors.New(`want an RFC 3339 time such as "2026-01-05T09:00:00Z"`)
		}
	}
	if s == "" {
		return nil, errors.New("empty value")
	}
	return s, nil
}

// parseJSONValue decodes s as exactly one JSON value, its numbers kept as
// written (json.Number).
func parseJSONValue(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more after the first value")
	}
	return v, nil
}

// parseVerbArgs parses args into fs, flags and positional arguments in any
// order (everything after "--" is positional), and returns the positional
// ones. When ok is false the command exits with code (see parseArgs).
func parseVerbArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	for {
		if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
			return nil, code, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			return append(pos, rest...), 0, true
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// maxBody bounds a request body read from --file: the API's limit on a
// JSON body (1 MiB).
const maxBody = 1 << 20

// readBody reads the JSON object of --file (a file, or - for standard
// input), at most maxBody bytes. Errors name --file.
func readBody(file string, stdin io.Reader) (map[string]any, error) {
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--file: %v", errors.Unwrap(err))
		}
		defer f.Close()
		in = f
	}
	b, err := io.ReadAll(io.LimitReader(in, maxBody+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("--file %s: %v", file, err)
	case len(b) > maxBody:
		return nil, fmt.Errorf("--file %s: over 1 MiB, the API's limit on a body", file)
	}
	v, err := parseJSONValue(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("--file %s: %v", file, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("--file %s: want a JSON object", file)
	}
	return obj, nil
}

// setPath sets the member at the dotted path of body to v, making the
// objects on its way; a member on the way that is not an object is
// replaced.
func setPath(body map[string]any, path string, v any) {
	names := strings.Split(path, ".")
	for _, n := range names[:len(names)-1] {
		next, ok := body[n].(map[string]any)
		if !ok {
			next = map[string]any{}
			body[n] = next
		}
		body = next
	}
	body[names[len(names)-1]] = v
}
