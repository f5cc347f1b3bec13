package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
)

// statsRes is GET /v1/stats's answer.
type statsRes struct {
	Step   string `json:"step"`
	Series []struct {
		At           time.Time `json:"at"`
		Delivered    int64     `json:"delivered"`
		Failed       int64     `json:"failed"`
		DeadLettered int64     `json:"dead_lettered"`
		P50          float64   `json:"p50_ms"`
		P99          float64   `json:"p99_ms"`
	} `json:"series"`
}

// totals adds up a series: delivered, failed, dead-lettered.
func (s statsRes) totals() [3]int64 {
	var t [3]int64
	for _, p := range s.Series {
		t[0], t[1], t[2] = t[0]+p.Delivered, t[1]+p.Failed, t[2]+p.DeadLettered
	}
	return t
}

// getStats reads GET /v1/stats?query with key, failing unless it answers 200.
func getStats(b *bundle, key, query string) statsRes {
	b.t.Helper()
	var out statsRes
	if code, raw := b.doAs(key, "GET", "/v1/stats?"+query, nil, &out); code != http.StatusOK {
		b.t.Fatalf("GET /v1/stats?%s: %d %s", query, code, raw)
	}
	return out
}

// TestStats: three events delivered to one subscription and one
// dead-lettered (a 400) by another are counted by GET /v1/stats over each
// window (a point per step, zeros between), by subscription and by
// endpoint; a bad window, an unknown parameter and another account's
// subscription are refused; after 7 days the clean-up deletes the rollups.
func TestStats(t *testing.T) {
	b := setup(t)
	ok, bad := newReceiver(t, status(http.StatusOK)), newReceiver(t, status(http.StatusBadRequest))
	good := b.subscribe(map[string]any{"name": "good", "url": ok.URL, "event_types": []string{"order.paid"}})
	gone := b.subscribe(map[string]any{"name": "bad", "url": bad.URL, "event_types": []string{"order.lost"}})
	for _, id := range []string{"e1", "e2", "e3"} {
		b.publish(id, "order.paid")
	}
	b.publish("e4", "order.lost")
	eventually(t, "three delivered, one dead-lettered", func() bool {
		done := 0
		for _, d := range append(b.deliveries(good), b.deliveries(gone)...) {
			if d.Status == "delivered" || d.Status == "dead_lettered" {
				done++
			}
		}
		return done == 4
	})
	hour := getStats(b, adminKey, "")
	if hour.Step != "1m" || len(hour.Series) != 60 || hour.totals() != [3]int64{3, 1, 1} {
		t.Fatalf("the last hour: step %q, %d points, totals %v; want 1m, 60, [3 1 1]", hour.Step, len(hour.Series), hour.totals())
	}
	if last := hour.Series[59]; last.P50 <= 0 || last.P99 < last.P50 || !last.At.Equal(start.Truncate(time.Minute)) {
		t.Fatalf("the last minute: %+v; want it at %v with latencies", last, start.Truncate(time.Minute))
	}
	for _, w := range []struct {
		window, step string
		points       int
	}{{"24h", "5m", 288}, {"7d", "1h", 168}} {
		got := getStats(b, adminKey, "window="+w.window)
		if got.Step != w.step || len(got.Series) != w.points || got.totals() != [3]int64{3, 1, 1} {
			t.Errorf("window %s: step %q, %d points, totals %v; want %s, %d, [3 1 1]", w.window, got.Step, len(got.Series), got.totals(), w.step, w.points)
		}
	}
	if got := getStats(b, adminKey, "subscription_id="+good).totals(); got != [3]int64{3, 0, 0} {
		t.Errorf("good's totals %v; want [3 0 0]", got)
	}
	if got := getStats(b, adminKey, "endpoint_id="+b.endpointOf(gone)).totals(); got != [3]int64{0, 1, 1} {
		t.Errorf("bad's endpoint's totals %v; want [0 1 1]", got)
	}
	checkStatsRefusals(b, good)
	b.clk.Advance(7*24*time.Hour + 2*time.Minute) // past the retention and the clean-up's minute
	eventually(t, "the rollups deleted", func() bool {
		rows, err := b.srv.Store.DeliveryStats(t.Context(), store.StatsQuery{AccountID: account.DefaultID,
			From: start.Add(-time.Hour), Until: start.Add(time.Hour), Step: time.Hour})
		return err == nil && len(rows) == 0
	})
}

// checkStatsRefusals: a window not offered and an unknown parameter answer
// 400 naming them; another account's key gets 404 for sub (and its own,
// empty, series without it).
func checkStatsRefusals(b *bundle, sub string) {
	b.t.Helper()
	for query, field := range map[string]string{"window=2h": "window", "windows=1h": "windows", "subscription_id=nope": "subscription_id"} {
		code, raw := b.doAs(adminKey, "GET", "/v1/stats?"+query, nil, nil)
		var p struct{ Field string }
		_ = json.Unmarshal(raw, &p)
		if code != http.StatusBadRequest || p.Field != field {
			b.t.Errorf("?%s: %d %s; want 400 naming %s", query, code, raw, field)
		}
	}
	x := newTenant(b, "x")
	if code, raw := b.doAs(x.accountKey, "GET", "/v1/stats?subscription_id="+sub, nil, nil); code != http.StatusNotFound || !strings.Contains(string(raw), "subscription") {
		b.t.Errorf("another account's subscription: %d %s; want 404", code, raw)
	}
	if got := getStats(b, x.accountKey, "window=7d").totals(); got != [3]int64{} {
		b.t.Errorf("another account's totals %v; want none", got)
	}
}
