package job

import (
	"slices"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/strictjson"
)

// RecoverRequest is the body of POST /v1/subscriptions/{id}/recover.
type RecoverRequest struct {
	Since    *string  `json:"since"`
	Until    *string  `json:"until"`
	Statuses []string `json:"statuses"`
}

// DefaultStatuses are what a recover without statuses recovers.
var DefaultStatuses = []delivery.Status{delivery.StatusDeadLettered, delivery.StatusDropped}

// recoverable are the statuses a recover may name.
var recoverable = []delivery.Status{delivery.StatusDeadLettered, delivery.StatusDropped, delivery.StatusQueued}

// Recover checks r and returns the recover job of subscription sub it asks
// for (ID and CreatedAt left to the caller), or the problem of the first
// field that is wrong: since missing or not an RFC 3339 time, until not one
// or not after since, a status not recoverable or named twice.
func (r RecoverRequest) Recover(accountID, sub string) (Job, *strictjson.Error) {
	j := Job{Kind: KindRecover, AccountID: accountID, SubscriptionID: sub, State: StateRunning, Statuses: DefaultStatuses}
	if r.Since == nil {
		return Job{}, strictjson.Errorf("since", "is required: the time (RFC 3339) from which failed deliveries are recovered")
	}
	var err *strictjson.Error
	if j.Since, err = parseTime("since", *r.Since); err != nil {
		return Job{}, err
	}
	if r.Until != nil {
		if j.Until, err = parseTime("until", *r.Until); err != nil {
			return Job{}, err
		}
		if !j.Until.After(j.Since) {
			return Job{}, strictjson.Errorf("until", "must be after since (%s)", j.Since.Format(time.RFC3339Nano))
		}
	}
	if r.Statuses != nil {
		if j.Statuses, err = parseStatuses(r.Statuses); err != nil {
			return Job{}, err
		}
	}
	return j, nil
}

func parseTime(field, s string) (time.Time, *strictjson.Error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, strictjson.Errorf(field, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", strictjson.Shorten(s))
	}
	return t.UTC(), nil
}

func parseStatuses(names []string) ([]delivery.Status, *strictjson.Error) {
	if len(names) == 0 {
		return nil, strictjson.Errorf("statuses", "must name at least one status (omit it for dead_lettered and dropped)")
	}
	out := make([]delivery.Status, 0, len(names))
	for i, n := range names {
		st := delivery.Status(n)
		switch {
		case !slices.Contains(recoverable, st):
			return nil, strictjson.Errorf("statuses["+strconv.Itoa(i)+"]", "must be dead_lettered, dropped or queued, got %q", strictjson.Shorten(n))
		case slices.Contains(out, st):
			return nil, strictjson.Errorf("statuses["+strconv.Itoa(i)+"]", "%s is named twice", n)
		}
		out = append(out, st)
	}
	return out, nil
}
