package health

// Data-driven tests of the circuit state machine, in the style of
// cockroachdb/datadriven (as pebble uses it): each file in testdata/ is a
// sequence of cases
//
//	command arg=value flag ...
//	----
//	expected output
//
// separated by blank lines; lines starting with # are comments. All cases of
// a file run in order against one endpoint (Health) and one Config, so a file
// reads as a story. Times are offsets from a fixed start, written "+90s".
//
// Commands:
//
//	config [name=value ...]   Config = DefaultConfig() with the named fields
//	                          overridden (names as the serve flags without
//	                          --health-: window, min-attempts, failure-rate,
//	                          disable-consecutive, freeze-stale-consecutive,
//	                          freeze-stale-after, freeze-consecutive,
//	                          probe-interval, probation-after,
//	                          probation-initial, probation-max); starts a new
//	                          endpoint at +0s. Prints the whole config.
//	reset                     a new endpoint at +0s, same config.
//	observe at=+T ok|fail [probe] [gone]
//	                          one outcome; prints the transition and the state.
//	observe-n n=N at=+T step=D ok|fail|pattern=SFF.. [probe] [gone]
//	                          N outcomes at T, T+D, ...; a pattern of S
//	                          (success) and F (failure) repeats. Prints every
//	                          state change ("#i at=+T: from -> to (reason)",
//	                          i counting from 1) or "no change", then the state.
//	gate at=+T                what the scheduler may send at T.
//	enable                    re-enable through the API; transition and state.
//	freeze at=+T              freeze through the API; transition and state.
//	reason                    the reason of the state (Health.Reason).
//	state [at=+T]             the state (window counted at T, default: the
//	                          time of the last command that had one).
//
// The state line is
//
//	STATE consecutive=N window-attempts=N window-failures=N
//	      [next-probe=+T] [delay=D] [last-success=+T]
//
// Run with -rewrite to replace every expected output by the actual one, then
// review the diff against the state rules in health.go's package comment
// before committing:
//
//	go test ./internal/health -run DataDriven -rewrite

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/datadriven"
)

// ddStart is the fixed start. It is on a minute boundary, so the window's
// one-minute slices begin at +0s, +1m, ...
var ddStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, filepath.Join("testdata", "*"), runDataFile)
}

func runDataFile(t *testing.T, path string) {
	r := &ddRunner{c: DefaultConfig(), h: &Health{}, now: ddStart}
	datadriven.RunFile(t, path, func(c *datadriven.Case) (string, error) { return r.do(c.Cmd) })
}

// ddRunner holds a file's config, endpoint and clock.
type ddRunner struct {
	c   Config
	h   *Health
	now time.Time
}

// outcome reads ok|fail [probe] [gone].
func outcome(a datadriven.Args) (Outcome, error) {
	ok, fail := a.Flag("ok"), a.Flag("fail")
	if ok == fail {
		return Outcome{}, fmt.Errorf("want exactly one of ok and fail")
	}
	o := Outcome{Success: ok, Probe: a.Flag("probe"), Gone: a.Flag("gone")}
	if o.Gone && o.Success {
		return Outcome{}, fmt.Errorf("gone is a failure")
	}
	return o, nil
}

func (r *ddRunner) do(line string) (string, error) {
	fields := strings.Fields(line)
	cmd, a := fields[0], datadriven.ParseArgs(fields[1:], "ok", "fail", "probe", "gone")
	if len(a.Pos) > 0 {
		return "", fmt.Errorf("unknown argument %s", a.Pos[0])
	}
	var out string
	var err error
	switch cmd {
	case "config":
		out, err = r.config(a)
	case "reset":
		r.h, r.now = &Health{}, ddStart
		out = r.dump()
	case "observe":
		out, err = r.observe(a)
	case "observe-n":
		out, err = r.observeN(a)
	case "gate":
		out, err = r.gate(a)
	case "enable":
		out = fmtTransition(r.c.Enable(r.h)) + "\n" + r.dump()
	case "freeze":
		if r.now, err = a.Offset("at", ddStart, true, time.Time{}); err == nil {
			out = fmtTransition(r.c.Freeze(r.h, r.now)) + "\n" + r.dump()
		}
	case "reason":
		out = fmt.Sprintf("%q", r.h.Reason)
	case "state":
		r.now, err = a.Offset("at", ddStart, false, r.now)
		out = r.dump()
	default:
		return "", fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		return "", err
	}
	return out, a.Unused()
}

