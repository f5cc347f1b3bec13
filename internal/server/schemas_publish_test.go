package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/server"
)

// setSettings patches the default account's settings.
func setSettings(b *bundle, settings map[string]any) {
	b.t.Helper()
	if code, raw := b.do("PATCH", "/v1/accounts/acc_default", map[string]any{"settings": settings}, nil); code != 200 {
		b.t.Fatalf("PATCH settings %v: %d %s", settings, code, raw)
	}
}

// publishCase is one publish request in one format.
type publishCase struct {
	name, path, ct string
	header         map[string]string
	body           string
}

// ce is a structured CloudEvent of invoice.paid with this id and data.
func ce(id, data string, attrs ...string) string {
	return `{"specversion": "1.0", "id": "` + id + `", "source": "/billing", "type": "invoice.paid"` + strings.Join(attrs, "") + `, "data": ` + data + `}`
}

// eg is an Event Grid event of invoice.paid with this id and data.
func eg(id, data string) string {
	return `{"id": "` + id + `", "subject": "s", "eventType": "invoice.paid", "eventTime": "2026-01-05T09:00:00Z", "dataVersion": "1", "data": ` + data + `}`
}

// everyFormat is a publish of an event of data in every format Herald
// takes (the batch's second event; its first is valid), each of its own
// id (id and a suffix).
func everyFormat(id, data string) []publishCase {
	return []publishCase{
		{"structured", "/v1/events", "application/cloudevents+json", nil, ce(id+"-s", data)},
		{"batch", "/v1/events", "application/cloudevents-batch+json", nil, "[" + ce(id+"-b0", `{"id": "ok", "amount": 1}`) + "," + ce(id+"-b1", data) + "]"},
		{"json", "/v1/events", "application/json", nil, ce(id+"-j", data)},
		{"binary", "/v1/events", "application/json", map[string]string{"ce-specversion": "1.0", "ce-id": id + "-bin",
			"ce-source": "/billing", "ce-type": "invoice.paid"}, data},
		{"eventgrid on /v1", "/v1/events", "application/json", nil, "[" + eg(id+"-g", data) + "]"},
		{"eventgrid topic", "/api/events", "application/json", nil, "[" + eg(id+"-t", data) + "]"},
		{"namespace publish", "/topics/default:publish", "application/cloudevents+json", nil, ce(id+"-n", data)},
	}
}

// post sends c with the admin key.
func (c publishCase) post(b *bundle) (int, []byte) {
	b.t.Helper()
	h := map[string]string{"Content-Type": c.ct}
	for k, v := range c.header {
		h[k] = v
	}
	resp, raw := b.send("POST", c.path, h, c.body)
	return resp.StatusCode, raw
}

// refusedField returns the field a refusal names: the problem's field, or
// in Event Grid's form the message's start.
func refusedField(raw []byte) string {
	var p struct {
		Field string
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(raw, &p)
	if p.Error.Code != "" {
		f, _, _ := strings.Cut(p.Error.Message, ": ")
		return p.Error.Code + " " + f
	}
	return p.Field
}

// TestSchemaEnforced: with schema_validation enforce, an event that breaks
// its schema is refused in every publish format, naming the member by its
// JSON pointer in data and the keyword (Event Grid's routes in Event Grid's
// error form), and nothing of the request is stored (the same ids publish
// afterwards as new events); valid events pass in every format.
func TestSchemaEnforced(t *testing.T) {
	b := setup(t)
	createInvoiceType(b)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "billing", "url": rc.URL, "event_types": []string{"invoice.paid"}})
	setSettings(b, map[string]any{"schema_validation": "enforce"})
	bad := `{"id": "in_1", "amount": -5}`
	for _, c := range everyFormat("e", bad) {
		code, raw := c.post(b)
		field := refusedField(raw)
		want := "data/amount"
		if c.name == "batch" {
			want = "events[1].data/amount"
		}
		if strings.HasPrefix(c.path, "/api") || strings.HasPrefix(c.path, "/topics") {
			want = "BadRequest " + want
		}
		if code != 400 || field != want || !strings.Contains(string(raw), "minimum") {
			t.Errorf("%s, amount -5: %d %s; want 400 naming %s and the keyword minimum", c.name, code, raw, want)
		}
	}
	if n := len(b.deliveries(sub)); n != 0 {
		t.Fatalf("%d deliveries after the refused publishes; want none", n)
	}
	for _, c := range everyFormat("e", `{"id": "in_1", "amount": 5}`) {
		if code, raw := c.post(b); code >= 300 {
			t.Errorf("%s, a valid event: %d %s", c.name, code, raw)
		} else if c.path == "/v1/events" && strings.Contains(string(raw), `"duplicate":true`) {
			t.Errorf("%s: %s; a refused publish of these ids was stored", c.name, raw)
		}
	}
	if n := len(b.deliveries(sub)); n != 8 {
		t.Fatalf("%d deliveries after the valid publishes; want 8 (a batch holds two)", n)
	}
}

