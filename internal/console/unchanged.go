package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/herald-events/herald/internal/subscription"
)

// errUnchanged aborts a form's update that would change nothing: nothing
// is written, and the page says so rather than "Saved.".
var errUnchanged = errors.New("nothing changed")

// ifChanged returns change for Control.UpdateSubscription, returning
// errUnchanged when change left every field of the subscription as it
// was (compared as JSON, every exported field).
func ifChanged(change func(*subscription.Subscription) error) func(*subscription.Subscription) error {
	return func(sub *subscription.Subscription) error {
		before, err := json.Marshal(sub)
		if err != nil {
			return err
		}
		if err := change(sub); err != nil {
			return err
		}
		if after, err := json.Marshal(sub); err == nil && bytes.Equal(before, after) {
			return errUnchanged
		}
		return nil
	}
}

// savedOrUnchanged is the ?done= notice of an edit form's update that
// returned err: "saved", or "unchanged" (errUnchanged, which it clears).
func savedOrUnchanged(err *error) string {
	if errors.Is(*err, errUnchanged) {
		*err = nil
		return "unchanged"
	}
	return "saved"
}

// unchangedNotice is what a subscription's page says after an edit that
// changed nothing.
const unchangedNotice = "Nothing changed: the form held the subscription's values as they were."

// exampleSince is the recover form's example time: an hour before now,
// to the minute, in RFC 3339.
func exampleSince(now time.Time) string {
	return now.Add(-time.Hour).UTC().Truncate(time.Minute).Format(time.RFC3339)
}