func (r *ddRunner) config(a datadriven.Args) (string, error) {
	c := DefaultConfig()
	for _, k := range a.Names() {
		v, _ := a.Value(k)
		var err error
		switch k {
		case "window":
			c.Window, err = time.ParseDuration(v)
		case "min-attempts":
			c.MinAttempts, err = strconv.Atoi(v)
		case "failure-rate":
			c.FailureRate, err = strconv.ParseFloat(v, 64)
		case "disable-consecutive":
			c.DisableConsecutive, err = strconv.ParseInt(v, 10, 64)
		case "freeze-stale-consecutive":
			c.FreezeStaleConsecutive, err = strconv.ParseInt(v, 10, 64)
		case "freeze-stale-after":
			c.FreezeStaleAfter, err = time.ParseDuration(v)
		case "freeze-consecutive":
			c.FreezeConsecutive, err = strconv.ParseInt(v, 10, 64)
		case "probe-interval":
			c.ProbeInterval, err = time.ParseDuration(v)
		case "probation-after":
			c.ProbationAfter, err = strconv.ParseInt(v, 10, 64)
		case "probation-initial":
			c.ProbationInitial, err = time.ParseDuration(v)
		case "probation-max":
			c.ProbationMax, err = time.ParseDuration(v)
		default:
			return "", fmt.Errorf("unknown config field %q", k)
		}
		if err != nil {
			return "", fmt.Errorf("%s=%s: %v", k, v, err)
		}
	}
	r.c, r.h, r.now = c, &Health{}, ddStart
	return fmt.Sprintf("window=%s min-attempts=%d failure-rate=%g disable-consecutive=%d\n"+
		"freeze-stale-consecutive=%d freeze-stale-after=%s freeze-consecutive=%d\n"+
		"probe-interval=%s probation-after=%d probation-initial=%s probation-max=%s",
		fmtDur(c.Window), c.MinAttempts, c.FailureRate, c.DisableConsecutive,
		c.FreezeStaleConsecutive, fmtDur(c.FreezeStaleAfter), c.FreezeConsecutive,
		fmtDur(c.ProbeInterval), c.ProbationAfter, fmtDur(c.ProbationInitial), fmtDur(c.ProbationMax)), nil
}

func (r *ddRunner) observe(a datadriven.Args) (string, error) {
	at, err := a.Offset("at", ddStart, true, time.Time{})
	if err != nil {
		return "", err
	}
	o, err := outcome(a)
	if err != nil {
		return "", err
	}
	o.At, r.now = at, at
	return fmtTransition(r.c.Observe(r.h, o)) + "\n" + r.dump(), nil
}

func (r *ddRunner) observeN(a datadriven.Args) (string, error) {
	v, _ := a.Value("n")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", fmt.Errorf("n=%q: want a positive count", v)
	}
	at, err := a.Offset("at", ddStart, true, time.Time{})
	if err != nil {
		return "", err
	}
	v, _ = a.Value("step")
	step, err := time.ParseDuration(v)
	if err != nil {
		return "", fmt.Errorf("step=%q: %v", v, err)
	}
	var o Outcome
	pattern, hasPattern := a.Value("pattern")
	if hasPattern {
		if strings.Trim(pattern, "SF") != "" || pattern == "" || a.Flag("ok") || a.Flag("fail") {
			return "", fmt.Errorf("pattern=%q: want S and F only, and no ok or fail", pattern)
		}
		o = Outcome{Probe: a.Flag("probe"), Gone: a.Flag("gone")}
	} else if o, err = outcome(a); err != nil {
		return "", err
	}
	var changes []string
	for i := 0; i < n; i++ {
		if hasPattern {
			o.Success = pattern[i%len(pattern)] == 'S'
			if o.Success && o.Gone {
				return "", fmt.Errorf("gone is a failure")
			}
		}
		o.At = at.Add(time.Duration(i) * step)
		if tr := r.c.Observe(r.h, o); tr.Changed() {
			changes = append(changes, fmt.Sprintf("#%d at=%s: %s", i+1, fmtAt(o.At), fmtTransition(tr)))
		}
	}
	r.now = o.At
	if len(changes) == 0 {
		changes = []string{"no change"}
	}
	return strings.Join(changes, "\n") + "\n" + r.dump(), nil
}

func (r *ddRunner) gate(a datadriven.Args) (string, error) {
	at, err := a.Offset("at", ddStart, true, time.Time{})
	if err != nil {
		return "", err
	}
	r.now = at
	switch g := r.c.Gate(r.h, at); g {
	case Open:
		return "open", nil
	case ProbeNow:
		return "probe-now", nil
	case Closed:
		if r.h.NextProbeAt.IsZero() {
			return "closed (no probe: until enable)", nil
		}
		return "closed (next probe at " + fmtAt(r.h.NextProbeAt) + ")", nil
	default:
		return "", fmt.Errorf("unknown gate %d", g)
	}
}

func (r *ddRunner) dump() string {
	h := r.h
	state := h.State
	if state == "" {
		state = Enabled
	}
	attempts, failures := h.Window.Counts(r.c.Window, r.now)
	s := fmt.Sprintf("%s consecutive=%d window-attempts=%d window-failures=%d",
		state, h.ConsecutiveFailures, attempts, failures)
	if !h.NextProbeAt.IsZero() {
		s += " next-probe=" + fmtAt(h.NextProbeAt)
	}
	if h.ProbationDelay != 0 {
		s += " delay=" + fmtDur(h.ProbationDelay)
	}
	if !h.LastSuccessAt.IsZero() {
		s += " last-success=" + fmtAt(h.LastSuccessAt)
	}
	return s
}

func fmtTransition(tr Transition) string {
	if !tr.Changed() {
		return "no change"
	}
	return fmt.Sprintf("%s -> %s (%s)", tr.From, tr.To, tr.Reason)
}

func fmtAt(t time.Time) string { return "+" + fmtDur(t.Sub(ddStart)) }

// fmtDur is time.Duration.String without trailing zero units: 1h, 5m, 72h0m0.001s.
func fmtDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
