package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// violation is a schema_errors entry as the tests read it.
type violation struct{ Pointer, Keyword, Message string }

// withErrors is a listed delivery of an event, with the event's
// schema_errors (nil when the answer has none).
type withErrors struct {
	EventID      string      `json:"event_id"`
	SchemaErrors []violation `json:"schema_errors"`
}

// listErrors returns the items of a list (GET path) by event id.
func listErrors(b *bundle, path string) map[string][]violation {
	b.t.Helper()
	var page struct{ Data []withErrors }
	if code, raw := b.do("GET", path, nil, &page); code != http.StatusOK {
		b.t.Fatalf("GET %s: %d %s", path, code, raw)
	}
	out := map[string][]violation{}
	for _, d := range page.Data {
		out[d.EventID] = d.SchemaErrors
	}
	return out
}

// TestSchemaErrorsStored: with schema_validation warn, an event that breaks
// its schema keeps its schema_errors, published in any format (the batch's
// valid first event keeps none), and they read back with the event (its
// queued delivery; its dead letter); with enforce, the bad event is
// refused and the valid one stored without any; with off (the default)
// nothing is checked, and nothing kept.
func TestSchemaErrorsStored(t *testing.T) {
	b := setup(t)
	createInvoiceType(b)
	var pull struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "puller", "delivery_mode": "pull",
		"event_types": []string{"invoice.paid"}}, &pull); code != http.StatusCreated {
		t.Fatalf("create pull: %d %s", code, raw)
	}
	bad, good := `{"id": "in_1", "amount": -5}`, `{"id": "in_1", "amount": 5}`
	publish := func(mode, id, data string, want int) {
		t.Helper()
		setSettings(b, map[string]any{"schema_validation": mode})
		for _, c := range everyFormat(id, data) {
			if code, raw := c.post(b); code/100 != want/100 {
				t.Fatalf("%s, %s in %s: %d %s; want %d", mode, data, c.name, code, raw, want)
			}
		}
	}
	publish("warn", "w", bad, http.StatusAccepted)
	publish("enforce", "x", bad, http.StatusBadRequest)
	publish("enforce", "y", good, http.StatusAccepted)
	publish("off", "z", bad, http.StatusAccepted)
	got := listErrors(b, "/v1/deliveries?status=queued&limit=100&subscription_id="+pull.ID)
	if len(got) != 24 {
		t.Fatalf("%d queued deliveries; want 24 (8 events of each mode but enforce's refused)", len(got))
	}
	for id, errs := range got {
		warned := id[0] == 'w' && id != "w-b0"
		switch {
		case warned && (len(errs) != 1 || errs[0].Pointer != "/amount" || errs[0].Keyword != "minimum" || errs[0].Message == ""):
			t.Errorf("event %s (warn, amount -5): schema_errors %+v; want minimum at /amount", id, errs)
		case !warned && errs != nil:
			t.Errorf("event %s: schema_errors %+v; want none", id, errs)
		}
	}

	// A dead letter shows them too.
	rc := newReceiver(t, status(http.StatusNotFound)) // dead-letters at once
	sub := b.subscribe(map[string]any{"name": "billing", "url": rc.URL, "event_types": []string{"invoice.paid"}})
	setSettings(b, map[string]any{"schema_validation": "warn"})
	resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json"}, ce("d1", `{"amount": "5"}`))
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(raw), "schema_errors") {
		t.Fatalf("a bad event with warn: %d %s", resp.StatusCode, raw)
	}
	var dead map[string][]violation
	eventually(t, "the event dead-lettered", func() bool {
		dead = listErrors(b, "/v1/dead-letters?subscription_id="+sub)
		return len(dead) == 1
	})
	if errs := dead["d1"]; len(errs) != 2 || errs[0].Keyword != "required" || errs[1].Pointer != "/amount" || errs[1].Keyword != "type" {
		t.Errorf("the dead letter's schema_errors: %+v; want required at the data, type at /amount", errs)
	}
}
