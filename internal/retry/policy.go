// Package retry holds Herald's retry policies: the named presets that
// reproduce the documented policy of each service (eventgrid, workfront,
// workfront-legacy, pubsub, sap), custom policies, and Decide, which turns
// the outcome of one attempt into a verdict: delivered, retry at a time, or
// dead-letter with a reason. Everything here is a pure function of (policy,
// attempt, outcome, time): no clock, no I/O, randomness only through the rnd
// argument.
package retry

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Policy is a resolved retry policy. Build it with Resolve; the zero value is
// not a usable policy. A Policy is read-only once resolved: its slices and
// maps may be shared by copies.
type Policy struct {
	// Preset is the name the policy came from ("eventgrid" when the spec
	// named none).
	Preset string
	// MaxAttempts is the number of attempts in all, the first included;
	// 0 means only the TTL bounds the policy.
	MaxAttempts int
	// TTL is how long after the budget's start a retry may still happen;
	// 0 means none (MaxAttempts then bounds the policy).
	TTL time.Duration
	// Jitter is the ± fraction of each gap added at random (0..0.5).
	Jitter float64
	// SuccessCodes are the status codes that count as delivered; nil means
	// any 2xx.
	SuccessCodes []int
	// NoRetryCodes are the status codes that dead-letter at once.
	NoRetryCodes []int
	// MinDelays is the minimum delay before a retry, by status code.
	MinDelays map[int]time.Duration
	// MinDelay is the minimum delay after a failure whose code has no entry
	// in MinDelays (a transport failure has code 0).
	MinDelay time.Duration
	// Schedule says when the retries happen.
	Schedule Schedule
	// Then is what happens when the retries run out: ThenDeadLetter or
	// ThenQueue.
	Then string
}

// What happens when a policy's retries run out.
const (
	// ThenDeadLetter: the delivery is dead-lettered (or dropped, as its
	// subscription says).
	ThenDeadLetter = "dead_letter"
	// ThenQueue: the subscription is deactivated and the delivery queued
	// for its consumers to pull (SAP Open Connectors).
	ThenQueue = "queue"
)

// Schedule is the nominal timing of retries, before jitter and minimums.
// Retry k follows failed attempt k.
type Schedule struct {
	// Anchored schedules place retry k at t0 + Steps[k−1], where t0 is the
	// end of the first failed attempt (workfront, sap): a late attempt does
	// not delay the ones after it. Past the list, the last gap repeats.
	Anchored bool
	// Steps are, when not anchored, the gap after each failed attempt, the
	// last one repeating; when anchored, the offsets of the retries from t0.
	// Unused when Backoff is set.
	Steps []time.Duration
	// Backoff, when set, gives the gap after each failed attempt instead.
	Backoff *Exponential
}

// Exponential is a resolved Backoff: the gap after failed attempt k is
// Initial × Multiplier^(k−1), capped at Max.
type Exponential struct {
	Initial    time.Duration
	Multiplier float64
	Max        time.Duration
}

// Limits on what a Spec may say.
const (
	maxDelay      = 30 * 24 * time.Hour // one delay, backoff initial or max
	maxDelays     = 100                 // entries in delays
	maxCodes      = 500                 // entries in success_codes or no_retry_codes
	maxJitter     = 0.5
	minStatusCode = 100
	maxStatusCode = 599
)

