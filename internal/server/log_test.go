package server_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/server"
)

// jsonLog gives the server a JSON log at level, written to logs.
func jsonLog(logs *logBuffer, level slog.Level) func(*server.Config) {
	return func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: level}))
	}
}

// linesOf returns the log's lines with this message ("": all), decoded,
// in order.
func linesOf(t *testing.T, logs *logBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if msg == "" || m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// wantKeys fails the test unless line has each key with its value (JSON
// numbers as float64).
func wantKeys(t *testing.T, what string, line map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s: %s = %v (%T), want %v; line %v", what, k, line[k], line[k], v, line)
		}
	}
}

// TestDeliveryLogAfterDeadLetter: at info, a delivery that fails three
// times and is dead-lettered leaves exactly one warn line per failed
// attempt (its number, status, outcome and next attempt's time) and one
// dead-letter line with the reason; the same event delivered to another
// subscription leaves none, and API requests none.
func TestDeliveryLogAfterDeadLetter(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, jsonLog(logs, slog.LevelInfo))
	healthy := newReceiver(t, status(http.StatusOK))
	b.subscribe(map[string]any{"name": "healthy", "url": healthy.URL})
	rc := newReceiver(t, status(http.StatusInternalServerError))
	sub := b.subscribe(map[string]any{"name": "failing", "url": rc.URL,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"10s"}, "max_attempts": 3}})
	ep := b.endpointOf(sub)
	b.publish("evt-1", "t")
	d := stepRetries(b, sub, 2, func(k int) time.Duration { return time.Duration(k) * 10 * time.Second })
	if d.Status != "dead_lettered" {
		t.Fatalf("after 3 attempts: %+v", d)
	}
	b.settle()
	if healthy.count() != 1 {
		t.Fatalf("the healthy receiver got %d requests, want 1", healthy.count())
	}

	ids := map[string]any{"delivery_id": d.ID, "subscription_id": sub, "event_id": "evt-1", "endpoint_id": ep, "url": rc.URL}
	failed := linesOf(t, logs, "delivery attempt failed")
	if len(failed) != 3 {
		t.Fatalf("%d failed-attempt lines, want 3:\n%s", len(failed), logs)
	}
	for i, l := range failed {
		what := fmt.Sprintf("failed attempt %d", i+1)
		wantKeys(t, what, l, ids)
		wantKeys(t, what, l, map[string]any{"level": "WARN", "component": "recorder", "attempt": float64(i + 1),
			"status": 500.0, "outcome": "http_500"})
		next, _ := l["next_attempt_at"].(string)
		if i < 2 {
			wantKeys(t, what, l, map[string]any{"delivery_status": "pending"})
			if at, err := time.Parse(time.RFC3339Nano, next); err != nil || !at.Equal(start.Add(time.Duration(i+1)*10*time.Second)) {
				t.Errorf("%s: next_attempt_at %q, want +%ds", what, next, (i+1)*10)
			}
		} else {
			wantKeys(t, what, l, map[string]any{"delivery_status": "dead_lettered"})
			if next != "" {
				t.Errorf("%s: next_attempt_at %q after the last attempt", what, next)
			}
		}
	}
	dead := linesOf(t, logs, "delivery dead-lettered")
	if len(dead) != 1 {
		t.Fatalf("%d dead-letter lines, want 1:\n%s", len(dead), logs)
	}
	wantKeys(t, "dead letter", dead[0], ids)
	wantKeys(t, "dead letter", dead[0], map[string]any{"level": "WARN", "reason": "MaxDeliveryAttemptsExceeded",
		"attempts": 3.0, "last_outcome": "http_500"})
	if all := logs.String(); strings.Index(all, `"msg":"delivery dead-lettered"`) < strings.LastIndex(all, `"msg":"delivery attempt failed"`) {
		t.Errorf("the dead letter's line comes before its last attempt's:\n%s", logs)
	}
	for _, msg := range []string{"request", "delivered", "destination blocked", "delivery dropped"} {
		if n := len(linesOf(t, logs, msg)); n != 0 {
			t.Errorf("%d %q lines at info, want none:\n%s", n, msg, logs)
		}
	}
}