// TestSchemaVersions: the version an event is checked against is the one
// its dataschema names (ending in /v{N}, or a version's $id), else Event
// Grid's dataVersion, else the newest; a version the type does not have
// is refused naming the attribute.
func TestSchemaVersions(t *testing.T) {
	b := setup(t)
	createInvoiceType(b)
	v2 := `{"schemas": {"2": ` + invoiceSchemaV2 + `}, "examples": []}`
	if code, raw := b.do("PATCH", "/v1/event-types/invoice.paid", []byte(v2), nil); code != 200 {
		t.Fatalf("PATCH: %d %s", code, raw)
	}
	setSettings(b, map[string]any{"schema_validation": "enforce"})
	v1data := `{"id": "in_1", "amount": 1}` // no currency: valid in 1, not in 2
	for _, c := range []struct {
		name, ct, body string
		status         int
		field          string
	}{
		{"no version: the newest, 2", "application/cloudevents+json", ce("n1", v1data), 400, "data"},
		{"dataschema …/v1", "application/cloudevents+json", ce("n2", v1data, `, "dataschema": "https://example.com/invoice/v1"`), 202, ""},
		{"dataschema …/v2", "application/cloudevents+json", ce("n3", v1data, `, "dataschema": "https://example.com/invoice/v2"`), 400, "data"},
		{"dataschema = version 1's $id", "application/cloudevents+json", ce("n4", v1data, `, "dataschema": "https://schemas.example/invoice.paid/v1"`), 202, ""},
		{"dataschema …/v7", "application/cloudevents+json", ce("n5", v1data, `, "dataschema": "https://example.com/invoice/v7"`), 400, "dataschema"},
		{"dataversion 1 (Event Grid)", "application/json", "[" + eg("n6", v1data) + "]", 202, ""},
		{"dataversion 2 (Event Grid)", "application/json", "[" + strings.Replace(eg("n7", v1data), `"dataVersion": "1"`, `"dataVersion": "2.0"`, 1) + "]", 400, "data"},
		{"dataversion 9 (Event Grid)", "application/json", "[" + strings.Replace(eg("n8", v1data), `"dataVersion": "1"`, `"dataVersion": "9"`, 1) + "]", 400, "dataversion"},
	} {
		resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": c.ct}, c.body)
		if resp.StatusCode != c.status || c.status == 400 && refusedField(raw) != c.field {
			t.Errorf("%s: %d %s; want %d naming %q", c.name, resp.StatusCode, raw, c.status, c.field)
		}
	}
}

// TestSchemaWarn: with schema_validation warn, an event that breaks its
// schema is accepted and delivered; the answer gives its schema_errors
// and herald_schema_violations_total counts it by type. With off (the
// default), nothing is checked.
func TestSchemaWarn(t *testing.T) {
	b := setup(t)
	createInvoiceType(b)
	bad := ce("w1", `{"amount": -1}`)
	var out struct {
		Events []struct {
			SchemaErrors []struct{ Pointer, Keyword, Message string } `json:"schema_errors"`
		}
	}
	resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json"}, bad)
	if resp.StatusCode != 202 || strings.Contains(string(raw), "schema_errors") {
		t.Fatalf("a bad event with validation off: %d %s; want it accepted, unchecked", resp.StatusCode, raw)
	}
	setSettings(b, map[string]any{"schema_validation": "warn"})
	resp, raw = b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json"}, strings.Replace(bad, "w1", "w2", 1))
	if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode != 202 || len(out.Events) != 1 {
		t.Fatalf("a bad event with warn: %d %s", resp.StatusCode, raw)
	}
	errs := out.Events[0].SchemaErrors
	if len(errs) != 2 || errs[0].Keyword != "required" || errs[0].Pointer != "" || errs[1].Pointer != "/amount" || errs[1].Keyword != "minimum" {
		t.Errorf("schema_errors = %+v; want required at the data, minimum at /amount", errs)
	}
	if m := metricsText(b); !strings.Contains(m, `herald_schema_violations_total{type="invoice.paid"} 1`) {
		t.Errorf("/metrics has no herald_schema_violations_total of 1 for invoice.paid")
	}
}