// Resolve turns a Spec into a Policy: the named preset (eventgrid when
// empty) with the spec's overrides applied and checked against that
// preset's bounds. Errors are *FieldError naming the field.
//
// Any preset accepts jitter, success_codes and no_retry_codes. delays or
// backoff on a named preset replace its schedule (and only its schedule:
// the preset's attempt cap, TTL, codes and per-code minimum delays stay, so
// eventgrid with delays ["1s"] still waits at least 10 s). They are checked
// as for custom. max_attempts and ttl must lie within the preset's range.
// A resolved policy always ends: it has a MaxAttempts or a TTL.
func Resolve(s Spec) (Policy, error) {
	name := s.Preset
	if name == "" {
		name = DefaultPreset
	}
	def, ok := lookupPreset(name)
	if !ok {
		return Policy{}, fieldErr("preset", "unknown preset %q; known presets: %s", name, strings.Join(presetNames, ", "))
	}
	p := def.policy
	if err := applySchedule(&p, s, name); err != nil {
		return Policy{}, err
	}
	if err := applyBounds(&p, s, def, name); err != nil {
		return Policy{}, err
	}
	if err := applyCodes(&p, s); err != nil {
		return Policy{}, err
	}
	if err := applyThen(&p, s); err != nil {
		return Policy{}, err
	}
	if p.MaxAttempts == 0 && p.TTL == 0 {
		return Policy{}, fieldErr("ttl", "required when max_attempts is 0: a policy must end")
	}
	if p.MaxAttempts == 0 && p.Schedule.gap(math.MaxInt32) == 0 {
		return Policy{}, fieldErr("max_attempts", "required when the last delay is 0: attempts would repeat without pause until the ttl")
	}
	return p, nil
}

// applySchedule replaces p's schedule with the spec's delays or backoff (not
// both); a custom policy must have one of them.
func applySchedule(p *Policy, s Spec, name string) error {
	switch {
	case len(s.Delays) > 0 && s.Backoff != nil:
		return fieldErr("backoff", "set delays or backoff, not both")
	case len(s.Delays) > 0:
		sched, err := resolveDelays(s.Delays)
		if err != nil {
			return err
		}
		p.Schedule = sched
	case s.Backoff != nil:
		sched, err := resolveBackoff(*s.Backoff)
		if err != nil {
			return err
		}
		p.Schedule = sched
	case name == PresetCustom:
		return fieldErr("delays", "a custom policy needs delays or backoff")
	}
	return nil
}

// applyBounds sets the spec's max_attempts and ttl on p, each within the
// preset def's range.
func applyBounds(p *Policy, s Spec, def preset, name string) error {
	if s.MaxAttempts != nil {
		n := *s.MaxAttempts
		if !(n == 0 && def.zeroAttempts) && (n < def.minAttempts || n > def.maxAttempts) {
			zero := ""
			if def.zeroAttempts {
				zero = "0 (no limit) or "
			}
			return fieldErr("max_attempts", "must be %s%d..%d for preset %s, got %d", zero, def.minAttempts, def.maxAttempts, name, n)
		}
		p.MaxAttempts = n
	}
	if s.TTL != nil {
		d := s.TTL.D()
		if d < def.minTTL || d > def.maxTTL {
			return fieldErr("ttl", "must be %s..%s for preset %s, got %s", Human(def.minTTL), Human(def.maxTTL), name, d)
		}
		p.TTL = d
	}
	return nil
}

// applyCodes sets the spec's jitter, success_codes and no_retry_codes on p,
// which any preset accepts, and checks that no code is both.
func applyCodes(p *Policy, s Spec) error {
	if s.Jitter != nil {
		j := *s.Jitter
		if math.IsNaN(j) || j < 0 || j > maxJitter {
			return fieldErr("jitter", "must be between 0 and %g, got %g", maxJitter, j)
		}
		p.Jitter = j
	}
	if len(s.SuccessCodes) > 0 {
		codes, err := resolveCodes("success_codes", s.SuccessCodes)
		if err != nil {
			return err
		}
		p.SuccessCodes = codes
	}
	if len(s.NoRetryCodes) > 0 {
		codes, err := resolveCodes("no_retry_codes", s.NoRetryCodes)
		if err != nil {
			return err
		}
		p.NoRetryCodes = codes
	}
	return checkOverlap(*p, s)
}

