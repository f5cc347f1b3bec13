package server_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// asyncAPISchema compiles the official AsyncAPI 3.0.0 JSON Schema
// (testdata/asyncapi, with its source) from the file alone: every
// document it refers to is inside it, and no other is loaded.
func asyncAPISchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/asyncapi/3.0.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // nothing from the network or the disk
	const url = "http://asyncapi.com/definitions/3.0.0/asyncapi.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compiling the AsyncAPI 3.0.0 schema: %v", err)
	}
	return s
}

// TestAsyncAPIDocument: GET /v1/event-types/asyncapi.json is a valid
// AsyncAPI 3.0.0 document (against the official schema), with a channel
// per type (archived ones too) holding a message per schema version, its
// schema as the payload and the examples on the newest; the schema catches
// a broken document (so the check can fail).
func TestAsyncAPIDocument(t *testing.T) {
	b := setup(t)
	createInvoiceType(b)
	v2 := `{"schemas": {"2": ` + invoiceSchemaV2 + `}, "examples": [{"id": "in_2", "amount": 1, "currency": "EUR"}]}`
	if code, raw := b.do("PATCH", "/v1/event-types/invoice.paid", []byte(v2), nil); code != 200 {
		t.Fatalf("PATCH: %d %s", code, raw)
	}
	for _, body := range []string{`{"name": "order placed/v1", "group": "orders"}`, `{"name": "order.shipped", "schemas": {"1": true}}`} {
		if code, raw := b.do("POST", "/v1/event-types", []byte(body), nil); code != 201 {
			t.Fatalf("create %s: %d %s", body, code, raw)
		}
	}
	b.do("DELETE", "/v1/event-types/order.shipped", nil, nil)
	tn := newTenant(b, "shop")
	code, raw := b.doAs(tn.pubKey, "GET", "/v1/event-types/asyncapi.json", nil, nil)
	if code != 200 {
		t.Fatalf("GET asyncapi.json: %d %s", code, raw)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	s := asyncAPISchema(t)
	if err := s.Validate(doc); err != nil {
		t.Fatalf("the document is not valid AsyncAPI 3.0.0: %v\n%s", err, raw)
	}
	var d struct {
		Channels map[string]struct {
			Address  string
			Messages map[string]struct {
				Payload  struct{ SchemaFormat string }
				Examples []json.RawMessage
			}
		}
		Operations map[string]struct{ Action string }
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	inv := d.Channels["invoice.paid"]
	if len(d.Channels) != 3 || inv.Address != "invoice.paid" || len(inv.Messages) != 2 || len(inv.Messages["v2"].Examples) != 1 ||
		len(inv.Messages["v1"].Examples) != 0 || d.Channels["order_placed_v1"].Address != "order placed/v1" || d.Operations["invoice.paid"].Action != "receive" {
		t.Errorf("the document's channels %+v, operations %+v", d.Channels, d.Operations)
	}
	broken := bytes.Replace(raw, []byte(`"asyncapi":"3.0.0"`), []byte(`"asyncapi":"2.6.0"`), 1)
	doc, _ = jsonschema.UnmarshalJSON(bytes.NewReader(broken))
	if s.Validate(doc) == nil {
		t.Errorf("a document of AsyncAPI 2.6.0 passed the 3.0.0 schema")
	}
}
