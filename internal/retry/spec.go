package retry

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Spec is a retry policy as a user writes it on a subscription: a preset name
// and optional overrides. Resolve turns it into a Policy. A nil pointer or
// empty slice means "the preset's value".
type Spec struct {
	Preset       string     `json:"preset,omitempty"`
	Delays       []Duration `json:"delays,omitempty"`
	Backoff      *Backoff   `json:"backoff,omitempty"`
	MaxAttempts  *int       `json:"max_attempts,omitempty"`
	TTL          *Duration  `json:"ttl,omitempty"`
	Jitter       *float64   `json:"jitter,omitempty"`
	SuccessCodes []int      `json:"success_codes,omitempty"`
	NoRetryCodes []int      `json:"no_retry_codes,omitempty"`
	// Then is what happens when the retries run out: ThenDeadLetter
	// (dead-lettered or dropped, as the subscription says) or ThenQueue
	// (the subscription is deactivated and the delivery queued). Empty:
	// the preset's (queue for sap, dead_letter for the others).
	Then string `json:"then,omitempty"`
}

// Backoff is an exponential schedule: the gap after failed attempt k is
// Initial × Multiplier^(k−1), capped at Max.
type Backoff struct {
	Initial    Duration `json:"initial"`
	Multiplier float64  `json:"multiplier"`
	Max        Duration `json:"max"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("90s", "10m"). It also reads a JSON number as seconds.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string or a number of seconds. A value
// past what a time.Duration holds (about 292 years) is an error saying so.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, msg := ParseDuration(s)
		if msg != "" {
			return errors.New(msg)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return errors.New(`must be a duration such as "90s" or a number of seconds`)
	}
	ns := secs * float64(time.Second)
	if ns >= maxDurationNS || ns <= -maxDurationNS {
		return fmt.Errorf("%s seconds is out of range: %s", b, durationLimit)
	}
	*d = Duration(ns)
	return nil
}

// maxDurationNS is 2^63 nanoseconds as a float64: the first float64 value a
// time.Duration cannot hold.
const maxDurationNS = float64(1 << 63)

// durationLimit says how long a time.Duration can be.
const durationLimit = "a duration must be shorter than 2562047h (about 292 years)"

// durationSyntax matches what time.ParseDuration reads.
var durationSyntax = regexp.MustCompile(`^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`)

// ParseDuration parses a Go duration string as time.ParseDuration does. On a
// problem it returns a message in plain words that quotes s (shortened past
// 64 bytes) and tells a value too large to hold from one that is not a
// duration at all.
func ParseDuration(s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, ""
	}
	q := s
	if len(q) > 64 {
		q = strings.ToValidUTF8(q[:64], "") + "..."
	}
	if durationSyntax.MatchString(s) {
		return 0, fmt.Sprintf("%q is out of range: %s", q, durationLimit)
	}
	return 0, fmt.Sprintf("%q is not a duration such as \"90s\" or \"10m\"", q)
}

// FieldError is a validation error that names the offending field with a
// JSON path relative to the policy (for example "max_attempts").
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }
