package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
)

// TestHeldDeliveryReadsTheStoredCircuit: when the scheduler does not hold
// a delivery's endpoint (another node does, or it has not read it yet), the
// circuit that holds the delivery is read from the store.
func TestHeldDeliveryReadsTheStoredCircuit(t *testing.T) {
	ts := setupServer(t) // its delivery path is not started: it holds no endpoint
	sub := heldSetup(t, ts)
	probe := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	modifyEndpoint(t, ts, sub.EndpointID, func(e *endpoint.Endpoint) {
		e.Health.State, e.Health.NextProbeAt = health.Disabled, probe
	})
	if _, _, _, ok := ts.srv.Live.Endpoint(sub.EndpointID); ok {
		t.Fatal("the scheduler holds the endpoint; the test needs one it does not")
	}
	d := onlyDelivery(t, ts)
	if d["next_attempt_at"] != probe.Format(timeFormat) || d["held_by"] != "endpoint_disabled" {
		t.Fatalf("next_attempt_at %v held_by %v, want %s and endpoint_disabled", d["next_attempt_at"], d["held_by"], probe.Format(timeFormat))
	}
}

// TestHeldByRateLimitAndSubscription: a due delivery to an endpoint with a
// rate limit is held by it until the bucket's next token (one interval
// after now); once its subscription is deactivated, the queued delivery
// is held by the subscription, with no next attempt.
func TestHeldByRateLimitAndSubscription(t *testing.T) {
	ts := setupServer(t)
	sub := heldSetup(t, ts)
	modifyEndpoint(t, ts, sub.EndpointID, func(e *endpoint.Endpoint) {
		e.RateLimit = &endpoint.RateLimit{PerSecond: 0.5, Burst: 1}
	})
	before := time.Now()
	d := onlyDelivery(t, ts)
	after := time.Now()
	next, err := time.Parse(time.RFC3339, d["next_attempt_at"].(string))
	if err != nil || d["held_by"] != "endpoint_rate_limit" || next.Before(before.Add(2*time.Second-time.Millisecond)) || next.After(after.Add(2*time.Second)) {
		t.Fatalf("next_attempt_at %v held_by %v; want endpoint_rate_limit 2s after now", d["next_attempt_at"], d["held_by"])
	}
	heldCall(t, ts, "POST", "/v1/subscriptions/"+sub.ID+"/deactivate", "", &struct{}{})
	d = onlyDelivery(t, ts)
	if d["status"] != "queued" || d["held_by"] != "subscription_deactivated" || d["next_attempt_at"] != nil {
		t.Fatalf("after deactivate: status %v held_by %v next_attempt_at %v; want queued, subscription_deactivated, null",
			d["status"], d["held_by"], d["next_attempt_at"])
	}
}

// heldCall sends a request to ts and decodes its JSON answer into out,
// failing the test on a status of 300 or more.
func heldCall(t *testing.T, ts testServer, method, path, body string, out any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	ts.handler.ServeHTTP(rec, req)
	if rec.Code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatal(err)
	}
}

// heldSub is the subscription of heldSetup.
type heldSub struct {
	ID         string `json:"id"`
	EndpointID string `json:"endpoint_id"`
}

// heldSetup makes a push subscription and publishes one event to it.
func heldSetup(t *testing.T, ts testServer) heldSub {
	t.Helper()
	var sub heldSub
	heldCall(t, ts, "POST", "/v1/subscriptions", `{"name": "n", "url": "https://example.com/hook"}`, &sub)
	heldCall(t, ts, "POST", "/v1/events", `{"specversion": "1.0", "id": "e1", "source": "/s", "type": "t"}`, &struct{}{})
	return sub
}

// modifyEndpoint changes the stored endpoint id with change.
func modifyEndpoint(t *testing.T, ts testServer, id string, change func(*endpoint.Endpoint)) {
	t.Helper()
	modifier := ts.srv.Store.(interface {
		ModifyEndpoints(ctx context.Context, ids []string, fn func([]*endpoint.Endpoint) error) ([]endpoint.Endpoint, error)
	})
	if _, err := modifier.ModifyEndpoints(context.Background(), []string{id}, func(eps []*endpoint.Endpoint) error {
		change(eps[0])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// onlyDelivery lists the deliveries and returns the one there is.
func onlyDelivery(t *testing.T, ts testServer) map[string]any {
	t.Helper()
	var page struct {
		Data []map[string]any `json:"data"`
	}
	heldCall(t, ts, "GET", "/v1/deliveries", "", &page)
	if len(page.Data) != 1 {
		t.Fatalf("%d deliveries", len(page.Data))
	}
	return page.Data[0]
}
