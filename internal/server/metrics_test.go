package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMetricsExposeTheEngine(t *testing.T) {
	b := setup(t)
	ok := newReceiver(t, status(http.StatusOK))
	bad := newReceiver(t, status(http.StatusServiceUnavailable))
	b.subscribe(map[string]any{"name": "ok", "url": ok.URL})
	sub := b.subscribe(map[string]any{"name": "bad", "url": bad.URL})
	b.publish("e1", "t")
	b.publish("e1", "t") // a duplicate
	b.waitDelivery(sub, "the failed attempt", func(d delivery) bool { return d.Attempts == 1 })
	eventually(t, "the delivered one", func() bool { return ok.count() == 1 })
	b.settle()

	text := scrapeMetrics(b)
	for _, want := range []string{
		`herald_events_published_total{duplicate="false"} 1`,
		`herald_events_published_total{duplicate="true"} 1`,
		`herald_delivery_attempts_total{outcome="http_200"} 1`,
		`herald_delivery_attempts_total{outcome="http_503"} 1`,
		`herald_deliveries_finished_total{status="delivered"} 1`,
		`herald_deliveries_pending{lane="retry"} 1`,
		`herald_deliveries_pending{lane="fresh"} 0`,
		`herald_attempt_duration_seconds_count{result="response"} 2`,
		`herald_endpoints{state="enabled"} 2`,
		`herald_dispatch_in_flight 0`,
		`herald_dispatch_lanes 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// No series per endpoint: their number would grow with the endpoints.
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, `endpoint="`) {
			t.Errorf("/metrics has a series per endpoint: %s", line)
		}
	}
}

// scrapeMetrics reads /metrics.
func scrapeMetrics(b *bundle) string {
	b.t.Helper()
	resp, err := b.client.Get(b.api.URL + "/metrics")
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.t.Fatalf("/metrics: %d, %v", resp.StatusCode, err)
	}
	return string(raw)
}

// TestFinishedCountsPullSettlements: herald_deliveries_finished_total
// counts what a pull subscription's consumer finishes: an acknowledgement
// as delivered, a rejection as dead_lettered, once each (a token already
// settled counts nothing).
func TestFinishedCountsPullSettlements(t *testing.T) {
	b := setup(t)
	var sub struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "puller", "delivery_mode": "pull"}, &sub); code != 201 {
		t.Fatalf("create pull: %d %s", code, raw)
	}
	b.publish("a", "t")
	b.publish("b", "t")
	got := receive(b, sub.ID, map[string]any{"max_events": 2})
	if len(got) != 2 {
		t.Fatalf("received %d, want 2", len(got))
	}
	settleLocks(b, sub.ID, "acknowledge", []string{got[0].LockToken}, nil)
	settleLocks(b, sub.ID, "acknowledge", []string{got[0].LockToken}, nil) // settled already
	settleLocks(b, sub.ID, "reject", []string{got[1].LockToken}, nil)
	text := scrapeMetrics(b)
	for _, want := range []string{
		`herald_deliveries_finished_total{status="delivered"} 1`,
		`herald_deliveries_finished_total{status="dead_lettered"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, `herald_deliveries_finished_total{status="dropped"}`) {
		t.Errorf("/metrics counts a dropped delivery")
	}
}
