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
	if err != nil {
		b.t.Fatal(err)
	}
	return string(raw)
}
