package recording

import (
	"context"
	"log/slog"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/redact"
)

// logOutcome writes what a written outcome means to the log, once, on the
// node that made the attempt, after the outcome is durable:
//
//   - an attempt that failed: "delivery attempt failed" (warn), with the
//     attempt's number, its status code or error class (outcome) and, when
//     the delivery is to be tried again, the next attempt's time;
//   - an attempt Herald refused to make: "destination blocked" (warn), with
//     the address refused and how to allow it;
//   - a delivery dead-lettered: "delivery dead-lettered" (warn), with its
//     reason;
//   - a delivery dropped: "delivery dropped" (warn, with its reason; debug
//     when its subscription was deleted);
//   - an attempt that delivered: "delivered", at debug only.
//
// The warn lines are bounded per endpoint (lineBudget). The keys are
// those of docs/monitoring.md#the-log.
func (r *Recorder) logOutcome(q Request) {
	out := q.Outcome
	switch {
	case out.Attempt.Number == 0: // no attempt was made
	case out.Status == delivery.StatusDelivered:
		r.logDelivered(q)
	case q.Refused != nil:
		r.logLine(q, lineBlocked, slog.LevelWarn, "destination blocked", blockedAttrs(q))
	default:
		r.logLine(q, lineFailed, slog.LevelWarn, "delivery attempt failed", failedAttrs(q))
	}
	switch out.Status {
	case delivery.StatusDeadLettered:
		r.logLine(q, lineDeadLettered, slog.LevelWarn, "delivery dead-lettered", endAttrs(q))
	case delivery.StatusDropped:
		level := slog.LevelWarn
		if out.DeadLetterReason == delivery.ReasonSubscriptionDeleted {
			level = slog.LevelDebug // what deleting it asked for
		}
		r.logLine(q, lineDropped, level, "delivery dropped", endAttrs(q))
	}
}

// logLine writes one delivery line: the delivery's keys, then attrs. A
// line above debug is written only if the endpoint's budget allows it.
func (r *Recorder) logLine(q Request, kind lineKind, level slog.Level, msg string, attrs []slog.Attr) {
	ctx := context.Background()
	if !r.log.Enabled(ctx, level) {
		return
	}
	if level > slog.LevelDebug && !r.lines.allow(q.Delivery.EndpointID, kind) {
		return
	}
	r.log.LogAttrs(ctx, level, msg, append(deliveryAttrs(q), attrs...)...)
}

// logDelivered writes the debug line of a delivered attempt.
func (r *Recorder) logDelivered(q Request) {
	ctx := context.Background()
	if !r.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	a := q.Outcome.Attempt
	r.log.LogAttrs(ctx, slog.LevelDebug, "delivered", append(deliveryAttrs(q),
		slog.Int("attempt", a.Number), slog.Int("status", a.StatusCode), slog.Duration("duration", a.Duration))...)
}

// deliveryAttrs are the keys that begin every delivery line: which
// delivery, of which subscription and event, to which endpoint.
func deliveryAttrs(q Request) []slog.Attr {
	c := q.Delivery
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("delivery_id", c.ID), slog.String("subscription_id", c.SubscriptionID),
		slog.String("event_id", c.EventID), slog.String("endpoint_id", c.EndpointID))
	if q.URL != "" {
		attrs = append(attrs, slog.String("url", redact.URL(q.URL)))
	}
	if c.DeadLetterOf != "" {
		attrs = append(attrs, slog.String("dead_letter_of", c.DeadLetterOf))
	}
	return attrs
}

// failedAttrs are a failed attempt's keys: its number, status code (when
// the endpoint answered), outcome and error, and what became of the
// delivery (its status and, when pending, the next attempt's time).
func failedAttrs(q Request) []slog.Attr {
	out := q.Outcome
	a := out.Attempt
	attrs := []slog.Attr{slog.Int("attempt", a.Number)}
	if a.StatusCode != 0 {
		attrs = append(attrs, slog.Int("status", a.StatusCode))
	}
	attrs = append(attrs, slog.String("outcome", a.Outcome))
	if a.Error != "" {
		attrs = append(attrs, slog.String("error", a.Error))
	}
	attrs = append(attrs, slog.String("delivery_status", string(out.Status)))
	if out.Status == delivery.StatusPending {
		attrs = append(attrs, slog.Time("next_attempt_at", out.NextAttemptAt.UTC()))
	}
	return attrs
}

// blockedAttrs are a refused attempt's keys: its number, the address (or
// the name, when the name was refused as a whole) and its class, and how
// to allow it.
func blockedAttrs(q Request) []slog.Attr {
	b := q.Refused
	attrs := []slog.Attr{slog.Int("attempt", q.Outcome.Attempt.Number), slog.String("address", b.Destination)}
	if b.Class != "" {
		attrs = append(attrs, slog.String("class", b.Class))
	}
	return append(attrs, slog.String("hint", b.Hint), slog.String("delivery_status", string(q.Outcome.Status)))
}

// endAttrs are the keys of a delivery's end: the reason, the attempts made,
// the last outcome, and the dead letter's delivery to the dead-letter URL
// when there is one.
func endAttrs(q Request) []slog.Attr {
	out := q.Outcome
	attrs := []slog.Attr{slog.String("reason", out.DeadLetterReason), slog.Int("attempts", out.Attempts)}
	if out.LastOutcome != "" {
		attrs = append(attrs, slog.String("last_outcome", out.LastOutcome))
	}
	if cp := out.DeadLetterCopy; cp != nil {
		attrs = append(attrs, slog.String("dead_letter_delivery_id", cp.ID))
	}
	return attrs
}
