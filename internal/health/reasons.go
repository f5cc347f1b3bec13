package health

import (
	"strconv"
	"time"
)

// Why an endpoint's circuit changed state: Transition.Reason, kept as
// Health.Reason. An operator reads them on the endpoint resource
// (state_reason), in the log and in the herald.endpoint.* operational
// events; every reason Herald gives is made here.
const (
	// ReasonSucceeded re-enables a probation or disabled endpoint.
	ReasonSucceeded = "a delivery succeeded"
	// ReasonGone disables an endpoint that answered 410.
	ReasonGone = "410 Gone"
	// ReasonFrozenByHand: POST /v1/endpoints/{id}/freeze (Config.Freeze).
	ReasonFrozenByHand = "frozen by hand"
	// ReasonEnabledByHand: POST /v1/endpoints/{id}/enable (Config.Enable).
	ReasonEnabledByHand = "enabled by hand"
)

// ReasonConsecutive is "N consecutive failures" (probation, disabled or
// frozen at a count).
func ReasonConsecutive(n int64) string { return itoa(n) + " consecutive failures" }

// ReasonStale is "N consecutive failures and no success for D" (frozen by
// FreezeStaleConsecutive and FreezeStaleAfter).
func ReasonStale(n int64, after time.Duration) string {
	return ReasonConsecutive(n) + " and no success for " + after.String()
}

// ReasonRate is "failure rate R% over N attempts" (disabled by the rate
// rule), the rate with one decimal.
func ReasonRate(failures, attempts int64) string {
	return "failure rate " + strconv.FormatFloat(100*float64(failures)/float64(attempts), 'f', 1, 64) +
		"% over " + itoa(attempts) + " attempts"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