// applyThen sets what happens to a delivery whose retries end: the spec's
// choice, else the preset's, else dead-lettering.
func applyThen(p *Policy, s Spec) error {
	switch s.Then {
	case "":
		if p.Then == "" {
			p.Then = ThenDeadLetter
		}
	case ThenDeadLetter, ThenQueue:
		p.Then = s.Then
	default:
		return fieldErr("then", "must be %q or %q, got %q", ThenDeadLetter, ThenQueue, s.Then)
	}
	return nil
}

// Success reports whether a status code means delivered.
func (p Policy) Success(code int) bool {
	if p.SuccessCodes == nil {
		return code >= 200 && code <= 299
	}
	return slices.Contains(p.SuccessCodes, code)
}

// Expired reports whether the TTL has passed at now for a budget that
// started at start. It is false when the policy has no TTL.
func (p Policy) Expired(start, now time.Time) bool {
	return p.TTL > 0 && !now.Before(start.Add(p.TTL))
}

// noRetry reports whether a status code dead-letters at once.
func (p Policy) noRetry(code int) bool { return slices.Contains(p.NoRetryCodes, code) }

// minDelayFor is the minimum delay before a retry after a failure with code.
func (p Policy) minDelayFor(code int) time.Duration {
	if d, ok := p.MinDelays[code]; ok {
		return d
	}
	return p.MinDelay
}

func resolveDelays(in []Duration) (Schedule, error) {
	if len(in) > maxDelays {
		return Schedule{}, fieldErr("delays", "at most %d entries, got %d", maxDelays, len(in))
	}
	steps := make([]time.Duration, len(in))
	for i, d := range in {
		if d.D() < 0 || d.D() > maxDelay {
			return Schedule{}, fieldErr(fmt.Sprintf("delays[%d]", i), "must be 0..%s, got %s", Human(maxDelay), d.D())
		}
		steps[i] = d.D()
	}
	return Schedule{Steps: steps}, nil
}

func resolveBackoff(b Backoff) (Schedule, error) {
	init, mult, mx := b.Initial.D(), b.Multiplier, b.Max.D()
	switch {
	case init <= 0 || init > maxDelay:
		return Schedule{}, fieldErr("backoff.initial", "must be more than 0 and at most %s, got %s", Human(maxDelay), init)
	case math.IsNaN(mult) || math.IsInf(mult, 0) || mult < 1:
		return Schedule{}, fieldErr("backoff.multiplier", "must be at least 1, got %g", mult)
	case mx < init || mx > maxDelay:
		return Schedule{}, fieldErr("backoff.max", "must be between initial (%s) and %s, got %s", init, Human(maxDelay), mx)
	}
	return Schedule{Backoff: &Exponential{Initial: init, Multiplier: mult, Max: mx}}, nil
}

func resolveCodes(field string, in []int) ([]int, error) {
	if len(in) > maxCodes {
		return nil, fieldErr(field, "at most %d codes, got %d", maxCodes, len(in))
	}
	for i, c := range in {
		if c < minStatusCode || c > maxStatusCode {
			return nil, fieldErr(fmt.Sprintf("%s[%d]", field, i), "must be an HTTP status code %d..%d, got %d", minStatusCode, maxStatusCode, c)
		}
	}
	return slices.Clone(in), nil
}

// checkOverlap rejects a code that is both success and no-retry, naming the
// overriding field that caused it.
func checkOverlap(p Policy, s Spec) error {
	for i, c := range p.NoRetryCodes {
		if !p.Success(c) {
			continue
		}
		if len(s.NoRetryCodes) > 0 {
			return fieldErr(fmt.Sprintf("no_retry_codes[%d]", i), "%d is also a success code", c)
		}
		j := max(slices.Index(s.SuccessCodes, c), 0)
		return fieldErr(fmt.Sprintf("success_codes[%d]", j), "%d is a no-retry code of preset %s", c, p.Preset)
	}
	return nil
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Human formats a duration without trailing zero units: "24h", "10m",
// "1m24.8s".
func Human(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