// TestDeliveryLogBlockedDestination: an attempt the destination guard
// refuses leaves one line naming the address refused and the flag that
// would allow it, then the dead letter's line with reason
// DestinationBlocked, and no failed-attempt line (nothing was sent).
func TestDeliveryLogBlockedDestination(t *testing.T) {
	logs := &logBuffer{}
	d := newDNS()
	b := setup(t, jsonLog(logs, slog.LevelInfo), func(c *server.Config) {
		c.Attempting.Destinations = destination.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
		c.Attempting.Resolver = d
	})
	// Allowed when it is created, refused when it is delivered to.
	d.set("rebind.example", "127.0.0.2")
	sub := b.subscribe(map[string]any{"name": "blocked", "url": "http://rebind.example:9/hook"})
	d.set("rebind.example", "10.0.0.1")
	b.publish("evt-1", "t")
	dl := b.waitDelivery(sub, "dead-lettered", func(d delivery) bool { return d.Status != "pending" })
	if dl.Status != "dead_lettered" || *dl.DeadLetterReason != "DestinationBlocked" {
		t.Fatalf("delivery %+v, want dead-lettered DestinationBlocked", dl)
	}
	b.settle()

	ids := map[string]any{"delivery_id": dl.ID, "subscription_id": sub, "event_id": "evt-1", "endpoint_id": b.endpointOf(sub)}
	blocked := linesOf(t, logs, "destination blocked")
	if len(blocked) != 1 {
		t.Fatalf("%d blocked lines, want 1:\n%s", len(blocked), logs)
	}
	wantKeys(t, "blocked", blocked[0], ids)
	wantKeys(t, "blocked", blocked[0], map[string]any{"level": "WARN", "attempt": 1.0, "address": "10.0.0.1",
		"class": "private", "url": "http://rebind.example:9/hook"})
	if hint, _ := blocked[0]["hint"].(string); !strings.Contains(hint, "--allow-private-destinations") {
		t.Errorf("hint %q, want the flag that allows the address", hint)
	}
	dead := linesOf(t, logs, "delivery dead-lettered")
	if len(dead) != 1 {
		t.Fatalf("%d dead-letter lines, want 1:\n%s", len(dead), logs)
	}
	wantKeys(t, "dead letter", dead[0], ids)
	wantKeys(t, "dead letter", dead[0], map[string]any{"reason": "DestinationBlocked", "last_outcome": "destination_blocked"})
	if n := len(linesOf(t, logs, "delivery attempt failed")); n != 0 {
		t.Errorf("%d failed-attempt lines for a refused destination, want none:\n%s", n, logs)
	}
}

