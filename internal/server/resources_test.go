package server_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
)

// timestampRE is the one format of the API's timestamps.
var timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// timestamps collects every member of v (decoded JSON) named *_at or
// *_time, by name, and reports members whose value is neither null nor in
// the API's format.
func timestamps(t *testing.T, where string, v any, seen map[string]int) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "event" {
				continue // the event as published: its time is the publisher's
			}
			if strings.HasSuffix(k, "_at") || strings.HasSuffix(k, "_time") {
				if e == nil {
					continue
				}
				if s, ok := e.(string); !ok || !timestampRE.MatchString(s) {
					t.Errorf("%s: %s is %v, want a time like 2026-01-05T09:00:00.000Z", where, k, e)
				}
				seen[k]++
				continue
			}
			timestamps(t, where, e, seen)
		}
	case []any:
		for _, e := range x {
			timestamps(t, where, e, seen)
		}
	}
}

func TestEveryTimestampHasMilliseconds(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 0
	cfg.FreezeConsecutive = 2
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	// Times at whole seconds, and with one, two and three significant
	// fractional digits: RFC3339Nano would write them with 0 to 3 digits.
	b.clk.Set(start.Add(100 * time.Millisecond))
	ok := b.subscribe(map[string]any{"name": "ok", "url": newReceiver(t, status(200)).URL})
	dead := b.subscribe(map[string]any{"name": "dead", "url": newReceiver(t, status(404)).URL}) // eventgrid: dead-lettered at once
	gone := b.subscribe(map[string]any{"name": "gone", "url": newReceiver(t, status(410)).URL,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "1h"}}) // disabled
	frozen := b.subscribe(map[string]any{"name": "frozen", "url": newReceiver(t, status(500)).URL,
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1.02s"}, "ttl": "1h"}})
	b.clk.Set(start.Add(120 * time.Millisecond))
	b.publish("e1", "t")
	b.waitDelivery(frozen, "first attempt", func(d delivery) bool { return d.Attempts == 1 })
	b.clk.Set(start.Add(1140*time.Millisecond + 999*time.Microsecond))
	b.waitDelivery(frozen, "frozen", func(d delivery) bool { return d.Attempts == 2 })
	b.waitDelivery(gone, "disabled", func(d delivery) bool { return d.Attempts == 1 })
	b.waitDelivery(dead, "dead-lettered", func(d delivery) bool { return d.Status == "dead_lettered" })
	b.waitDelivery(ok, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	b.settle()
	if e := b.endpoint(b.endpointOf(frozen)); e.State != "frozen" {
		t.Fatalf("endpoint %+v, want frozen", e)
	}

	var paths []string
	for _, sub := range []string{ok, dead, gone, frozen} {
		paths = append(paths, "/v1/subscriptions/"+sub, "/v1/endpoints/"+b.endpointOf(sub))
		for _, d := range b.deliveries(sub) {
			paths = append(paths, "/v1/deliveries/"+d.ID, "/v1/deliveries/"+d.ID+"/attempts")
		}
	}
	paths = append(paths, "/v1/subscriptions", "/v1/deliveries", "/v1/dead-letters", "/v1/endpoints")
	seen := map[string]int{}
	for _, p := range paths {
		var v any
		if code, raw := b.do("GET", p, nil, &v); code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, code, raw)
		}
		timestamps(t, "GET "+p, v, seen)
	}
	// The answers of changes carry resources too.
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/endpoints/" + b.endpointOf(frozen) + "/enable"},
		{"POST", "/v1/deliveries/" + b.only(dead).ID + "/redeliver"},
		{"PATCH", "/v1/subscriptions/" + ok},
		{"POST", "/v1/subscriptions"},
	} {
		var v any
		body := map[string]any{}
		if c.path == "/v1/subscriptions" {
			body = map[string]any{"name": "late", "url": "https://example.com/late"}
		}
		if code, raw := b.do(c.method, c.path, body, &v); code >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, raw)
		}
		timestamps(t, c.method+" "+c.path, v, seen)
	}
	for _, k := range []string{
		"created_at", "updated_at", "next_attempt_at", "last_attempt_at", "delivered_at", "started_at",
		"publish_time", "last_delivery_attempt_time", "last_success_at", "last_failure_at",
		"disabled_at", "frozen_at", "next_probe_at",
	} {
		if seen[k] == 0 {
			t.Errorf("no response had a %s to check", k)
		}
	}
	var sub struct {
		CreatedAt string `json:"created_at"`
	}
	b.do("GET", "/v1/subscriptions/"+ok, nil, &sub)
	if sub.CreatedAt != "2026-01-05T09:00:00.100Z" {
		t.Errorf("created_at %q, want 2026-01-05T09:00:00.100Z", sub.CreatedAt)
	}
}

