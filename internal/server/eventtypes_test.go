package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// invoiceSchema is version 1 of invoice.paid in these tests: an object
// with a string id and a non-negative amount.
const invoiceSchema = `{"$id": "https://schemas.example/invoice.paid/v1", "type": "object", "required": ["id", "amount"],
	"properties": {"id": {"type": "string"}, "amount": {"type": "number", "minimum": 0}}}`

// invoiceSchemaV2 is version 2: a currency besides.
const invoiceSchemaV2 = `{"type": "object", "required": ["id", "amount", "currency"],
	"properties": {"id": {"type": "string"}, "amount": {"type": "number", "minimum": 0}, "currency": {"type": "string", "minLength": 3}}}`

// catalogProblem is a problem document.
type catalogProblem struct {
	Type, Title, Detail, Field string
	Status                     int
}

// wantField checks an answer: the status and the field named (and, when
// not "", a part of the detail).
func wantField(t *testing.T, what string, code int, raw []byte, status int, field, detail string) {
	t.Helper()
	var p catalogProblem
	_ = json.Unmarshal(raw, &p)
	if code != status || p.Field != field || !strings.Contains(p.Detail, detail) {
		t.Errorf("%s: %d %s; want %d naming %q with %q", what, code, raw, status, field, detail)
	}
}

// eventTypeRes is the event type resource as tests read it.
type eventTypeRes struct {
	Name, Description, Group string
	Schemas                  map[string]json.RawMessage
	Examples                 []json.RawMessage
	Deprecated, Archived     bool
}

// createInvoiceType creates invoice.paid at version 1 with an example.
func createInvoiceType(b *bundle) {
	b.t.Helper()
	body := `{"name": "invoice.paid", "description": "An invoice was paid.", "group": "billing",
		"schemas": {"1": ` + invoiceSchema + `}, "examples": [{"id": "in_1", "amount": 12.5}]}`
	if code, raw := b.do("POST", "/v1/event-types", []byte(body), nil); code != http.StatusCreated {
		b.t.Fatalf("create invoice.paid: %d %s", code, raw)
	}
}

