package queue

import (
	"context"
	"log/slog"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/store"
)

// linesPerCall bounds the delivery lines one receive or settle call writes
// (a consumer may reject 1000 deliveries in one call): past it, one
// summary line counts the others. (docs/monitoring.md#the-log)
const linesPerCall = 10

// logRejected writes the line of each delivery a reject settled (res[i]
// nil): dead-lettered, or dropped when the subscription keeps no dead
// letters, with reason Rejected. The settle call knows of each only its
// delivery's id and subscription.
func (s *Service) logRejected(r store.SettleRequest, res []error) {
	if r.Action != store.Reject {
		return
	}
	status := delivery.StatusDropped
	if r.DeadLetter {
		status = delivery.StatusDeadLettered
	}
	var ends []delivery.Delivery
	for i, err := range res {
		if err == nil {
			ends = append(ends, delivery.Delivery{ID: store.LockTokenDelivery(r.Tokens[i]), SubscriptionID: r.SubscriptionID,
				Status: status, DeadLetterReason: delivery.ReasonRejected})
		}
	}
	s.logEnds(r.SubscriptionID, ends)
}

// logEnds writes the line of each of one call's ended deliveries (those a
// receive dead-lettered or dropped instead of handing them out, or a
// reject's), after the store committed them: recording.EndLine, the
// recorder's line, up to linesPerCall, then one line counting those left
// out, by status.
func (s *Service) logEnds(subscriptionID string, ends []delivery.Delivery) {
	ctx := context.Background()
	logged, left := 0, map[delivery.Status]int{}
	for _, d := range ends {
		l, ok := recording.EndLine(d, "", "")
		switch {
		case !ok || !s.log.Enabled(ctx, l.Level):
		case logged < linesPerCall:
			s.log.LogAttrs(ctx, l.Level, l.Msg, l.Attrs...)
			logged++
		default:
			left[d.Status]++
		}
	}
	more := left[delivery.StatusDeadLettered] + left[delivery.StatusDropped]
	if more == 0 {
		return
	}
	attrs := []slog.Attr{slog.String("subscription_id", subscriptionID)}
	for _, st := range []delivery.Status{delivery.StatusDeadLettered, delivery.StatusDropped} {
		if left[st] > 0 {
			attrs = append(attrs, slog.Int(string(st), left[st]))
		}
	}
	attrs = append(attrs, slog.Int("more", more), slog.Int("logged", logged))
	s.log.LogAttrs(ctx, slog.LevelWarn, "… and more delivery lines of this call, not logged", attrs...)
}
