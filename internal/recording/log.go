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
//   - a delivery dead-lettered or dropped: its EndLine, "delivery
//     dead-lettered" or "delivery dropped", with its reason;
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
	d := q.Delivery.Delivery
	d.Status, d.DeadLetterReason, d.Attempts, d.LastOutcome = out.Status, out.DeadLetterReason, out.Attempts, out.LastOutcome
	copyID := ""
	if cp := out.DeadLetterCopy; cp != nil {
		copyID = cp.ID
	}
	if end, ok := EndLine(d, q.URL, copyID); ok {
		kind := lineDropped
		if d.Status == delivery.StatusDeadLettered {
			kind = lineDeadLettered
		}
		r.logBounded(d.EndpointID, kind, end)
	}
}

// Line is one log line: its level, message and keys.
type Line struct {
	Level slog.Level
	Msg   string
	Attrs []slog.Attr
}

// EndLine is the line of a delivery's end, as the recorder and the
// consumers' calls (internal/queue) write it: "delivery dead-lettered"
// (warn) or "delivery dropped" (warn; debug when its subscription was
// deleted), with the delivery's keys (DeliveryAttrs, url the one it was
// sent to or "") then reason, attempts (when any were made), receives
// (when consumers received it), last_outcome (when known) and
// dead_letter_delivery_id (copyID, the dead letter's delivery to the
// dead-letter URL, when there is one). d is the delivery as it ended; ok
// is false when d.Status is not an end without delivery.
func EndLine(d delivery.Delivery, url, copyID string) (line Line, ok bool) {
	switch d.Status {
	case delivery.StatusDeadLettered:
		line = Line{Level: slog.LevelWarn, Msg: "delivery dead-lettered"}
	case delivery.StatusDropped:
		line = Line{Level: slog.LevelWarn, Msg: "delivery dropped"}
		if d.DeadLetterReason == delivery.ReasonSubscriptionDeleted {
			line.Level = slog.LevelDebug // what deleting it asked for
		}
	default:
		return Line{}, false
	}
	line.Attrs = append(DeliveryAttrs(d, url), slog.String("reason", d.DeadLetterReason))
	if d.Attempts > 0 {
		line.Attrs = append(line.Attrs, slog.Int("attempts", d.Attempts))
	}
	if d.Receives > 0 {
		line.Attrs = append(line.Attrs, slog.Int("receives", d.Receives))
	}
	if d.LastOutcome != "" {
		line.Attrs = append(line.Attrs, slog.String("last_outcome", d.LastOutcome))
	}
	if copyID != "" {
		line.Attrs = append(line.Attrs, slog.String("dead_letter_delivery_id", copyID))
	}
	return line, true
}

// logBounded writes a delivery line; one above debug only if the
// endpoint's budget allows it.
func (r *Recorder) logBounded(endpointID string, kind lineKind, l Line) {
	ctx := context.Background()
	if !r.log.Enabled(ctx, l.Level) {
		return
	}
	if l.Level > slog.LevelDebug && !r.lines.allow(endpointID, kind) {
		return
	}
	r.log.LogAttrs(ctx, l.Level, l.Msg, l.Attrs...)
}

// logLine writes one delivery line: the delivery's keys, then attrs
// (logBounded).
func (r *Recorder) logLine(q Request, kind lineKind, level slog.Level, msg string, attrs []slog.Attr) {
	r.logBounded(q.Delivery.EndpointID, kind, Line{Level: level, Msg: msg, Attrs: append(DeliveryAttrs(q.Delivery.Delivery, q.URL), attrs...)})
}

// logDelivered writes the debug line of a delivered attempt.
func (r *Recorder) logDelivered(q Request) {
	ctx := context.Background()
	if !r.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	a := q.Outcome.Attempt
	r.log.LogAttrs(ctx, slog.LevelDebug, "delivered", append(DeliveryAttrs(q.Delivery.Delivery, q.URL),
		slog.Int("attempt", a.Number), slog.Int("status", a.StatusCode), slog.Duration("duration", a.Duration))...)
}

// DeliveryAttrs are the keys that begin every delivery line: which
// delivery, of which subscription and event, to which endpoint and URL
// (the URL's password hidden), and the dead-lettered delivery of a dead
// letter's delivery. A key whose value is not known (empty) is left out.
func DeliveryAttrs(d delivery.Delivery, url string) []slog.Attr {
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("delivery_id", d.ID), slog.String("subscription_id", d.SubscriptionID))
	for _, a := range []slog.Attr{slog.String("event_id", d.EventID), slog.String("endpoint_id", d.EndpointID),
		slog.String("url", redact.URL(url)), slog.String("dead_letter_of", d.DeadLetterOf)} {
		if a.Value.String() != "" {
			attrs = append(attrs, a)
		}
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
