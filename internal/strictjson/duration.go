package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Duration is a duration a user writes as a Go duration string ("30s",
// "1m30s", "500ms"). Decoded from anything else, a number above all, it
// is an error that shows how to write it ("30" as a number: send "30s").
// It encodes as the same kind of string. The API's duration fields are
// Durations; a retry policy's (internal/retry) read a number as seconds
// besides.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string (see ParseDuration); any other
// JSON value is an error saying what to send instead.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(notADuration(b))
	}
	v, msg := ParseDuration(s)
	if msg != "" {
		return errors.New(msg)
	}
	*d = Duration(v)
	return nil
}

// durationUnits says how a duration string is written, for a problem's
// detail.
const durationUnits = `units ns, us, ms, s, m, h: "500ms", "30s", "1m30s", "2h"`

// notADuration is the problem's detail for raw, a JSON value other than a
// string, given for a duration: a number is shown as the string it
// probably stands for, in seconds.
func notADuration(raw []byte) string {
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f >= 0 && f < 1e9 {
		n := strconv.FormatFloat(f, 'f', -1, 64)
		return fmt.Sprintf(`must be a duration string, not a number: for %s seconds send "%ss" (%s)`, n, n, durationUnits)
	}
	return fmt.Sprintf(`must be a duration string such as "30s", not %s (%s)`, KindOf(raw), durationUnits)
}

// maxDurationText says how long a time.Duration can be.
const maxDurationText = "a duration must be shorter than 2562047h (about 292 years)"

// DurationOutOfRange is the problem's detail for a duration of what (as
// sent, quoted or not) past what a time.Duration holds.
func DurationOutOfRange(what string) string {
	return what + " is out of range: " + maxDurationText
}

// durationSyntax matches what time.ParseDuration reads.
var durationSyntax = regexp.MustCompile(`^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`)

// unitless matches a number written without a unit.
var unitless = regexp.MustCompile(`^[0-9]+(\.[0-9]*)?$`)

// ParseDuration parses a Go duration string as time.ParseDuration does. On
// a problem it returns a message in plain words that quotes s (shortened
// past MaxFieldName bytes) and tells a value too large to hold from a
// number without a unit and from one that is not a duration at all.
func ParseDuration(s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, ""
	}
	short := Shorten(s)
	q := strconv.Quote(short)
	switch {
	case durationSyntax.MatchString(s):
		return 0, DurationOutOfRange(q)
	case len(s) <= 20 && unitless.MatchString(s):
		return 0, fmt.Sprintf(`%s has no unit: for %s seconds send "%ss" (%s)`, q, short, short, durationUnits)
	}
	return 0, fmt.Sprintf(`%s is not a duration such as "30s" (%s)`, q, durationUnits)
}
