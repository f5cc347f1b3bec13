package console

import (
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/subscription"
)

// policyView is a subscription's retry policy as its page shows it: its
// nominal timetable (retry.Policy.Timetable, as herald policy show
// prints it) rather than its JSON.
type policyView struct {
	Preset string
	// Offsets are when each attempt goes, counted from the first, as if
	// each failed at once with no response ("0s", "10s", "1m10s", …): a
	// status code with a longer minimum delay (Notes) waits longer.
	Offsets []string
	// End says what happens after the last attempt fails.
	End string
	// Notes are what the offsets do not show: the policy's anchoring,
	// jitter and per-code minimum delays, in words (retry.Policy.Notes;
	// "" for none); Invalid why the stored policy does not resolve.
	Notes, Invalid string
	// JSON is the policy as stored, for the page's hover.
	JSON string
}

// policyOf returns the view of sub's retry policy.
func policyOf(sub subscription.Subscription) policyView {
	view := policyView{JSON: string(sub.RetryPolicy)}
	if view.JSON == "" {
		view.JSON = subscription.DefaultRetryPolicy
	}
	p, err := sub.ResolvePolicy()
	if err != nil {
		view.Invalid = err.Error()
		return view
	}
	view.Preset = p.Preset
	rows := p.Timetable()
	for _, r := range rows {
		view.Offsets = append(view.Offsets, retry.Human(time.Duration(r.OffsetSeconds*float64(time.Second)+0.5)))
	}
	last := strconv.Itoa(rows[len(rows)-1].Attempt)
	switch {
	case len(rows) == retry.MaxTimetableRows:
		view.End = "(cut at " + strconv.Itoa(retry.MaxTimetableRows) + " attempts)"
	case p.Then == retry.ThenQueue:
		view.End = "after attempt " + last + " fails, the subscription is deactivated and its deliveries queued"
	case p.MaxAttempts > 0 && rows[len(rows)-1].Attempt >= p.MaxAttempts:
		view.End = "after attempt " + last + " fails, it is dead-lettered (" + retry.ReasonMaxAttempts + ")"
	default:
		view.End = "after attempt " + last + " fails, it is dead-lettered (" + retry.ReasonTTL + ": the next retry would pass the ttl of " + retry.Human(p.TTL) + ")"
	}
	view.Notes = p.Notes()
	return view
}
