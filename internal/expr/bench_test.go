package expr

import (
	"context"
	"strings"
	"testing"
)

// benchEvent is a stored event of about 1 KB.
var benchEvent = `{"specversion":"1.0","id":"evt_0123456789","source":"/billing/eu-west-1","type":"invoice.paid",
"subject":"invoices/inv_42","time":"2024-05-01T10:00:00.123Z","datacontenttype":"application/json","tenant":"acme",
"data":{"invoice":"inv_42","amount":1234.5,"currency":"EUR","status":"paid",
"customer":{"id":"cus_1","name":"Ada Lovelace","email":"ada@example.com","country":"GB"},
"lines":[{"sku":"plan-pro","qty":1,"price":1000},{"sku":"seat","qty":3,"price":78.1},{"sku":"addon-sso","qty":1,"price":0}],
"notes":"` + strings.Repeat("n", 500) + `"}}`

// benchTransform reshapes benchEvent into a chat message.
const benchTransform = `{
  "text": "Invoice " + data.invoice + " paid by " + data.customer.name,
  "amount": data.amount, "currency": data.currency,
  "skus": data.lines.map(l, l.sku),
  "tenant": event.tenant, "at": event.time
}`

// BenchmarkTransform: one transform of a 1 KB event, its input parsed
// (once per event, however many subscriptions transform it) and not.
func BenchmarkTransform(b *testing.B) {
	tr, err := CompileTransform(benchTransform)
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(benchEvent)
	if len(payload) < 1000 || len(payload) > 1050 {
		b.Fatalf("the event is %d bytes; want about 1 KB", len(payload))
	}
	ctx := context.Background()
	b.Run("apply", func(b *testing.B) {
		in := input(b, benchEvent)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := tr.Apply(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse+apply", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in, err := NewInput(payload)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := tr.Apply(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNewInput: reading a 1 KB event for expressions (indexing it:
// nothing is decoded before an expression reads it).
func BenchmarkNewInput(b *testing.B) {
	payload := []byte(benchEvent)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewInput(payload); err != nil {
			b.Fatal(err)
		}
	}
}