// TestCircuitChangeOnceAndDebugLines: even at debug, a change of an
// endpoint's circuit is one "endpoint circuit changed" line (warn when it
// closes, info when it is enabled again) with its states and reason, and
// no other line above debug tells of it; at debug every API request and
// every delivered attempt is a line too.
func TestCircuitChangeOnceAndDebugLines(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, jsonLog(logs, slog.LevelDebug))
	healthy := newReceiver(t, status(http.StatusOK))
	okSub := b.subscribe(map[string]any{"name": "healthy", "url": healthy.URL})
	rc := newReceiver(t, status(http.StatusGone))
	sub := b.subscribe(map[string]any{"name": "gone", "url": rc.URL})
	ep := b.endpointOf(sub)
	b.publish("evt-1", "t")
	// The change is logged once merged into the store (the API may show
	// the lane's view of it before): enabled only after that.
	eventually(t, "the line of the change to disabled", func() bool {
		return len(linesOf(t, logs, "endpoint circuit changed")) == 1
	})
	if code, raw := b.do("POST", "/v1/endpoints/"+ep+"/enable", nil, nil); code != http.StatusOK {
		t.Fatalf("enable: %d %s", code, raw)
	}
	b.settle()

	changes := linesOf(t, logs, "endpoint circuit changed")
	if len(changes) != 2 {
		t.Fatalf("%d circuit lines, want 2 (disabled, enabled):\n%s", len(changes), logs)
	}
	// No other line above debug tells of it.
	for _, l := range linesOf(t, logs, "") {
		if msg := l["msg"].(string); strings.Contains(msg, "circuit") && msg != "endpoint circuit changed" && l["level"] != "DEBUG" {
			t.Errorf("the change logged again: %v", l)
		}
	}
	wantKeys(t, "disabled", changes[0], map[string]any{"level": "WARN", "endpoint_id": ep, "url": rc.URL, "from": "enabled", "to": "disabled"})
	wantKeys(t, "enabled", changes[1], map[string]any{"level": "INFO", "endpoint_id": ep, "from": "disabled", "to": "enabled"})
	for _, c := range changes {
		if r, _ := c["reason"].(string); r == "" {
			t.Errorf("circuit line without a reason: %v", c)
		}
	}
	var created bool
	for _, l := range linesOf(t, logs, "request") {
		created = created || l["level"] == "DEBUG" && l["method"] == "POST" && l["path"] == "/v1/subscriptions" && l["status"] == 201.0
	}
	if !created {
		t.Errorf("no debug line for POST /v1/subscriptions:\n%s", logs)
	}
	delivered := linesOf(t, logs, "delivered")
	if len(delivered) != 1 {
		t.Fatalf("%d delivered lines, want 1:\n%s", len(delivered), logs)
	}
	wantKeys(t, "delivered", delivered[0], map[string]any{"level": "DEBUG", "subscription_id": okSub, "event_id": "evt-1",
		"url": healthy.URL, "attempt": 1.0, "status": 200.0})
}

// TestDeliveryLogBound: an endpoint's delivery lines are bounded: of 25
// deliveries failing at once (50 lines: each attempt's and its dead
// letter's) 10 are written; when the minute ends on the clock one line
// says how many more there were, by kind; the next minute starts afresh.
func TestDeliveryLogBound(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, jsonLog(logs, slog.LevelInfo), func(c *server.Config) { c.Scheduling.Health = circuitOff() })
	rc := newReceiver(t, status(http.StatusInternalServerError))
	sub := b.subscribe(map[string]any{"name": "flood", "url": rc.URL,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"10s"}, "max_attempts": 1}})
	ep := b.endpointOf(sub)
	publishBatch(b, "evt", "t", 25)
	eventually(t, "25 dead letters", func() bool {
		n := 0
		for _, d := range b.deliveries(sub) {
			if d.Status == "dead_lettered" {
				n++
			}
		}
		return n == 25
	})
	b.settle()
	failed, dead := linesOf(t, logs, "delivery attempt failed"), linesOf(t, logs, "delivery dead-lettered")
	if len(failed)+len(dead) != 10 {
		t.Fatalf("%d failed-attempt and %d dead-letter lines, want 10 in all:\n%s", len(failed), len(dead), logs)
	}
	const summary = "… and more delivery lines for this endpoint, not logged"
	if n := len(linesOf(t, logs, summary)); n != 0 {
		t.Fatalf("a summary before the minute ended:\n%s", logs)
	}

	b.clk.Advance(time.Minute)
	eventually(t, "the summary", func() bool { return len(linesOf(t, logs, summary)) == 1 })
	wantKeys(t, "summary", linesOf(t, logs, summary)[0], map[string]any{"level": "WARN", "endpoint_id": ep, "more": 40.0,
		"failed_attempts": float64(25 - len(failed)), "dead_lettered": float64(25 - len(dead)), "logged": 10.0})

	b.publish("evt-next", "t")
	eventually(t, "the next delivery's lines", func() bool {
		return len(linesOf(t, logs, "delivery dead-lettered")) == len(dead)+1
	})
	if n := len(linesOf(t, logs, "delivery attempt failed")); n != len(failed)+1 {
		t.Errorf("%d failed-attempt lines after the minute, want %d", n, len(failed)+1)
	}
}
