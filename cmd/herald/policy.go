package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/strictjson"
)

const policyUsage = `Usage:
  herald policy list                       list the retry presets
  herald policy show NAME [--json] [--spec JSON]
                                           print a preset's nominal timetable

show prints one row per attempt: attempt 1 is the first delivery, attempt k+1
is retry k; offsets count from attempt 1, as if every attempt failed at once
with no response. Jitter and Retry-After are not applied. --spec takes a
retry_policy as JSON ({"max_attempts":5,"ttl":"2h"}) whose overrides apply to
NAME; "custom" needs one ({"delays":["10s","1m"],"ttl":"1h"}). --json prints
the policy (max_attempts, ttl_seconds, jitter, codes, minimum delays), its
rows and how it ends (ends_after_attempt, end_reason) as one JSON object.
`

// runPolicy implements `herald policy list` and `herald policy show`. It
// returns the exit status: 0 on success, 2 on a usage error (unknown
// subcommand, bad flag, stray argument, unknown preset, invalid --spec).
func runPolicy(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	switch args[0] {
	case "list":
		fs := flag.NewFlagSet("herald policy list", flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.Usage = func() { fmt.Fprint(fs.Output(), policyUsage) }
		if _, code, ok := parseFlags(fs, args[1:], stdout, stderr, false); !ok {
			return code
		}
		return policyList(stdout)
	case "show":
		return policyShow(args[1:], stdout, stderr)
	}
	if args[0] == "help" || isHelpFlag(args[0]) {
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

func newPolicyShowFlags(stderr io.Writer) (fs *flag.FlagSet, asJSON *bool, spec *string) {
	fs = flag.NewFlagSet("herald policy show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), policyUsage) }
	asJSON = fs.Bool("json", false, "print the policy and its timetable as JSON")
	spec = fs.String("spec", "", "retry_policy overrides as JSON")
	return fs, asJSON, spec
}

// policyShow prints NAME's timetable as a table, or as JSON (policyJSON)
// with --json. Flags may come before or after NAME.
func policyShow(args []string, stdout, stderr io.Writer) int {
	fs, asJSON, specJSON := newPolicyShowFlags(stderr)
	var names []string
	for rest := args; ; {
		if code, ok := parseArgs(fs, rest, stdout, stderr); !ok {
			return code
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
		// As strict as the API's retry_policy: exact names, no repeats,
		// nothing after the object.
		if err := strictjson.Decode([]byte(*specJSON), "", &spec); err != nil {
			fmt.Fprintf(stderr, "herald policy show: --spec: %s: %s\n", err.Field, err.Detail)
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
		msg := err.Error()
		if *specJSON != "" {
			msg = "--spec: " + msg
		}
		fmt.Fprintf(stderr, "herald policy show: %s\n", msg)
		if name == retry.PresetCustom && *specJSON == "" {
			fmt.Fprintln(stderr, `a custom policy needs --spec, for example --spec '{"delays":["10s","1m"],"ttl":"1h"}'`)
		}
		return 2
	}

	rows := p.Timetable()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(newPolicyJSON(p, rows)); err != nil {
			fmt.Fprintf(stderr, "herald policy show: %v\n", err)
			return 1
		}
		return 0
	}
	writeTimetable(stdout, p, rows)
	return 0
}

// policyJSON is `herald policy show --json`: what the text output says, with
// times in seconds.
type policyJSON struct {
	Preset string `json:"preset"`
	// MaxAttempts counts every attempt, the first included; 0: unlimited
	// (the ttl bounds the policy).
	MaxAttempts int `json:"max_attempts"`
	// TTLSeconds is how long after publish a retry may happen; 0: none.
	TTLSeconds float64 `json:"ttl_seconds"`
	// Jitter is the ± fraction added to each gap at random (not in rows).
	Jitter float64 `json:"jitter"`
	// Anchored: retries are placed from the first failure.
	Anchored bool `json:"anchored"`
	// SuccessCodes are the codes that count as delivered; null: any 2xx.
	SuccessCodes []int `json:"success_codes"`
	NoRetryCodes []int `json:"no_retry_codes"`
	// MinDelaySeconds is the least delay after a failure with this status
	// code ("0": a transport failure and any code not listed).
	MinDelaySeconds map[string]float64 `json:"min_delay_seconds,omitempty"`
	Rows            []retry.Row        `json:"rows"`
	// The end: after attempt EndsAfterAttempt fails, the delivery ends with
	// EndReason; when Truncated the table was cut first.
	EndsAfterAttempt int    `json:"ends_after_attempt"`
	EndReason        string `json:"end_reason,omitempty"`
	Truncated        bool   `json:"truncated,omitempty"`
	// Then is what the end does: "dead_letter", or "queue" (the
	// subscription is deactivated and the delivery queued).
	Then string `json:"then"`
}

func newPolicyJSON(p retry.Policy, rows []retry.Row) policyJSON {
	out := policyJSON{
		Preset: p.Preset, MaxAttempts: p.MaxAttempts, TTLSeconds: p.TTL.Seconds(), Jitter: p.Jitter,
		Anchored: p.Schedule.Anchored, SuccessCodes: p.SuccessCodes, NoRetryCodes: p.NoRetryCodes, Rows: rows,
		Then: p.Then,
	}
	if out.NoRetryCodes == nil {
		out.NoRetryCodes = []int{}
	}
	if len(p.MinDelays) > 0 || p.MinDelay > 0 {
		out.MinDelaySeconds = map[string]float64{}
		for c, d := range p.MinDelays {
			out.MinDelaySeconds[strconv.Itoa(c)] = d.Seconds()
		}
		if p.MinDelay > 0 {
			out.MinDelaySeconds["0"] = p.MinDelay.Seconds()
		}
	}
	out.EndsAfterAttempt, out.EndReason, out.Truncated = policyEnd(p, rows)
	return out
}

// policyEnd says how the timetable ends: after which attempt the delivery
// ends and why, or that the table was cut at retry.MaxTimetableRows.
func policyEnd(p retry.Policy, rows []retry.Row) (lastAttempt int, reason string, cut bool) {
	last := rows[len(rows)-1].Attempt
	switch {
	case len(rows) == retry.MaxTimetableRows:
		return last, "", true
	case p.MaxAttempts > 0 && last >= p.MaxAttempts:
		return last, retry.ReasonMaxAttempts, false
	}
	return last, retry.ReasonTTL, false
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
	if extra := p.Notes(); extra != "" {
		fmt.Fprintln(w, extra)
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tDELAY\tOFFSET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", r.Attempt, policyCell(r.DelaySeconds), policyCell(r.OffsetSeconds))
	}
	tw.Flush()

	switch last, reason, cut := policyEnd(p, rows); {
	case cut:
		fmt.Fprintf(w, "(cut at %d rows)\n", retry.MaxTimetableRows)
	case p.Then == retry.ThenQueue:
		fmt.Fprintf(w, "after attempt %d fails (%s): the subscription is deactivated and the delivery queued, as every later one until it is reactivated\n", last, reason)
	case reason == retry.ReasonTTL:
		fmt.Fprintf(w, "after attempt %d fails: %s (the next retry would pass the ttl)\n", last, reason)
	default:
		fmt.Fprintf(w, "after attempt %d fails: %s\n", last, reason)
	}
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
