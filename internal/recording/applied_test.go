package recording_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// deadLetters is a Notifier that keeps the dead-lettered deliveries it
// hears of (called on the recorder's goroutine only).
type deadLetters struct{ ids []string }

func (n *deadLetters) DeliveryDeadLettered(c store.Claimed, _ *catalog.Entry, _ store.Outcome) {
	n.ids = append(n.ids, c.ID)
}

func (n *deadLetters) SubscriptionDeactivated(*catalog.Entry, store.Claimed, store.Outcome) {}

// TestOnlyAppliedOutcomesReported: an outcome the store does not apply
// (its guard refused it: the lease went to another owner) is not reported:
// not counted in herald_deliveries_finished_total, not notified, and its
// result schedules nothing; the outcome written beside it in the same
// Record call is.
func TestOnlyAppliedOutcomesReported(t *testing.T) {
	for _, sk := range stores {
		t.Run(sk.name, func(t *testing.T) {
			ctx := context.Background()
			st := sk.open(t, nil)
			t.Cleanup(func() { _ = st.Close() })
			sub := subscription.Subscription{ID: "sub_1", Name: "s", URL: "https://a.example/hook", State: "active",
				CreatedAt: start, UpdatedAt: start}
			if err := st.CreateSubscription(ctx, sub); err != nil {
				t.Fatal(err)
			}
			sub.EndpointID = st.EndpointID("", sub.URL)
			entry, err := catalog.NewEntry(sub)
			if err != nil {
				t.Fatal(err)
			}
			lease := store.Lease{Owner: "node-a", Until: start.Add(time.Hour)}
			var evs []store.NewEvent
			for _, id := range []string{"dlv_taken", "dlv_mine"} {
				evs = append(evs, store.NewEvent{ID: id, Source: "/t", Type: "t", Payload: []byte(`{}`), PublishedAt: start,
					Deliveries: []store.NewDelivery{{ID: id, SubscriptionID: sub.ID, EndpointID: sub.EndpointID, Claimed: true}}})
			}
			if _, err := st.Publish(ctx, evs, store.PublishOptions{Lease: lease}); err != nil {
				t.Fatal(err)
			}
			// dlv_taken's lease goes to node-b.
			if err := st.Release(ctx, []string{"dlv_taken"}, lease.Owner); err != nil {
				t.Fatal(err)
			}
			if cs, err := st.ClaimDue(ctx, sub.EndpointID, start, 10, store.Lease{Owner: "node-b", Until: start.Add(time.Hour)}); err != nil || len(cs) != 1 {
				t.Fatalf("node-b's claim: %d, %v", len(cs), err)
			}

			reg := prometheus.NewRegistry()
			notes := &deadLetters{}
			rec := recording.New(recording.Config{Store: st, Catalog: catalog.New(st), Metrics: recording.NewMetrics(reg), Notifier: notes})
			if err := rec.Start(ctx); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"dlv_taken", "dlv_mine"} {
				c := &store.Claimed{Delivery: delivery.Delivery{ID: id, SubscriptionID: sub.ID, EndpointID: sub.EndpointID}}
				out := store.Outcome{
					Attempt: delivery.Attempt{DeliveryID: id, Number: 1, StartedAt: start, StatusCode: 400, Outcome: "http_400"},
					Status:  delivery.StatusDeadLettered, Attempts: 1, RoundAttempts: 1, FirstFailure: start,
					LastStatusCode: 400, LastOutcome: "http_400", DeadLetterReason: "NonRetriableStatus",
					LeaseOwner: lease.Owner,
				}
				rec.Add(recording.Request{Outcome: out, Delivery: c, Subscription: entry, URL: sub.URL})
			}
			rec.Stop()
			var results []recording.Result
			for batch := range rec.Results() {
				results = append(results, batch...)
			}
			if len(results) != 2 {
				t.Fatalf("%d results, want 2", len(results))
			}
			if d, err := st.GetDelivery(ctx, "dlv_taken"); err != nil || d.Status != delivery.StatusPending {
				t.Fatalf("dlv_taken after node-a's outcome: %+v, %v; want pending (node-b's)", d, err)
			}
			if got := finished(t, reg, delivery.StatusDeadLettered); got != 1 {
				t.Errorf("herald_deliveries_finished_total{status=dead_lettered} = %v, want 1 (dlv_mine's; dlv_taken's outcome did not apply)", got)
			}
			if strings.Join(notes.ids, ",") != "dlv_mine" {
				t.Errorf("dead letters notified: %v, want dlv_mine only", notes.ids)
			}
		})
	}
}

// finished reads herald_deliveries_finished_total for status from reg.
func finished(t *testing.T, reg *prometheus.Registry, status delivery.Status) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "herald_deliveries_finished_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" && l.GetValue() == string(status) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