// metricsText returns /metrics.
func metricsText(b *bundle) string {
	b.t.Helper()
	resp, err := b.client.Get(b.api.URL + "/metrics")
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}

// TestCatalogOnly: with catalog_only, a type not in the catalog is refused
// at publish (400 naming type, with the nearest catalog type) and in a
// subscription (422 naming event_types[i]); an archived type is still
// taken and delivered; Herald's own types pass.
func TestCatalogOnly(t *testing.T) {
	b := setup(t)
	createInvoiceType(b)
	if code, raw := b.do("POST", "/v1/event-types", map[string]any{"name": "invoice.voided"}, nil); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	if code, raw := b.do("DELETE", "/v1/event-types/invoice.voided", nil, nil); code != 200 {
		t.Fatalf("archive: %d %s", code, raw)
	}
	setSettings(b, map[string]any{"catalog_only": true})
	rc := newReceiver(t, status(200))
	code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "s", "url": rc.URL, "event_types": []string{"invoice.paid", "invoice.payed"}}, nil)
	wantField(t, "a subscription to invoice.payed", code, raw, 422, "event_types[1]", `nearest catalog type is "invoice.paid"`)
	sub := b.subscribe(map[string]any{"name": "s", "url": rc.URL, "event_types": []string{"invoice.paid", "invoice.voided", "herald.endpoint.disabled"}})
	resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json"},
		strings.Replace(ce("c1", `{}`), "invoice.paid", "Invoice.Paid", 1))
	wantField(t, "a publish of Invoice.Paid", resp.StatusCode, raw, 400, "type", `nearest catalog type is "invoice.paid"`)
	resp, raw = b.send("POST", "/api/events", map[string]string{"Content-Type": "application/json"},
		"["+strings.Replace(eg("c2", `{}`), "invoice.paid", "nope", 1)+"]")
	if resp.StatusCode != 400 || refusedField(raw) != "BadRequest type" {
		t.Errorf("an Event Grid publish of nope: %d %s; want 400 naming type", resp.StatusCode, raw)
	}
	b.publish("c3", "invoice.voided")
	eventually(t, "the archived type delivered", func() bool { return rc.count() == 1 })
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, map[string]any{"event_types": []string{"nope"}}, nil); code != 422 {
		t.Errorf("PATCH of a subscription to nope: %d %s; want 422", code, raw)
	}
}

// TestSchemaSettingsAuthOff: with --auth=off the schema check reads the
// account's settings through the account cache (as a keyed publish does),
// and each change of schema_validation takes effect at the next publish:
// enforce refuses, warn answers the errors, off checks nothing, enforce
// again refuses.
func TestSchemaSettingsAuthOff(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.Auth = server.AuthOff })
	createInvoiceType(b)
	for i, c := range []struct {
		mode   string
		status int
		errors bool
	}{{"enforce", 400, false}, {"warn", 202, true}, {"off", 202, false}, {"enforce", 400, false}} {
		setSettings(b, map[string]any{"schema_validation": c.mode})
		resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json"},
			ce(fmt.Sprint("ao", i), `{"id": "in_1", "amount": -5}`))
		if resp.StatusCode != c.status || strings.Contains(string(raw), "schema_errors") != c.errors {
			t.Errorf("publish %d, schema_validation %s: %d %s; want %d, schema_errors %v", i, c.mode, resp.StatusCode, raw, c.status, c.errors)
		}
	}
}
