package retry

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/herald-events/herald/internal/strictjson"
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
// string ("90s", "10m"), as strictjson.Duration does. It also reads a JSON
// number as seconds.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strictjson.Duration(d).MarshalJSON()
}

// UnmarshalJSON reads a Go duration string (strictjson.ParseDuration) or a
// number of seconds. A value past what a time.Duration holds (about 292
// years) is an error saying so.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return (*strictjson.Duration)(d).UnmarshalJSON(b)
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return errors.New(`must be a duration string such as "90s", or a number of seconds`)
	}
	ns := secs * float64(time.Second)
	if ns >= maxDurationNS || ns <= -maxDurationNS {
		return errors.New(strictjson.DurationOutOfRange(string(b) + " seconds"))
	}
	*d = Duration(ns)
	return nil
}

// maxDurationNS is 2^63 nanoseconds as a float64: the first float64 value a
// time.Duration cannot hold.
const maxDurationNS = float64(1 << 63)

// FieldError is a validation error that names the offending field with a
// JSON path relative to the policy (for example "max_attempts").
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }
