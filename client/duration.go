package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a length of time as the API writes it: a Go duration
// string ("90s", "1h30m0s"). It is sent as time.Duration's String and read
// from such a string or, as a retry policy's durations may be, a number of
// seconds.
type Duration time.Duration

// String returns the duration as time.Duration writes it.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		var secs float64
		if err := json.Unmarshal(b, &secs); err != nil {
			return fmt.Errorf("a duration is a string such as \"30s\" or a number of seconds, not %s", b)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// isNull reports whether b is the JSON null.
func isNull(b []byte) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }
