package catalog

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/subscription"
)

// BenchmarkTransformed: a subscription's transform of a stored 1 KB
// invoice into a chat message (herald-bench's transformed scenario: see
// internal/bench/transformed.go), payload to payload: the event read for
// CEL, the evaluation, its JSON and the event rebuilt around it.
func BenchmarkTransformed(b *testing.B) {
	const reshape = `{"text": "Invoice " + data.id + " paid: " + string(data.amount) + " " + data.currency,` +
		` "customer": data.customer.email,` +
		` "lines": data.lines.map(l, {"sku": l.sku, "total": l.quantity * l.unit_amount}),` +
		` "metadata": data.metadata}`
	data := `{"bench":true,"id":"in_0123456789abcdef","status":"paid",` +
		`"customer":{"id":"cus_Bench42","email":"billing@example.com","name":"Bench Customer",` +
		`"address":{"line1":"1 Main St","city":"Lisbon","postal_code":"1100-001","country":"PT"}},` +
		`"currency":"EUR","amount":12900,"tax":2967,` +
		`"lines":[{"sku":"PLAN-PRO","description":"Pro plan, monthly","quantity":1,"unit_amount":9900},` +
		`{"sku":"SEATS-5","quantity":5,"unit_amount":600}],` +
		`"metadata":{"order":"ord_1","channel":"web"},"paid_at":"2026-01-05T09:00:00Z","pad":"`
	data += strings.Repeat("x", 1024-len(data)-2) + `"}`
	payload := []byte(`{"specversion":"1.0","id":"bench-000001","source":"/herald-bench","type":"bench.t00","benchsent":"1764460800000000000","data":` + data + `}`)
	e, err := NewEntry(subscription.Subscription{ID: "sub_1", State: subscription.StateActive,
		Delivery: subscription.DeliveryOptions{Transform: reshape}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, skip, err := e.Transformed(ctx, payload); err != nil || skip {
			b.Fatal(skip, err)
		}
	}
}
