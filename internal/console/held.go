package console

import (
	"context"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/hold"
	"github.com/herald-events/herald/internal/store"
)

// deliveryRow is a delivery as a list or its page shows it: with its
// subscription's name, and what holds it and when it can really go
// (hold.Of, as the API's held_by and next_attempt_at) at Now.
type deliveryRow struct {
	delivery.Delivery
	// SubscriptionName is its subscription's name; "" when it was
	// deleted or could not be read.
	SubscriptionName string
	Hold             hold.Hold
	// Now is when the page was made: a pending delivery whose next
	// attempt is not after it is due now (never a past time).
	Now time.Time
}

// HeldBy is what holds the delivery, in words ("endpoint probation"); ""
// when nothing does.
func (d deliveryRow) HeldBy() string { return strings.ReplaceAll(d.Hold.By, "_", " ") }

// HeldUntil is when a held delivery without a time goes, in words:
// "when enabled" (a frozen endpoint), "when reactivated" (a
// subscription); "" when it has a time or nothing holds it.
func (d deliveryRow) HeldUntil() string {
	switch {
	case d.Hold.By == "" || !d.Hold.Next.IsZero():
		return ""
	case strings.HasPrefix(d.Hold.By, hold.SubscriptionPrefix):
		return "when the subscription is active"
	}
	return "when the endpoint is enabled"
}

// DueNow says a pending delivery can go now: its next attempt is not
// after Now.
func (d deliveryRow) DueNow() bool {
	return d.Status == delivery.StatusPending && !d.Hold.Next.IsZero() && !d.Hold.Next.After(d.Now)
}

// holdReader returns the hold reader of one page (hold.Reader): live is
// the scheduler's view (nil: the store's health).
func holdReader(ctx context.Context, st Store, live endpoint.Live, now time.Time) *hold.Reader {
	return hold.NewReader(ctx, live, now, st.GetEndpoint, st.GetSubscription)
}

// rowsOf returns the rows of ds at now, reading each endpoint and
// subscription once.
func (b base) rowsOf(ctx context.Context, ds []delivery.Delivery) []deliveryRow {
	now := b.now()
	hr := holdReader(ctx, b.store, b.live, now)
	rows := make([]deliveryRow, 0, len(ds))
	for _, d := range ds {
		rows = append(rows, rowOf(hr, d, now))
	}
	return rows
}

// rowOf returns d's row, read through hr.
func rowOf(hr *hold.Reader, d delivery.Delivery, now time.Time) deliveryRow {
	row := deliveryRow{Delivery: d, Hold: hr.Of(d), Now: now}
	if s, ok := hr.Subscription(d.SubscriptionID); ok {
		row.SubscriptionName = s.Name
	}
	return row
}

// deadLetterRows returns the rows of dead letters dls (their deliveries),
// with their subscriptions' names.
func (b base) deadLetterRows(ctx context.Context, dls []store.DeadLetter) []deliveryRow {
	ds := make([]delivery.Delivery, 0, len(dls))
	for _, dl := range dls {
		ds = append(ds, dl.Delivery)
	}
	return b.rowsOf(ctx, ds)
}
