package retry

import "time"

// MaxTimetableRows bounds Timetable's length. Only a policy bounded by its
// TTL with short gaps (a custom "100ms" repeating for a day, say) reaches it.
const MaxTimetableRows = 10000

// Row is one attempt of a policy's nominal timetable.
type Row struct {
	// Attempt is 1-based: attempt 1 is the first delivery, attempt k+1 is
	// retry k.
	Attempt int `json:"attempt"`
	// DelaySeconds is the wait since the previous attempt (0 for attempt 1).
	DelaySeconds float64 `json:"delay_seconds"`
	// OffsetSeconds is the time since attempt 1.
	OffsetSeconds float64 `json:"offset_seconds"`
}

// Timetable returns the nominal schedule: every attempt the policy makes if
// each one fails at once with no response (status 0, so the minimum delay
// for "any other failure" applies), without jitter or Retry-After, with the
// TTL counted from the first attempt. It is Decide run attempt by attempt,
// so it ends exactly where Decide dead-letters, and holds at most
// MaxTimetableRows rows.
func (p Policy) Timetable() []Row {
	start := time.Unix(0, 0).UTC()
	rows := []Row{{Attempt: 1}}
	now := start
	for n := 1; len(rows) < MaxTimetableRows; n++ {
		v := p.Decide(Attempt{Number: n, Start: start, FirstFailure: start, Now: now}, nil)
		if v.Kind != Retry {
			break
		}
		rows = append(rows, Row{
			Attempt:       n + 1,
			DelaySeconds:  v.At.Sub(now).Seconds(),
			OffsetSeconds: v.At.Sub(start).Seconds(),
		})
		now = v.At
	}
	return rows
}
