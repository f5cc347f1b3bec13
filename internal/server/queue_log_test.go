package server_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// TestQueueEndsLogged: at info, a pull subscription's delivery that a
// consumer rejects leaves one "delivery dead-lettered" line (reason
// Rejected), one that a receive ends because it was received too many
// times leaves its line with its reason, event and receives, an
// acknowledgement none; a reject of 15 deliveries in one call writes 10
// lines and one line counting the 5 others.
func TestQueueEndsLogged(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, jsonLog(logs, slog.LevelInfo))
	var sub struct{ ID string }
	body := map[string]any{"name": "puller", "delivery_mode": "pull",
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "max_attempts": 1}}
	if code, raw := b.do("POST", "/v1/subscriptions", body, &sub); code != 201 {
		t.Fatalf("create pull: %d %s", code, raw)
	}
	b.publish("e1", "t")
	b.publish("e2", "t")
	b.publish("e3", "t")
	got := receive(b, sub.ID, map[string]any{"max_events": 3})
	if len(got) != 3 {
		t.Fatalf("received %d, want 3", len(got))
	}
	if r := settleLocks(b, sub.ID, "reject", []string{got[0].LockToken}, nil); len(r.Succeeded) != 1 {
		t.Fatalf("reject: %+v", r)
	}
	if r := settleLocks(b, sub.ID, "acknowledge", []string{got[2].LockToken}, nil); len(r.Succeeded) != 1 {
		t.Fatalf("acknowledge: %+v", r)
	}
	dead := linesOf(t, logs, "delivery dead-lettered")
	if len(dead) != 1 {
		t.Fatalf("%d dead-letter lines after one reject, want 1:\n%s", len(dead), logs)
	}
	wantKeys(t, "the reject's line", dead[0], map[string]any{"level": "WARN", "component": "queue",
		"delivery_id": got[0].DeliveryID, "subscription_id": sub.ID, "reason": "Rejected"})

	// got[1]'s lock expires unsettled; received once (max_attempts 1), the
	// next receive dead-letters it instead of handing it out.
	b.clk.Advance(61 * time.Second)
	if again := receive(b, sub.ID, nil); len(again) != 0 {
		t.Fatalf("a delivery received max_attempts times was handed out again: %+v", again)
	}
	var ev struct{ ID string }
	if err := json.Unmarshal(got[1].Event, &ev); err != nil || ev.ID == "" {
		t.Fatalf("received event %s: %v", got[1].Event, err)
	}
	dead = linesOf(t, logs, "delivery dead-lettered")
	if len(dead) != 2 {
		t.Fatalf("%d dead-letter lines after the receive, want 2:\n%s", len(dead), logs)
	}
	wantKeys(t, "the receive's line", dead[1], map[string]any{"level": "WARN", "component": "queue",
		"delivery_id": got[1].DeliveryID, "subscription_id": sub.ID, "event_id": ev.ID,
		"reason": "MaxDeliveryAttemptsExceeded", "receives": float64(1)})
	if n := len(linesOf(t, logs, "delivered")) + len(linesOf(t, logs, "delivery dropped")); n != 0 {
		t.Fatalf("%d lines of an acknowledgement or a drop at info:\n%s", n, logs)
	}

	// One call rejecting 15: 10 lines and a count of the others.
	for i := range 15 {
		b.publish(fmt.Sprintf("bulk-%d", i), "t")
	}
	bulk := receive(b, sub.ID, map[string]any{"max_events": 15})
	if r := settleLocks(b, sub.ID, "reject", tokens(bulk), nil); len(r.Succeeded) != 15 {
		t.Fatalf("reject of 15: %+v", r)
	}
	if n := len(linesOf(t, logs, "delivery dead-lettered")); n != 2+10 {
		t.Fatalf("%d dead-letter lines after rejecting 15 in one call, want 2+10:\n%s", n, logs)
	}
	more := linesOf(t, logs, "… and more delivery lines of this call, not logged")
	if len(more) != 1 {
		t.Fatalf("%d summary lines, want 1:\n%s", len(more), logs)
	}
	wantKeys(t, "the summary", more[0], map[string]any{"level": "WARN", "subscription_id": sub.ID,
		"dead_lettered": float64(5), "more": float64(5), "logged": float64(10)})
}