// TestEventTypeCatalog: the catalog's routes: a type created, read by any
// key, listed by page, group and archived; a version added by PATCH, a
// published one refused (409 naming it) unless sent unchanged; bad
// schemas, examples and names refused naming their field, changing
// nothing; DELETE archives.
func TestEventTypeCatalog(t *testing.T) {
	b := setup(t)
	createInvoiceType(b)
	for _, n := range []string{"order.placed", "order.shipped"} {
		if code, raw := b.do("POST", "/v1/event-types", map[string]any{"name": n, "group": "orders"}, nil); code != 201 {
			t.Fatalf("create %s: %d %s", n, code, raw)
		}
	}
	tn := newTenant(b, "shop")
	var got eventTypeRes
	if code, raw := b.doAs(tn.pubKey, "GET", "/v1/event-types/invoice.paid", nil, &got); code != 200 ||
		got.Group != "billing" || len(got.Schemas) != 1 || len(got.Examples) != 1 {
		t.Fatalf("GET invoice.paid with a publish key: %d %s", code, raw)
	}
	code, raw := b.doAs(tn.accountKey, "POST", "/v1/event-types", map[string]any{"name": "x"}, nil)
	wantField(t, "a create with an account key", code, raw, 403, "", "admin")

	v2 := `{"schemas": {"2": ` + invoiceSchemaV2 + `}, "examples": [{"id": "in_2", "amount": 1, "currency": "EUR"}]}`
	if code, raw := b.do("PATCH", "/v1/event-types/invoice.paid", []byte(v2), &got); code != 200 || len(got.Schemas) != 2 {
		t.Fatalf("PATCH adding version 2: %d %s", code, raw)
	}
	code, raw = b.do("PATCH", "/v1/event-types/invoice.paid", []byte(`{"schemas": {"1": {"type": "object"}}}`), nil)
	wantField(t, "PATCH changing version 1", code, raw, 409, "schemas.1", "never changes")
	if code, raw := b.do("PATCH", "/v1/event-types/invoice.paid", []byte(`{"schemas": {"1": `+invoiceSchema+`}, "deprecated": true}`), &got); code != 200 || !got.Deprecated {
		t.Fatalf("PATCH sending version 1 unchanged: %d %s", code, raw)
	}
	for _, c := range []struct {
		method, path, body string
		status             int
		field, detail      string
	}{
		{"PATCH", "/v1/event-types/invoice.paid", `{"schemas": {"3": {"type": "objekt"}}}`, 400, "schemas.3", "does not compile"},
		{"PATCH", "/v1/event-types/invoice.paid", `{"schemas": {"3": {"$ref": "https://example.com/s.json"}}}`, 400, "schemas.3", "only to itself"},
		{"PATCH", "/v1/event-types/invoice.paid", `{"schemas": {"3": {"description": "` + strings.Repeat("x", 64<<10) + `"}}}`, 400, "schemas.3", "at most 65536 bytes"},
		{"PATCH", "/v1/event-types/invoice.paid", `{"schemas": {"v3": {}}}`, 400, "schemas.v3", "whole number"},
		{"PATCH", "/v1/event-types/invoice.paid", `{"examples": [{"id": "in_3", "amount": -1, "currency": "EUR"}]}`, 400, "examples[0]/amount", "minimum"},
		{"PATCH", "/v1/event-types/invoice.paid", `{"schemas": {"3": {"required": ["tax"]}}}`, 400, "examples[0]", "kept example"},
		{"PATCH", "/v1/event-types/nope", `{}`, 404, "name", "no event type"},
		{"POST", "/v1/event-types", `{"name": "HERALD.x"}`, 400, "name", "reserved"},
		{"POST", "/v1/event-types", `{"name": "asyncapi.json"}`, 400, "name", "reserved"},
		{"POST", "/v1/event-types", `{"description": "no name"}`, 400, "name", "required"},
		{"POST", "/v1/event-types", `{"name": "invoice.paid"}`, 409, "name", "exists"},
		{"POST", "/v1/event-types", `{"name": "a", "schemas": {"1": {}, "1": {}}}`, 400, "schemas.1", ""},
	} {
		code, raw := b.do(c.method, c.path, []byte(c.body), nil)
		wantField(t, c.method+" "+c.path+" "+c.body[:min(len(c.body), 60)], code, raw, c.status, c.field, c.detail)
	}
	if b.do("GET", "/v1/event-types/invoice.paid", nil, &got); len(got.Schemas) != 2 || len(got.Examples) != 1 {
		t.Fatalf("invoice.paid after the refused changes: %+v", got)
	}
	if code, raw := b.do("DELETE", "/v1/event-types/order.placed", nil, &got); code != 200 || !got.Archived {
		t.Fatalf("DELETE order.placed: %d %s", code, raw)
	}
	for query, want := range map[string]string{
		"limit=1":                            "invoice.paid order.shipped",
		"group=orders":                       "order.shipped",
		"group=orders&include_archived=true": "order.placed order.shipped",
		"include_archived=true&limit=2":      "invoice.paid order.placed order.shipped",
		"group=nothing":                      "",
	} {
		if names := listTypeNames(b, tn.pubKey, query); names != want {
			t.Errorf("GET /v1/event-types?%s: %q; want %q", query, names, want)
		}
	}
	code, raw = b.do("GET", "/v1/event-types?include_archived=yes", nil, nil)
	wantField(t, "include_archived=yes", code, raw, 400, "include_archived", "")
}

// listTypeNames lists the catalog with query, every page, and returns the
// names in order, space-separated.
func listTypeNames(b *bundle, key, query string) string {
	b.t.Helper()
	var names []string
	cursor := ""
	for {
		var page struct {
			Data       []eventTypeRes
			NextCursor string `json:"next_cursor"`
		}
		path := "/v1/event-types?" + query
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if code, raw := b.doAs(key, "GET", path, nil, &page); code != 200 {
			b.t.Fatalf("GET %s: %d %s", path, code, raw)
		}
		for _, et := range page.Data {
			names = append(names, et.Name)
		}
		if cursor = page.NextCursor; cursor == "" {
			return strings.Join(names, " ")
		}
	}
}
