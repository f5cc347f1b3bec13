package hold

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/subscription"
)

// TestOf: what holds a delivery and when it can go, for each circuit
// state, a rate limit before and after the due time, and a queued
// delivery of an active, a deactivated and a pull subscription.
func TestOf(t *testing.T) {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	due, probe := now.Add(time.Second), now.Add(10*time.Second)
	pending := delivery.Delivery{Status: delivery.StatusPending, NextAttemptAt: due}
	overdue := delivery.Delivery{Status: delivery.StatusPending, NextAttemptAt: now.Add(-time.Minute)}
	queued := delivery.Delivery{Status: delivery.StatusQueued}
	circuit := func(s health.State) endpoint.Endpoint {
		return endpoint.Endpoint{Health: health.Health{State: s, NextProbeAt: probe}}
	}
	limited := endpoint.Endpoint{RateLimit: &endpoint.RateLimit{PerSecond: 4, Burst: 1}}
	push := func(state string) subscription.Subscription { return subscription.Subscription{State: state} }
	for _, c := range []struct {
		name  string
		d     delivery.Delivery
		ep    endpoint.Endpoint
		known bool
		sub   subscription.Subscription
		want  Hold
	}{
		{"enabled", pending, circuit(health.Enabled), true, push(""), Hold{Next: due}},
		{"never written", pending, endpoint.Endpoint{}, true, push(""), Hold{Next: due}},
		{"endpoint unread", pending, circuit(health.Frozen), false, push(""), Hold{Next: due}},
		{"probation", pending, circuit(health.Probation), true, push(""), Hold{"endpoint_probation", probe}},
		{"disabled, due after the probe", delivery.Delivery{Status: delivery.StatusPending, NextAttemptAt: probe.Add(time.Hour)},
			circuit(health.Disabled), true, push(""), Hold{"endpoint_disabled", probe.Add(time.Hour)}},
		{"frozen", pending, circuit(health.Frozen), true, push(""), Hold{By: "endpoint_frozen"}},
		{"rate limit, not yet due", pending, limited, true, push(""), Hold{Next: due}},
		{"rate limit, due", overdue, limited, true, push(""), Hold{RateLimit, now.Add(250 * time.Millisecond)}},
		{"queued, active", queued, endpoint.Endpoint{}, false, push(subscription.StateActive), Hold{}},
		{"queued, deactivated", queued, endpoint.Endpoint{}, false, push(subscription.StateDeactivated), Hold{By: "subscription_deactivated"}},
		{"queued, pull", queued, endpoint.Endpoint{}, false, subscription.Subscription{DeliveryMode: subscription.ModePull, State: subscription.StateActive}, Hold{}},
		{"queued, subscription unread", queued, endpoint.Endpoint{}, false, subscription.Subscription{}, Hold{}},
		{"delivered", delivery.Delivery{Status: delivery.StatusDelivered}, circuit(health.Frozen), true, push(""), Hold{}},
	} {
		if got := Of(c.d, c.ep, c.known, c.sub, now); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
