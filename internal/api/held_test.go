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
	call := func(method, path, body string, out any) {
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
	var sub struct {
		EndpointID string `json:"endpoint_id"`
	}
	call("POST", "/v1/subscriptions", `{"name": "n", "url": "https://example.com/hook"}`, &sub)
	call("POST", "/v1/events", `{"specversion": "1.0", "id": "e1", "source": "/s", "type": "t"}`, &struct{}{})
	probe := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	modifier := ts.srv.Store.(interface {
		ModifyEndpoints(ctx context.Context, ids []string, fn func([]*endpoint.Endpoint) error) ([]endpoint.Endpoint, error)
	})
	if _, err := modifier.ModifyEndpoints(context.Background(), []string{sub.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].Health.State, eps[0].Health.NextProbeAt = health.Disabled, probe
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := ts.srv.Live.Endpoint(sub.EndpointID); ok {
		t.Fatal("the scheduler holds the endpoint; the test needs one it does not")
	}
	var page struct {
		Data []map[string]any `json:"data"`
	}
	call("GET", "/v1/deliveries", "", &page)
	if len(page.Data) != 1 {
		t.Fatalf("%d deliveries", len(page.Data))
	}
	d := page.Data[0]
	if d["next_attempt_at"] != probe.Format(timeFormat) || d["held_by"] != "endpoint_disabled" {
		t.Fatalf("next_attempt_at %v held_by %v, want %s and endpoint_disabled", d["next_attempt_at"], d["held_by"], probe.Format(timeFormat))
	}
}
