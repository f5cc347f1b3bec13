package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/server"
)

// TestSchemaWorkLimit: with --max-schema-work 5,000 and a type whose
// schema applies one subschema to each value of data.arr (n integers
// cost n+2 schema tests), a request of two events of 3,000 integers each
// (6,004 tests) answers 413 naming the limit and the flag (a problem on
// /v1, Event Grid's error on its routes) and stores nothing, though both
// events are valid: the same ids published afterwards with light data
// are new and make their deliveries. One event of 3,000 passes.
func TestSchemaWorkLimit(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.MaxSchemaWork = 5_000 })
	if code, raw := b.do("POST", "/v1/event-types", []byte(`{"name": "nums", "schemas": {"1":
		{"type": "object", "properties": {"arr": {"type": "array", "items": {"type": "integer"}}}}}}`), nil); code != http.StatusCreated {
		t.Fatalf("create nums: %d %s", code, raw)
	}
	setSettings(b, map[string]any{"schema_validation": "enforce"})
	var sub struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "nums", "delivery_mode": "pull",
		"event_types": []string{"nums"}}, &sub); code != http.StatusCreated {
		t.Fatalf("create subscription: %d %s", code, raw)
	}
	arr := func(n int) string { return `{"arr": [` + strings.TrimSuffix(strings.Repeat("7,", n), ",") + `]}` }
	ce := func(id string, n int) string {
		return `{"specversion": "1.0", "id": "` + id + `", "source": "/nums", "type": "nums", "data": ` + arr(n) + `}`
	}
	eg := func(id string, n int) string {
		return `{"id": "` + id + `", "subject": "s", "eventType": "nums", "eventTime": "2026-01-05T09:00:00Z", "dataVersion": "1", "data": ` + arr(n) + `}`
	}
	for _, c := range []struct {
		name, path, ct string
		body           func(n int) string
		eventGrid      bool
	}{
		{"batch", "/v1/events", "application/cloudevents-batch+json", func(n int) string { return "[" + ce("b1", n) + "," + ce("b2", n) + "]" }, false},
		{"Event Grid topic", "/api/events", "application/json", func(n int) string { return "[" + eg("g1", n) + "," + eg("g2", n) + "]" }, true},
	} {
		before := len(deliveriesAs(b, adminKey, sub.ID))
		resp, raw := b.send("POST", c.path, map[string]string{"Content-Type": c.ct}, c.body(3_000))
		var p struct {
			Type, Detail string
			Error        struct{ Code, Message string }
		}
		_ = json.Unmarshal(raw, &p)
		msg, kind := p.Detail, p.Type
		if c.eventGrid {
			msg, kind = p.Error.Message, p.Error.Code
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge || (kind != "urn:herald:problem:payload-too-large" && kind != "RequestEntityTooLarge") ||
			!strings.Contains(msg, "5000 schema tests") || !strings.Contains(msg, "--max-schema-work") {
			t.Errorf("%s: %d %s; want 413 naming 5000 schema tests and --max-schema-work", c.name, resp.StatusCode, raw)
			continue
		}
		if resp, raw := b.send("POST", c.path, map[string]string{"Content-Type": c.ct}, c.body(10)); resp.StatusCode >= 300 {
			t.Fatalf("%s, light: %d %s", c.name, resp.StatusCode, raw)
		}
		if got := len(deliveriesAs(b, adminKey, sub.ID)) - before; got != 2 {
			t.Errorf("%s: the light publish of the refused events made %d deliveries; want 2 (they were stored, and are duplicates now)", c.name, got)
		}
	}
	if resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json"}, ce("one", 3_000)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("one event of 3,000 integers (3,002 schema tests): %d %s; want 202", resp.StatusCode, raw)
	}
}
