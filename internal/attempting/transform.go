package attempting

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
)

// outcomeTransformError is the outcome of an attempt whose subscription's
// transform failed on the event (catalog.Entry.Transformed): nothing was
// sent, and the delivery is dead-lettered (reason TransformFailed).
const outcomeTransformError = "transform_error"

// transform applies sub's transform to the deliveries of ds at sent before
// they are sent, and returns those still to send with the payloads to
// send them with (in the same order). A delivery whose transform gives
// null ends filtered, and one whose transform fails ends dead-lettered
// (transformFailed): their outcomes are written to outs, and neither is
// sent nor says anything of the endpoint's health. The delivery of a dead
// letter is sent as stored. The evaluations end with ctx (the attempter's):
// cancelled says it ended during one, nothing is decided, and the caller
// gives every delivery back. now is the time of a failure's attempt.
func transform(ctx context.Context, now time.Time, sub *catalog.Entry, ds []*store.Claimed, sent []int, outs []store.Outcome) (kept []int, payloads [][]byte, cancelled bool) {
	kept = sent[:0:0]
	for _, i := range sent {
		c := ds[i]
		if c.DeadLetterOf != "" {
			kept, payloads = append(kept, i), append(payloads, c.Payload)
			continue
		}
		p, skip, err := sub.Transformed(ctx, c.Payload)
		switch {
		case catalog.TransformCancelled(err):
			return nil, nil, true
		case err != nil:
			outs[i] = transformFailed(sub, *c, err, now)
		case skip:
			outs[i] = filtered(*c)
		default:
			kept, payloads = append(kept, i), append(payloads, p)
		}
	}
	return kept, payloads, false
}

// filtered is the outcome of a delivery its subscription's transform
// skipped (null): ended filtered, with no attempt logged.
func filtered(c store.Claimed) store.Outcome { return unattempted(c, delivery.StatusFiltered) }

// transformFailed is the outcome of a delivery whose subscription's
// transform failed on its event: an attempt logged with the outcome
// transform_error and CEL's message, and the delivery ended at once
// (dead-lettered, or dropped when the subscription keeps no dead letters;
// reason TransformFailed), never retried nor queued: another try would
// fail the same way.
func transformFailed(sub *catalog.Entry, c store.Claimed, err error, now time.Time) store.Outcome {
	out := store.Outcome{
		Attempt: delivery.Attempt{
			DeliveryID: c.ID,
			Number:     c.Attempts + 1,
			StartedAt:  now,
			Outcome:    outcomeTransformError,
			Error:      "transform: " + err.Error(),
		},
		Attempts:      c.Attempts + 1,
		RoundAttempts: c.RoundAttempts + 1,
		FirstFailure:  c.FirstFailure,
		LastOutcome:   outcomeTransformError,
	}
	if out.FirstFailure.IsZero() {
		out.FirstFailure = now
	}
	endUndelivered(&out, retry.ReasonTransformFailed, sub, c, now)
	return out
}
