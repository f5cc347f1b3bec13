package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// TestCatalogReachesAnotherNode: two nodes on one PostgreSQL database,
// the account enforcing schemas. A type added through node A is enforced
// on A at once and on B at B's next refresh (its recheck, 1 s on its fake
// clock); a version added on A then reaches B the same way.
func TestCatalogReachesAnotherNode(t *testing.T) {
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) { c.Store = url; c.AuthRecheck = time.Second }
	a := setup(t, onPG)
	bn := setup(t, onPG)
	setSettings(a, map[string]any{"schema_validation": "enforce"})
	bad := ce("n1", `{"id": "in_1", "amount": -5}`)
	post := func(b *bundle, body string) int {
		resp, _ := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json"}, body)
		return resp.StatusCode
	}
	if code := post(bn, bad); code != 202 {
		t.Fatalf("node B before the catalog has the type: %d, want 202", code)
	}
	createInvoiceType(a)
	if code := post(a, strings.Replace(bad, `"n1"`, `"n2"`, 1)); code != 400 {
		t.Fatalf("node A right after the create: %d, want 400", code)
	}
	eventually(t, "node B enforcing the new type", func() bool {
		bn.clk.Advance(time.Second)
		return post(bn, strings.Replace(bad, `"n1"`, `"n3"`, 1)) == 400
	})
	v2 := `{"schemas": {"2": ` + invoiceSchemaV2 + `}, "examples": []}`
	if code, raw := a.do("PATCH", "/v1/event-types/invoice.paid", []byte(v2), nil); code != 200 {
		t.Fatalf("PATCH on A: %d %s", code, raw)
	}
	noCurrency := ce("n4", `{"id": "in_1", "amount": 5}`) // valid in 1, not in 2
	eventually(t, "node B checking against version 2", func() bool {
		bn.clk.Advance(time.Second)
		return post(bn, noCurrency) == 400
	})
}
