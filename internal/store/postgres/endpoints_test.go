package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/subscription"
)

// TestEndpointChangeNotified: an endpoint health write on one node (the
// engine's ModifyEndpoints, whose BumpEndpoints statement notifies) signals
// EndpointsChanged on another.
func TestEndpointChangeNotified(t *testing.T) {
	dbURL := freshSchema(t)
	a, b := openAt(t, dbURL, Options{}), openAt(t, dbURL, Options{})
	ctx := context.Background()
	wait := func(what string) {
		t.Helper()
		select {
		case <-b.EndpointsChanged():
		case <-time.After(10 * time.Second):
			t.Fatalf("no EndpointsChanged signal %s", what)
		}
	}
	wait("once listening") // every kind is signalled when the listener connects
	const u = "https://notified.example/hook"
	sub := subscription.Subscription{ID: ids.New("sub_", t0), Name: "n", URL: u, EndpointID: a.EndpointID("", u),
		EventTypes: []string{"t"}, State: "active", CreatedAt: t0, UpdatedAt: t0}
	if err := a.CreateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	wait("after CreateSubscription on another node")
	out, err := a.ModifyEndpoints(ctx, []string{sub.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].Health.ConsecutiveFailures = 3
		return nil
	})
	if err != nil || len(out) != 1 {
		t.Fatalf("ModifyEndpoints = %+v, %v", out, err)
	}
	wait("after ModifyEndpoints on another node")
}
