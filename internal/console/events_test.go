package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// publishRaw publishes body, one CloudEvent as JSON, with key (as
// written: json.Marshal would escape its markup).
func publishRaw(n *node, key, body string) {
	n.t.Helper()
	req, _ := http.NewRequest("POST", n.url+"/v1/events", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/cloudevents+json")
	resp, err := n.web.Client().Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		n.t.Fatalf("publishing %s: %d", body, resp.StatusCode)
	}
}

// TestEventsPage: an event looked up by its ID shows its payload, indented
// and escaped, and its deliveries with links to them; a long payload is
// cut, saying so; another account's event, or an ID of none, shows
// nothing of it.
func TestEventsPage(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	subA := n.subscribe(ts.shopKey, "a", "https://shop.example/a")
	subB := n.subscribe(ts.shopKey, "b", "https://shop.example/b")
	publishRaw(n, ts.shopKey, `{"specversion": "1.0", "id": "evt-markup", "source": "/shop", "type": "order.paid", "subject": "orders/1",
		"data": {"note": "<script>alert(1)</script>"}}`)
	a := signInAs(n, ts.shopKey)
	p := n.get("/console/events?id=evt-markup", a.cookie)
	if p.status != http.StatusOK || strings.Contains(p.body, "<script>alert") {
		t.Fatalf("the event's page: %d, or its payload unescaped\n%s", p.status, p.body)
	}
	for _, s := range []string{`  &#34;note&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;`, "\n  &#34;data&#34;: {", "order.paid", "orders/1", "/shop"} {
		if !strings.Contains(p.body, s) {
			t.Fatalf("the event's page lacks %q:\n%s", s, p.body)
		}
	}
	ds := deliveriesListed(p)
	if len(ds) != 2 || !strings.Contains(p.body, `href="/console/subscriptions/`+subA+`"`) || !strings.Contains(p.body, `href="/console/subscriptions/`+subB+`"`) {
		t.Fatalf("the event's deliveries: %v\n%s", ds, p.body)
	}
	if strings.Contains(p.body, `id="payload-cut"`) {
		t.Fatal("a short payload is said to be cut")
	}
	if d := n.get("/console/deliveries/"+ds[0], a.cookie); !strings.Contains(d.body, `href="/console/events?id=evt-markup"`) {
		t.Fatalf("the delivery's page does not link to its event:\n%s", d.body)
	}

	n.must(http.StatusAccepted, ts.shopKey, "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "evt-long",
		"source": "/shop", "type": "order.paid", "data": map[string]any{"blob": strings.Repeat("x", 70<<10)}})
	p = n.get("/console/events?id=evt-long", a.cookie)
	if !strings.Contains(p.body, `id="payload-cut"`) || strings.Count(p.body, "x") > 66<<10 {
		t.Fatalf("a 70 KiB payload: not cut, or shown whole (%d bytes)", len(p.body))
	}

	rival := signInAs(n, ts.rivalKey)
	for _, path := range []string{"/console/events?id=evt-markup", "/console/events?id=evt-none"} {
		p := n.get(path, rival.cookie)
		if p.status != http.StatusOK || !strings.Contains(p.body, `id="no-event"`) || strings.Contains(p.body, "alert(1)") || len(deliveriesListed(p)) != 0 {
			t.Fatalf("%s with the rival's key: %d\n%s", path, p.status, p.body)
		}
	}
	if p := n.get("/console/events?id=evt-markup&account_id="+ts.shop, rival.cookie); p.status != http.StatusNotFound {
		t.Fatalf("the rival naming the shop's account: %d; want 404", p.status)
	}
	admin := signInAs(n, adminKey)
	if p := n.get("/console/events?id=evt-markup", admin.cookie); len(deliveriesListed(p)) != 2 {
		t.Fatalf("the admin's lookup in every account: %v", deliveriesListed(p))
	}
}

// TestEventsPageSchemaErrors: an event published under schema_validation
// warn that breaks its type's schema shows its schema errors (member,
// keyword, message, escaped) on its page; one that does not shows none.
func TestEventsPageSchemaErrors(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	n.subscribe(ts.shopKey, "a", "https://shop.example/a")
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "order.paid",
		"schemas": map[string]any{"1": map[string]any{"type": "object", "properties": map[string]any{"note": map[string]any{"enum": []string{"ok"}}}}}})
	n.must(http.StatusOK, adminKey, "PATCH", "/v1/accounts/"+ts.shop, map[string]any{"settings": map[string]any{"schema_validation": "warn"}})
	publishRaw(n, ts.shopKey, `{"specversion": "1.0", "id": "evt-bad", "source": "/shop", "type": "order.paid", "data": {"note": "<b>no</b>"}}`)
	publishRaw(n, ts.shopKey, `{"specversion": "1.0", "id": "evt-good", "source": "/shop", "type": "order.paid", "data": {"note": "ok"}}`)
	a := signInAs(n, ts.shopKey)
	p := n.get("/console/events?id=evt-bad", a.cookie)
	if p.status != http.StatusOK || strings.Contains(p.body, "<b>no</b>") {
		t.Fatalf("the bad event's page: %d, or its errors unescaped\n%s", p.status, p.body)
	}
	for _, s := range []string{`class="list schema-errors"`, "<td><code>data/note</code></td><td><code>enum</code></td>"} {
		if !strings.Contains(p.body, s) {
			t.Fatalf("the bad event's page lacks %q:\n%s", s, p.body)
		}
	}
	if p := n.get("/console/events?id=evt-good", a.cookie); strings.Contains(p.body, "schema-errors") {
		t.Fatalf("a valid event's page shows schema errors:\n%s", p.body)
	}
}