func TestRedriveIDs(t *testing.T) {
	cases := []struct {
		name string
		ids  any // absent when "absent"
		want int
	}{
		{"absent", "absent", 2},
		{"null", nil, 2},
		{"empty", []string{}, 0},
		{"one", []string{"first"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t)
			rc, failing := switchable(t, http.StatusNotFound, true)
			sub, ds := deadLetters(b, rc, 2)
			failing.Store(false)
			first := ds[0].ID
			before := b.state()

			in := map[string]any{"subscription_id": sub}
			switch ids := c.ids.(type) {
			case string:
			case []string:
				if len(ids) == 1 {
					ids = []string{first}
				}
				in["ids"] = ids
			default:
				in["ids"] = ids
			}
			var out struct{ Redriven int }
			if code, raw := b.do("POST", "/v1/dead-letters/redrive", in, &out); code != http.StatusAccepted || out.Redriven != c.want {
				t.Fatalf("redrive %v: %d %s, want 202 and %d redriven", in, code, raw, c.want)
			}
			eventually(t, "the redriven delivered", func() bool {
				n := 0
				for _, d := range b.deliveries(sub) {
					if d.Status == "delivered" {
						n++
					}
				}
				return n == c.want
			})
			if c.want == 0 {
				if after := b.state(); after != before {
					t.Fatalf("redriving none changed something:\nbefore %s\nafter  %s", before, after)
				}
			}
			for _, d := range b.deliveries(sub) {
				if want := c.want == 2 || (c.want == 1 && d.ID == first); (d.Status == "delivered") != want {
					t.Errorf("delivery %s is %s after redriving %v", d.ID, d.Status, in)
				}
			}
			in["subscription_id"] = "sub_missing"
			p := problemOf(t, b, "POST", "/v1/dead-letters/redrive", in, http.StatusNotFound)
			if p["field"] != "subscription_id" {
				t.Errorf("unknown subscription: %v", p)
			}
		})
	}
}

// TestHeldDeliveriesShowWhenTheyGo: a pending delivery whose endpoint's
// circuit holds it shows when it can actually go, and why.
func TestHeldDeliveriesShowWhenTheyGo(t *testing.T) {
	never := time.Duration(-1)
	cases := []struct {
		name     string
		tune     func(*health.Config)
		code     int           // the endpoint's answer
		attempts int           // attempts made, one a second from start
		then     time.Duration // the clock then, after the delivery's own due time
		next     time.Duration // next_attempt_at from start; never: null
		heldBy   string
	}{
		{"enabled", func(c *health.Config) {}, 500, 1, 900 * time.Millisecond, time.Second, ""},
		{"probation", func(c *health.Config) { c.ProbationAfter = 2 }, 500, 2, 5 * time.Second, 11 * time.Second, "endpoint_probation"},
		{"disabled", func(c *health.Config) {}, 410, 1, 5 * time.Minute, 10 * time.Minute, "endpoint_disabled"},
		{"frozen", func(c *health.Config) { c.FreezeConsecutive = 1 }, 500, 1, 5 * time.Minute, never, "endpoint_frozen"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := health.DefaultConfig()
			cfg.ProbationAfter = 0
			c.tune(&cfg)
			b := setup(t, func(sc *server.Config) { sc.Scheduling.Health = cfg })
			rc := newReceiver(t, status(c.code))
			sub := b.subscribe(map[string]any{"name": "h", "url": rc.URL,
				"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "ttl": "1h"}})
			b.publish("e1", "t")
			for i := 1; i <= c.attempts; i++ {
				b.clk.Set(start.Add(time.Duration(i-1) * time.Second))
				b.waitDelivery(sub, "attempt", func(d delivery) bool { return d.Attempts == i })
			}
			b.clk.Set(start.Add(c.then))
			b.settle()
			if rc.count() != c.attempts {
				t.Fatalf("%d attempts by %s, want %d", rc.count(), c.then, c.attempts)
			}

			var one, listed map[string]any
			id := b.only(sub).ID
			if code, raw := b.do("GET", "/v1/deliveries/"+id, nil, &one); code != http.StatusOK {
				t.Fatalf("GET delivery: %d %s", code, raw)
			}
			var page struct{ Data []map[string]any }
			b.do("GET", "/v1/deliveries?subscription_id="+sub, nil, &page)
			listed = page.Data[0]
			for what, d := range map[string]map[string]any{"GET": one, "list": listed} {
				want := any(nil)
				if c.next != never {
					want = start.Add(c.next).Format("2006-01-02T15:04:05.000Z")
				}
				if d["status"] != "pending" || d["next_attempt_at"] != want {
					t.Errorf("%s: %s next_attempt_at %v, want %v", what, d["status"], d["next_attempt_at"], want)
				}
				if held, _ := d["held_by"].(string); held != c.heldBy {
					t.Errorf("%s: held_by %v, want %q", what, d["held_by"], c.heldBy)
				}
				if _, ok := d["held_by"]; !ok {
					t.Errorf("%s: no held_by member", what)
				}
			}
			if c.heldBy == "endpoint_probation" || c.heldBy == "endpoint_disabled" {
				if e := b.endpoint(b.endpointOf(sub)); !e.NextProbeAt.Equal(start.Add(c.next)) {
					t.Errorf("the endpoint's next_probe_at %v is not the delivery's next_attempt_at", e.NextProbeAt)
				}
			}
			if rc.count() != c.attempts {
				t.Fatalf("reading the delivery sent it")
			}
		})
	}
}
