package server_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
)

// listed is a delivery as the dead-letter tests read it.
type listed struct {
	ID               string     `json:"id"`
	Status           string     `json:"status"`
	EventID          string     `json:"event_id"`
	EndpointID       string     `json:"endpoint_id"`
	DeadLetterReason *string    `json:"dead_letter_reason"`
	NextAttemptAt    *time.Time `json:"next_attempt_at"`
}

// allDeliveries lists every delivery of the default account.
func allDeliveries(b *bundle) []listed {
	b.t.Helper()
	var out struct{ Data []listed }
	if code, raw := b.do("GET", "/v1/deliveries?limit=1000", nil, &out); code != 200 {
		b.t.Fatalf("list: %d %s", code, raw)
	}
	return out.Data
}

// TestDeadLetterURLReceivesDeadLetters: a delivery dead-lettered (a 400)
// is delivered to the subscription's dead_letter_url, signed, as a
// CloudEvent carrying the dead-letter attributes.
func TestDeadLetterURLReceivesDeadLetters(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(400))
	dl := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "dl", "url": rc.URL, "dead_letter_url": dl.URL,
		"headers": map[string]string{"X-Tenant": "t1"}, "secret_headers": map[string]string{"X-Api-Key": "endpoint-secret"}})
	b.publish("e1", "t")
	eventually(t, "dead-lettered", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status == "dead_lettered" {
				return true
			}
		}
		return false
	})
	eventually(t, "the dead letter delivered", func() bool { return dl.count() == 1 })
	r := dl.request(0)
	var ce map[string]any
	if err := json.Unmarshal(r.body, &ce); err != nil {
		t.Fatal(err)
	}
	if ce["id"] != "e1" || ce["deadletterreason"] != "NonRetriableStatus" || ce["lastdeliveryoutcome"] != "BadRequest" ||
		ce["deliveryattempts"] != float64(1) || ce["publishtime"] == nil || ce["lastdeliveryattempttime"] == nil {
		t.Fatalf("the dead letter: %s", r.body)
	}
	if r.header.Get("Webhook-Signature") == "" {
		t.Fatal("the dead letter is not signed")
	}
	if r.header.Get("X-Api-Key") != "" || r.header.Get("X-Tenant") != "" {
		t.Fatalf("the dead letter carried the endpoint's headers to the dead-letter URL: %v", r.header)
	}
	if rc.request(0).header.Get("X-Api-Key") != "endpoint-secret" {
		t.Fatal("the endpoint did not get its secret header")
	}
	b.settle()
	n := 0
	for _, d := range allDeliveries(b) {
		if d.EventID == "e1" && d.Status == "delivered" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("want the dead letter's own delivery delivered: %+v", allDeliveries(b))
	}
}

// TestDeadLetterURLGivesUpAfterFourHours: a dead-letter URL that never
// takes it is retried on Event Grid's schedule and the dead letter dropped
// once 4 hours have passed, never dead-lettered again.
func TestDeadLetterURLGivesUpAfterFourHours(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(404))
	dl := newReceiver(t, status(503))
	b.subscribe(map[string]any{"name": "dl", "url": rc.URL, "dead_letter_url": dl.URL, "delivery_schema": "eventgrid"})
	b.publish("e1", "t")
	eventually(t, "the dead letter's first attempt", func() bool { return dl.count() == 1 })
	var egs []map[string]any
	if err := json.Unmarshal(dl.request(0).body, &egs); err != nil || len(egs) != 1 ||
		egs[0]["deadLetterReason"] != "NonRetriableStatus" || egs[0]["lastDeliveryOutcome"] != "NotFound" {
		t.Fatalf("the Event Grid dead letter: %v %s", err, dl.request(0).body)
	}
	for i := 0; i < 20; i++ {
		b.settle()
		var next *time.Time
		done := false
		for _, d := range allDeliveries(b) {
			if d.EndpointID == "" || d.Status == "dead_lettered" {
				continue
			}
			if d.Status == "dropped" {
				if d.DeadLetterReason == nil || *d.DeadLetterReason != "DeadLetterUndeliverable" {
					t.Fatalf("dropped dead letter: %+v", d)
				}
				done = true
			}
			if d.Status == "pending" {
				next = d.NextAttemptAt
			}
		}
		if done {
			break
		}
		if next == nil {
			continue
		}
		b.clk.Set(*next)
	}
	b.settle()
	if got := b.clk.Now().Sub(start); got > 4*time.Hour {
		t.Fatalf("attempts went on until +%s, past 4 hours", got)
	}
	// 10s, 30s, 1m, 5m, 10m, 30m, 1h: seven retries fit in 4 hours, the next
	// (3 h later) would not.
	if dl.count() != 8 {
		t.Fatalf("the dead-letter URL got %d attempts, want 8", dl.count())
	}
}

// TestDeadLetterURLIsChecked: the dead-letter URL is a URL Herald may
// deliver to.
func TestDeadLetterURLIsChecked(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.Attempting.Destinations.AllowPrivate = false })
	for _, c := range []struct {
		url  string
		code int
	}{{"not a url", 400}, {"http://10.0.0.1/dl", 422}} {
		code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "x", "url": "https://example.com/", "dead_letter_url": c.url}, nil)
		var p struct{ Field string }
		_ = json.Unmarshal(raw, &p)
		if code != c.code || p.Field != "dead_letter_url" {
			t.Errorf("dead_letter_url %q: %d %s, want %d naming dead_letter_url", c.url, code, raw, c.code)
		}
	}
}
