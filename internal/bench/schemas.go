package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// budgetSchemas is schema-enforced's line: its deliveries/s at least this
// share of the same load unchecked (issue 38, docs/event-types.md).
const budgetSchemas = 0.80

// invoiceSchema is the schema-enforced scenario's schema of every bench
// type: a realistic invoice of about 2 KB of JSON Schema 2020-12 (nested
// objects, an array of lines, formats, patterns, bounds and enums), which
// schemaData's events satisfy.
const invoiceSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://bench.herald.example/schemas/invoice/v1",
  "title": "Invoice paid",
  "type": "object",
  "required": ["bench", "id", "customer", "currency", "amount", "lines", "pad"],
  "additionalProperties": false,
  "properties": {
    "bench": {"const": true},
    "id": {"type": "string", "pattern": "^in_[a-z0-9]{8,32}$"},
    "status": {"enum": ["draft", "open", "paid", "void", "uncollectible"]},
    "customer": {
      "type": "object",
      "required": ["id", "email"],
      "additionalProperties": false,
      "properties": {
        "id": {"type": "string", "pattern": "^cus_[A-Za-z0-9]+$"},
        "email": {"type": "string", "format": "email", "maxLength": 254},
        "name": {"type": "string", "maxLength": 200},
        "address": {
          "type": "object",
          "properties": {
            "line1": {"type": "string"}, "city": {"type": "string"},
            "postal_code": {"type": "string", "maxLength": 16},
            "country": {"type": "string", "pattern": "^[A-Z]{2}$"}
          }
        }
      }
    },
    "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "CHF", "JPY", "BRL"]},
    "amount": {"type": "integer", "minimum": 0, "maximum": 100000000},
    "tax": {"type": "integer", "minimum": 0},
    "lines": {
      "type": "array",
      "minItems": 1,
      "maxItems": 100,
      "items": {
        "type": "object",
        "required": ["sku", "quantity", "unit_amount"],
        "additionalProperties": false,
        "properties": {
          "sku": {"type": "string", "pattern": "^[A-Z0-9-]{3,32}$"},
          "description": {"type": "string", "maxLength": 500},
          "quantity": {"type": "integer", "minimum": 1, "maximum": 10000},
          "unit_amount": {"type": "integer", "minimum": 0}
        }
      }
    },
    "metadata": {"type": "object", "maxProperties": 50, "additionalProperties": {"type": "string", "maxLength": 500}},
    "paid_at": {"type": "string", "format": "date-time"},
    "pad": {"type": "string"}
  }
}`

// schemaData returns an invoice valid against invoiceSchema of about size
// bytes (its "pad" makes up the rest; at least the invoice's own bytes).
func schemaData(size int) []byte {
	const head = `{"bench":true,"id":"in_0123456789abcdef","status":"paid",` +
		`"customer":{"id":"cus_Bench42","email":"billing@example.com","name":"Bench Customer",` +
		`"address":{"line1":"1 Main St","city":"Lisbon","postal_code":"1100-001","country":"PT"}},` +
		`"currency":"EUR","amount":12900,"tax":2967,` +
		`"lines":[{"sku":"PLAN-PRO","description":"Pro plan, monthly","quantity":1,"unit_amount":9900},` +
		`{"sku":"SEATS-5","quantity":5,"unit_amount":600}],` +
		`"metadata":{"order":"ord_1","channel":"web"},"paid_at":"2026-01-05T09:00:00Z","pad":"`
	return padded(head, size)
}

// schemaEnforcedScenario: the steady-batch load (--events, --batch a
// request, from --publishers, spread over --endpoints subscriptions) of
// invoices (schemaData, --payload bytes), run twice, each on a fresh
// server: first with every bench type in the event-type catalog with
// invoiceSchema and the account's schema_validation enforce (every event
// validated at publish), then with neither. The line: the first's
// deliveries/s at least 0.8× the second's.
func schemaEnforcedScenario(ctx context.Context, e *env, res *Result) error {
	phases, err := freshRuns(ctx, e, []string{"schema-enforced", "unchecked"}, func(i int, name string) (*PhaseResult, error) {
		return schemaPhase(ctx, e, res, name, i == 0)
	})
	if err != nil {
		return err
	}
	res.ratioLine("deliveries/s, schema-enforced vs. unchecked",
		"deliveries/s with every event validated against a 2 KB schema (issue 38)", phases[0], phases[1], budgetSchemas)
	res.figure("schema bytes", float64(len(invoiceSchema)), "B")
	return nil
}

// schemaPhase subscribes --endpoints receivers (and, when enforced, puts
// their types in the catalog and turns enforcement on), then publishes the
// load and waits until every event is received and nothing is pending.
func schemaPhase(ctx context.Context, e *env, res *Result, name string, enforced bool) (*PhaseResult, error) {
	s := e.cfg.Sizes
	if enforced {
		if err := e.api.enforceSchemas(ctx, s.Endpoints); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	rs, err := typedReceivers(ctx, e, name, s.Endpoints)
	if err != nil {
		return nil, err
	}
	l := &load{prefix: prefix(e.name, name), events: s.Events, batch: s.Batch, publishers: s.Publishers, data: schemaData(s.PayloadBytes)}
	ph, _, err := e.spreadPhase(ctx, res, name, l, rs)
	return ph, err
}

// enforceSchemas puts typeName(0..n-1) in the catalog with invoiceSchema
// and sets the default account's schema_validation to enforce.
func (c *client) enforceSchemas(ctx context.Context, n int) error {
	for k := range n {
		body, err := json.Marshal(map[string]any{"name": typeName(k), "group": "bench",
			"schemas": map[string]json.RawMessage{"1": json.RawMessage(invoiceSchema)}})
		if err != nil {
			return err
		}
		if err := c.expect(ctx, http.MethodPost, "/v1/event-types", body, http.StatusCreated); err != nil {
			return err
		}
	}
	return c.expect(ctx, http.MethodPatch, "/v1/accounts/acc_default", []byte(`{"settings":{"schema_validation":"enforce"}}`), http.StatusOK)
}

// expect sends a JSON body and fails unless the answer is want.
func (c *client) expect(ctx context.Context, method, path string, body []byte, want int) error {
	code, resp, err := c.do(ctx, method, path, "application/json", body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if code != want {
		return fmt.Errorf("%s %s: %d %s", method, path, code, strings.TrimSpace(string(resp)))
	}
	return nil
}
