package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herald-events/herald/internal/retry"
)

const policyUsage = `Usage:
  herald policy list                       list the retry presets
  herald policy show NAME [--json] [--spec JSON]
                                           print a preset's nominal timetable

show prints one row per attempt: attempt 1 is the first delivery, attempt k+1
is retry k; offsets count from attempt 1, as if every attempt failed at once
with no response. Jitter and Retry-After are not applied. --spec takes a
retry_policy as JSON ({"max_attempts":5,"ttl":"2h"}) whose overrides apply to
NAME; "custom" needs one ({"delays":["10s","1m"],"ttl":"1h"}).
`

// runPolicy implements `herald policy list` and `herald policy show`. It
// returns the exit status: 0 on success, 2 on a usage error (unknown
// subcommand, bad flag, unknown preset, invalid --spec).
func runPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	switch args[0] {
	case "list":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "herald policy list: unexpected argument %q\n", args[1])
			return 2
		}
		return policyList(stdout)
	case "show":
		return policyShow(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, policyUsage)
		return 0
	}
	fmt.Fprintf(stderr, "herald policy: unknown command %q\n\n%s", args[0], policyUsage)
	return 2
}

// policyList prints each preset with its one-line description.
func policyList(stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, name := range retry.Presets() {
		desc := retry.Description(name)
		if name == retry.DefaultPreset {
			desc += " [default]"
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, desc)
	}
	tw.Flush()
	return 0
}

// policyShow prints NAME's timetable as a table, or as a JSON array of
// retry.Row with --json. Flags may come before or after NAME.
func policyShow(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald policy show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, policyUsage) }
	asJSON := fs.Bool("json", false, "print the timetable as a JSON array of rows")
	specJSON := fs.String("spec", "", "retry_policy overrides as JSON")
	var names []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(names) != 1 || names[0] == "" {
		fmt.Fprintf(stderr, "herald policy show: want one preset name (%s)\n", strings.Join(retry.Presets(), ", "))
		return 2
	}
	name := names[0]

	var spec retry.Spec
	if *specJSON != "" {
		dec := json.NewDecoder(strings.NewReader(*specJSON))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			fmt.Fprintf(stderr, "herald policy show: --spec: %v\n", err)
			return 2
		}
		if spec.Preset != "" && spec.Preset != name {
			fmt.Fprintf(stderr, "herald policy show: --spec names preset %q but NAME is %q\n", spec.Preset, name)
			return 2
		}
	}
	spec.Preset = name
	p, err := retry.Resolve(spec)
	if err != nil {
		fmt.Fprintf(stderr, "herald policy show: %v\n", err)
		if name == retry.PresetCustom && *specJSON == "" {
			fmt.Fprintln(stderr, `a custom policy needs --spec, for example --spec '{"delays":["10s","1m"],"ttl":"1h"}'`)
		}
		return 2
	}

	rows := p.Timetable()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fmt.Fprintf(stderr, "herald policy show: %v\n", err)
			return 1
		}
		return 0
	}
	writeTimetable(stdout, p, rows)
	return 0
}

// writeTimetable prints the header lines and the table.
func writeTimetable(w io.Writer, p retry.Policy, rows []retry.Row) {
	attempts := "unlimited (ttl bounds it)"
	if p.MaxAttempts > 0 {
		attempts = strconv.Itoa(p.MaxAttempts)
	}
	ttl := "none"
	if p.TTL > 0 {
		ttl = retry.Human(p.TTL)
	}
	success := "any 2xx"
	if p.SuccessCodes != nil {
		success = policyCodes(p.SuccessCodes)
	}
	noRetry := "none"
	if len(p.NoRetryCodes) > 0 {
		noRetry = policyCodes(p.NoRetryCodes)
	}
	fmt.Fprintf(w, "preset %s: max attempts %s, ttl %s, success codes %s, no-retry codes %s\n",
		p.Preset, attempts, ttl, success, noRetry)
	if extra := policyNotes(p); extra != "" {
		fmt.Fprintln(w, extra)
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tDELAY\tOFFSET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", r.Attempt, policyCell(r.DelaySeconds), policyCell(r.OffsetSeconds))
	}
	tw.Flush()

	last := rows[len(rows)-1]
	switch {
	case len(rows) == retry.MaxTimetableRows:
		fmt.Fprintf(w, "(cut at %d rows)\n", retry.MaxTimetableRows)
	case p.MaxAttempts > 0 && last.Attempt >= p.MaxAttempts:
		fmt.Fprintf(w, "after attempt %d fails: %s\n", last.Attempt, retry.ReasonMaxAttempts)
	default:
		fmt.Fprintf(w, "after attempt %d fails: %s (the next retry would pass the ttl)\n", last.Attempt, retry.ReasonTTL)
	}
}

// policyNotes describes jitter, anchoring and per-code minimum delays, or
// returns "" when the policy has none of them.
func policyNotes(p retry.Policy) string {
	var notes []string
	if p.Schedule.Anchored {
		notes = append(notes, "retries anchored to the first failure")
	}
	if p.Jitter > 0 {
		notes = append(notes, fmt.Sprintf("jitter ±%s%% (not shown)", strconv.FormatFloat(p.Jitter*100, 'f', -1, 64)))
	}
	if len(p.MinDelays) > 0 || p.MinDelay > 0 {
		codes := make([]int, 0, len(p.MinDelays))
		for c := range p.MinDelays {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		var parts []string
		for _, c := range codes {
			parts = append(parts, fmt.Sprintf("%d ≥ %s", c, retry.Human(p.MinDelays[c])))
		}
		if p.MinDelay > 0 {
			parts = append(parts, "others ≥ "+retry.Human(p.MinDelay))
		}
		notes = append(notes, "minimum delay "+strings.Join(parts, ", "))
	}
	return strings.Join(notes, "; ")
}

// policyCell formats seconds as a duration and as seconds: "1m24.8s (84.8 s)".
func policyCell(secs float64) string {
	d := time.Duration(secs*float64(time.Second) + 0.5)
	return fmt.Sprintf("%s (%s s)", retry.Human(d), strconv.FormatFloat(secs, 'f', -1, 64))
}

// policyCodes writes status codes with runs collapsed: "200-204", "400,401,403".
func policyCodes(codes []int) string {
	c := slices.Clone(codes)
	slices.Sort(c)
	c = slices.Compact(c)
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%d-%d", c[i], c[j]))
		} else {
			for k := i; k <= j; k++ {
				parts = append(parts, strconv.Itoa(c[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
