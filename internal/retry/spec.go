package retry

import (
	"encoding/json"
	"fmt"
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

// UnmarshalJSON reads a Go duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as \"90s\" or \"10m\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("want a duration string such as \"90s\"")
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// FieldError is a validation error that names the offending field with a
// JSON path relative to the policy (for example "max_attempts").
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }
