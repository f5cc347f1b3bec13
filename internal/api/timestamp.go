package api

import "time"

// timeFormat is the one format of every timestamp the API returns: RFC 3339
// in UTC with exactly three fractional digits, "2026-01-05T09:00:00.000Z".
// The store keeps milliseconds; finer digits are truncated.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is a timestamp in a response, marshalled in timeFormat. Every
// resource struct uses it (and *Time for a time that may not have happened,
// null in JSON), so no response mixes precisions.
type Time time.Time

// MarshalJSON writes t in timeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timeFormat)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, timeFormat)
	return append(b, '"'), nil
}

// timestamp is t as a response timestamp.
func timestamp(t time.Time) Time { return Time(t) }

// optTime is t as a response timestamp, nil (JSON null) when t is zero.
func optTime(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	u := Time(t)
	return &u
}
