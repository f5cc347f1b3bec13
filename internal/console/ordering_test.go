package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestOrderingShown: a subscription's page shows its ordering (none by
// default, key when set) and a delivery's page its ordering key, which an
// unordered delivery's page leaves out.
func TestOrderingShown(t *testing.T) {
	n := setup(t)
	ordered := n.must(201, adminKey, "POST", "/v1/subscriptions",
		map[string]any{"name": "ordered", "url": "https://shop.example/ordered", "event_types": []string{"order.paid"}, "ordering": "key"})["id"].(string)
	plain := n.must(201, adminKey, "POST", "/v1/subscriptions",
		map[string]any{"name": "plain", "url": "https://shop.example/plain", "event_types": []string{"order.paid"}})["id"].(string)
	n.must(http.StatusAccepted, adminKey, "POST", "/v1/events",
		map[string]any{"specversion": "1.0", "id": "evt-1", "source": "/shop", "type": "order.paid", "partitionkey": "order-<7>"})
	cookie := n.signIn(adminKey)
	for sub, want := range map[string]string{ordered: `<dd id="ordering">key</dd>`, plain: `<dd id="ordering">none</dd>`} {
		if p := n.get("/console/subscriptions/"+sub, cookie); p.status != http.StatusOK || !strings.Contains(p.body, want) {
			t.Fatalf("subscription %s's page lacks %q: %d\n%s", sub, want, p.status, p.body)
		}
	}
	for sub, want := range map[string]string{ordered: `<code id="ordering-key">order-&lt;7&gt;</code>`, plain: ""} {
		got := n.must(http.StatusOK, adminKey, "GET", "/v1/deliveries?subscription_id="+sub, nil)["data"].([]any)
		if len(got) != 1 {
			t.Fatalf("subscription %s has %d deliveries; want 1", sub, len(got))
		}
		id := got[0].(map[string]any)["id"].(string)
		p := n.get("/console/deliveries/"+id, cookie)
		if p.status != http.StatusOK || (want != "" && !strings.Contains(p.body, want)) || (want == "" && strings.Contains(p.body, "ordering-key")) {
			t.Fatalf("delivery %s's page (want %q): %d\n%s", id, want, p.status, p.body)
		}
	}
}
